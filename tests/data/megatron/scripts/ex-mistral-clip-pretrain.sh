#!/bin/bash
# mmsim test input, never run: the launch of NVIDIA/Megatron-LM commit
# d98e8a64dd, examples/multimodal/pretrain_mistral_clip.sh, restated in
# mmsim's words (LLaVA-style pretraining: CLIP ViT-L/14 at 336 px, patch 14,
# no class token, into Mistral-7B: 32 layers, width 4096, 32 heads in 8
# groups, SwiGLU 14336; image sequence 576, decoder sequence 1024, 4096
# positions; batch 1 x 256; bf16; tp 4, pp 1; the LM and the ViT frozen).
# WORKSPACE and LOAD_NAME come from the environment: the script stops
# without them.
export NCCL_IB_SL=1
export CUDA_DEVICE_MAX_CONNECTIONS=1
MODEL_NAME="mcore-llava-mistral-7b-instruct-clip336-pretraining"
if [[ -z $WORKSPACE ]]; then
    echo "set WORKSPACE (where checkpoints go)"
    exit 1
fi
SOURCE=`pwd`
OUTPUT="${WORKSPACE}/output/${MODEL_NAME}"
FINETUNE_DIR=${OUTPUT}/checkpoints
LOGS_DIR="${OUTPUT}/logs"
TENSORBOARD_DIR="${OUTPUT}/tensorboard"
export TRITON_CACHE_DIR="${WORKSPACE}/triton-cache/"
if [[ -z $LOAD_NAME ]]; then
    echo "set LOAD_NAME (the model to start from)"
    exit 1
fi
CHECKPOINT_DIR="${WORKSPACE}/${LOAD_NAME}/checkpoints"
DATA_TRAIN="${SOURCE}/examples/multimodal/pretrain_dataset.yaml"
DEBUG=0
if [[ $DEBUG -eq 1 ]]; then
    BZ=32 NW=2 HD=0.0 LI=1
else
    BZ=256 NW=2 HD=0.1 LI=10
fi
EXTRA_ARGS=""
NONDETERMINISTIC_ATTN=1

OPTIONS=" \
    --apply-layernorm-1p --attention-softmax-in-fp32 \
    --use-checkpoint-args --no-use-tokenizer-model-from-checkpoint-args \
    --use-distributed-optimizer --transformer-impl transformer_engine --use-te \
    --normalization RMSNorm --group-query-attention --num-query-groups 8 \
    --no-masked-softmax-fusion --num-workers ${NW} --exit-duration-in-mins 230 --use-flash-attn \
    --untie-embeddings-and-output-weights --disable-bias-linear \
    --position-embedding-type rope --rotary-percent 1.0 --rotary-base 1000000 --swiglu \
    --attention-dropout 0.0 --hidden-dropout ${HD} \
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --seq-length 576 --decoder-seq-length 1024 --max-position-embeddings 4096 --ffn-hidden-size 14336 \
    --train-iters 20000 --micro-batch-size 1 --global-batch-size ${BZ} \
    --lr-decay-iters 20000 --lr-warmup-fraction .01 --lr 0.00015 --min-lr 1.0e-5 --lr-decay-style cosine \
    --log-interval ${LI} --eval-iters 10 --eval-interval 1000 \
    --tokenizer-type MultimodalTokenizer --tokenizer-model mistralai/Mistral-7B-Instruct-v0.3 \
    --tokenizer-prompt-format mistral --data-path ${DATA_TRAIN} \
    --prompt-path ${SOURCE}/examples/multimodal/manual_prompts.json \
    --save-interval 1000 --save ${FINETUNE_DIR} --load ${FINETUNE_DIR} \
    --dataloader-save ${FINETUNE_DIR}/dataloader --pretrained-checkpoint ${CHECKPOINT_DIR} \
    --split 100,0,0 --clip-grad 1.0 --weight-decay 1e-2 --adam-beta1 0.9 --adam-beta2 0.95 \
    --init-method-std 0.014 --log-params-norm --log-num-zeros-in-grad --bf16 --eod-mask-loss \
    --freeze-LM --freeze-ViT --patch-dim 14 --img-h 336 --img-w 336 \
    --dataloader-type external --tensorboard-dir ${TENSORBOARD_DIR} \
    --language-model-type=mistral_7b --disable-vision-class-token ${EXTRA_ARGS} \
    --distributed-timeout-minutes 60 --allow-missing-vision-projection-checkpoint --ckpt-format torch
"
export NVTE_APPLY_QK_LAYER_SCALING=0
export NVTE_ALLOW_NONDETERMINISTIC_ALGO=${NONDETERMINISTIC_ATTN}

torchrun --nproc_per_node 8 examples/multimodal/train.py ${OPTIONS}
