#!/bin/bash
# mmsim test input, never run: the launch of NVIDIA/Megatron-LM commit
# d98e8a64dd, examples/multimodal/sft_mistral_clip.sh, restated in mmsim's
# words (LLaVA-style fine-tuning of the pretrain_mistral_clip.sh model: the
# same CLIP ViT-L/14 at 336 px and Mistral-7B, decoder sequence 2048,
# batch 1 x 128, tp 4; the ViT frozen, the LM trained).  It gives none of
# --bf16, --fp16 or --fp8-format: the precision is whatever the checkpoint's
# arguments say (--use-checkpoint-args), which mmsim does not read.
export NCCL_IB_SL=1 CUDA_DEVICE_MAX_CONNECTIONS=1
MODEL_NAME="mcore-llava-mistral-7b-instruct-clip336-sft"
if [[ -z $WORKSPACE ]]; then
    echo "set WORKSPACE"; exit 1
fi
SOURCE=`pwd`
OUTPUT="${WORKSPACE}/output/${MODEL_NAME}"
FINETUNE_DIR=${OUTPUT}/checkpoints
TENSORBOARD_DIR="${OUTPUT}/tensorboard"
if [[ -z $LOAD_NAME ]]; then
    echo "set LOAD_NAME"; exit 1
fi
if [[ -z $LOAD_ITER ]]; then
    echo "set LOAD_ITER"; exit 1
fi
CHECKPOINT_DIR="${WORKSPACE}/${LOAD_NAME}/checkpoints"
DEBUG=0
if [[ $DEBUG -eq 1 ]]; then BZ=8 NW=1 HD=0.0 LI=1; else BZ=128 NW=2 HD=0.1 LI=10; fi

OPTIONS=" \
    --apply-layernorm-1p --attention-softmax-in-fp32 --use-checkpoint-args \
    --use-distributed-optimizer --transformer-impl transformer_engine --use-te \
    --normalization RMSNorm --group-query-attention --num-query-groups 8 --no-masked-softmax-fusion \
    --num-workers ${NW} --exit-duration-in-mins 230 --use-flash-attn \
    --untie-embeddings-and-output-weights --disable-bias-linear \
    --position-embedding-type rope --rotary-percent 1.0 --rotary-base 1000000 --swiglu \
    --attention-dropout 0.0 --hidden-dropout ${HD} \
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --seq-length 576 --decoder-seq-length 2048 --max-position-embeddings 4096 --ffn-hidden-size 14336 \
    --train-iters 20000 --micro-batch-size 1 --global-batch-size ${BZ} \
    --lr-decay-iters 20000 --lr-warmup-fraction .01 --lr 1e-6 --min-lr 1e-7 --lr-decay-style cosine \
    --log-interval ${LI} --eval-iters 10 --eval-interval 500 \
    --tokenizer-type MultimodalTokenizer --tokenizer-model mistralai/Mistral-7B-Instruct-v0.3 \
    --tokenizer-prompt-format mistral --data-path ${SOURCE}/examples/multimodal/sft_dataset.yaml \
    --prompt-path ${SOURCE}/examples/multimodal/manual_prompts.json \
    --save-interval 500 --save ${FINETUNE_DIR} --load ${FINETUNE_DIR} \
    --pretrained-checkpoint ${CHECKPOINT_DIR} --dataloader-save ${FINETUNE_DIR}/dataloader \
    --split 100,0,0 --clip-grad 0.5 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 \
    --init-method-std 0.014 --log-params-norm --log-num-zeros-in-grad --eod-mask-loss --freeze-ViT \
    --patch-dim 14 --img-h 336 --img-w 336 --dataloader-type external --tensorboard-dir ${TENSORBOARD_DIR} \
    --language-model-type=mistral_7b --disable-vision-class-token \
    --distributed-timeout-minutes 60 --ckpt-format torch
"
export NVTE_APPLY_QK_LAYER_SCALING=0 NVTE_ALLOW_NONDETERMINISTIC_ALGO=1

torchrun --nproc_per_node 8 examples/multimodal/train.py ${OPTIONS}
