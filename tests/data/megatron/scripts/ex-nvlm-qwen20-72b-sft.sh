#!/bin/bash
# mmsim test input, never run: the launch of NVIDIA/Megatron-LM commit
# d98e8a64dd, examples/multimodal/nvlm/sft_qwen20_72b_internvit_6b.sh,
# restated in mmsim's words (NVLM supervised fine-tuning: InternViT-6B at
# 448 px, patch 14, pixel shuffle, tiling up to 6 tiles plus a thumbnail with
# tile tags, into Qwen2-72B: 80 layers, width 8192, 64 heads in 8 groups,
# SwiGLU 29568, Q/K/V biases; image sequence 261 (256 embeddings and 5 tag
# tokens), decoder sequence 3200; batch 1 x 256; bf16, tp 8, pp 4; the ViT
# frozen, the LM trained).  BATCH picks torchrun (0) or srun; DEBUG=1 would
# freeze the LM too.
export NCCL_IB_SL=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_ALGO=^NVLS
export TOKENIZERS_PARALLELISM="false"
DEBUG=0
if [[ $BATCH -eq 0 ]]; then
    MODEL_NAME="mcore-qwen20-72b-internvit-sft-`date +'%y-%m-%d'`"
else
    MODEL_NAME="mcore-qwen20-72b-internvit-sft"
fi
WORKSPACE="<some dir>"
SOURCE=`pwd`
OUTPUT="${WORKSPACE}/output/${MODEL_NAME}"
FINETUNE_DIR="${OUTPUT}/checkpoints"
LOGS_DIR="${OUTPUT}/logs"
TENSORBOARD_DIR="${OUTPUT}/tensorboard"
LOAD_NAME="mcore-qwen20-72b-internvit-pp4"
CHECKPOINT_DIR="${WORKSPACE}/output/${LOAD_NAME}/checkpoints"
DATA_TRAIN="${SOURCE}/examples/multimodal/nvlm/sft_blend.yaml"
if [[ $DEBUG -eq 1 ]]; then
    MBZ=1; BZ=1; NW=0; LI=1; EXTRA_ARGS="--freeze-LM"
else
    MBZ=1; BZ=256; NW=8; LI=5; EXTRA_ARGS=""
fi
SEQ_LEN=261
DECODER_SEQ_LEN=3200

OPTIONS=" \
    --use-checkpoint-args --exit-duration-in-mins 230 --disable-bias-linear \
    --tokenizer-type MultimodalTokenizer --tokenizer-model Qwen/Qwen2-72B-Instruct \
    --tokenizer-prompt-format qwen2p0 --transformer-impl transformer_engine \
    --normalization RMSNorm --norm-epsilon 1e-06 --group-query-attention --num-query-groups 8 \
    --no-masked-softmax-fusion --attention-softmax-in-fp32 --attention-dropout 0.0 --hidden-dropout 0.0 \
    --untie-embeddings-and-output-weights --position-embedding-type rope --rotary-percent 1.0 \
    --rotary-base 1000000 --swiglu \
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 \
    --num-layers 80 --hidden-size 8192 --ffn-hidden-size 29568 --add-qkv-bias --num-attention-heads 64 \
    --use-distributed-optimizer --use-te --num-workers ${NW} \
    --seq-length ${SEQ_LEN} --decoder-seq-length ${DECODER_SEQ_LEN} --max-position-embeddings 32768 \
    --train-samples 122880000 --lr-decay-samples 25600000 --lr-warmup-samples 83200 \
    --micro-batch-size ${MBZ} --global-batch-size ${BZ} \
    --lr 2e-6 --min-lr 2.5e-7 --lr-decay-style cosine --log-interval ${LI} --eval-iters 10 --eval-interval 500 \
    --data-path ${DATA_TRAIN} --prompt-path ${SOURCE}/examples/multimodal/nvlm/nvlm_prompts.json \
    --save-interval 10000 --save ${FINETUNE_DIR} --load ${FINETUNE_DIR} \
    --dataloader-save ${FINETUNE_DIR}/dataloader --pretrained-checkpoint ${CHECKPOINT_DIR} \
    --split 100,0,0 --clip-grad 10.0 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 \
    --init-method-std 0.014 --bf16 --eod-mask-loss --freeze-ViT \
    --patch-dim 14 --img-h 448 --img-w 448 --dataloader-type external --tensorboard-dir ${TENSORBOARD_DIR} \
    --language-model-type qwen2.0_72B ${EXTRA_ARGS} --vision-model-type internvit \
    --disable-vision-class-token --log-params-norm --log-num-zeros-in-grad --ckpt-format torch \
    --pixel-shuffle --use-tiling --max-num-tiles 6 --use-thumbnail --use-tile-tags --image-tag-type nvlm
"
export NVTE_APPLY_QK_LAYER_SCALING=0 NVTE_ALLOW_NONDETERMINISTIC_ALGO=1

if [[ $BATCH -eq 0 ]]; then
    torchrun --nproc_per_node 8 examples/multimodal/train.py ${OPTIONS}
else
    run_cmd="python -u ${SOURCE}/examples/multimodal/train.py ${OPTIONS}"
    srun -l --verbose --output=${LOGS_DIR}/%x_%j.log sh -c "${run_cmd}"
fi
