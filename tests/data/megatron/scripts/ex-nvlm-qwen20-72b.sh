#!/bin/bash
# mmsim test input, never run: the launch of NVIDIA/Megatron-LM commit
# d98e8a64dd, examples/multimodal/nvlm/pretrain_qwen20_72b_internvit_6b.sh
# (NVLM pretraining: InternViT-6B at 448 px, patch 14, pixel shuffle, into
# Qwen2-72B: 80 layers, width 8192, 64 heads in 8 groups, SwiGLU 29568, Q/K/V
# biases; image sequence 256, decoder sequence 512, 32768 positions; batch
# 1 x 2048; bf16, tp 8, pp 1; the LM and the ViT frozen), restated in mmsim's
# words; BATCH picks torchrun (0) or srun.
export NCCL_IB_SL=1
export CUDA_DEVICE_MAX_CONNECTIONS=1
export TOKENIZERS_PARALLELISM="false"
DEBUG=0
if [[ $BATCH -eq 0 ]]; then
    DATETIME=`date +'%y-%m-%d-%H-%M-%S'`
    MODEL_NAME="mcore-qwen20-72b-internvit-${DATETIME}"
else
    MODEL_NAME="mcore-qwen20-72b-internvit"
fi
WORKSPACE="<some dir>"
SOURCE=`pwd`
OUTPUT="${WORKSPACE}/output/${MODEL_NAME}"
FINETUNE_DIR=${OUTPUT}/checkpoints
LOGS_DIR="${OUTPUT}/logs"
TENSORBOARD_DIR="${OUTPUT}/tensorboard"
CHECKPOINT_DIR="${WORKSPACE}/combined-qwen2.0-72b-instruct-internvit-6b-448px-1.5-tp8-te"
DATA_TRAIN="${SOURCE}/examples/multimodal/nvlm/pretrain_blend.yaml"
if [[ $DEBUG -eq 1 ]]; then
    MBZ=1; BZ=1; NW=0; AD=0.0; HD=0.0; LI=1
else
    MBZ=1; BZ=2048; NW=8; AD=0.1; HD=0.1; LI=5
fi
EXTRA_ARGS=""
SEQ_LEN=256
DECODER_SEQ_LEN=512

OPTIONS=" \
    --use-checkpoint-args --exit-duration-in-mins 230 \
    --tokenizer-type MultimodalTokenizer --tokenizer-model Qwen/Qwen2-72B-Instruct \
    --tokenizer-prompt-format qwen2p0 --transformer-impl transformer_engine \
    --num-layers 80 --hidden-size 8192 --ffn-hidden-size 29568 --swiglu \
    --num-attention-heads 64 --group-query-attention --num-query-groups 8 --add-qkv-bias \
    --disable-bias-linear --normalization RMSNorm --norm-epsilon 1e-06 \
    --position-embedding-type rope --rotary-percent 1.0 --rotary-base 1000000 \
    --untie-embeddings-and-output-weights \
    --no-masked-softmax-fusion --attention-softmax-in-fp32 \
    --attention-dropout ${AD} --hidden-dropout ${HD} \
    --seq-length ${SEQ_LEN} --decoder-seq-length ${DECODER_SEQ_LEN} --max-position-embeddings 32768 \
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 1 \
    --use-distributed-optimizer --use-te --bf16 \
    --micro-batch-size ${MBZ} --global-batch-size ${BZ} --num-workers ${NW} \
    --train-samples 122880000 --lr-decay-samples 25600000 --lr-warmup-samples 83200 \
    --lr 1e-4 --min-lr 2.5e-5 --lr-decay-style cosine --clip-grad 10.0 --weight-decay 0.1 \
    --adam-beta1 0.9 --adam-beta2 0.95 --init-method-std 0.014 --eod-mask-loss \
    --language-model-type qwen2.0_72B --vision-model-type internvit \
    --img-h 448 --img-w 448 --patch-dim 14 --pixel-shuffle \
    --freeze-ViT --freeze-LM \
    --disable-vision-class-token --image-tag-type nvlm --allow-missing-vision-projection-checkpoint \
    --log-interval ${LI} --eval-iters 10 --eval-interval 500 --save-interval 5000 \
    --data-path ${DATA_TRAIN} --prompt-path ${SOURCE}/examples/multimodal/nvlm/nvlm_prompts.json \
    --save ${FINETUNE_DIR} --load ${FINETUNE_DIR} --dataloader-save ${FINETUNE_DIR}/dataloader \
    --pretrained-checkpoint ${CHECKPOINT_DIR} --split 100,0,0 --dataloader-type external \
    --tensorboard-dir ${TENSORBOARD_DIR} ${EXTRA_ARGS} \
    --log-params-norm --log-num-zeros-in-grad --ckpt-format torch
"
export NVTE_APPLY_QK_LAYER_SCALING=0 NVTE_ALLOW_NONDETERMINISTIC_ALGO=1

if [[ $BATCH -eq 0 ]]; then
    torchrun --nproc_per_node 8 examples/multimodal/train.py ${OPTIONS}
else
    run_cmd="python -u ${SOURCE}/examples/multimodal/train.py ${OPTIONS}"
    srun -l --verbose --container-image <path to docker image> \
        --output=${LOGS_DIR}/%x_%j.log sh -c "${run_cmd}"
fi
