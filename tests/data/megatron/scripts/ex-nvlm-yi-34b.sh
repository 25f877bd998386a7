#!/bin/bash
# mmsim test input, never run: the launch of NVIDIA/Megatron-LM commit
# d98e8a64dd, examples/multimodal/nvlm/pretrain_yi_34b_internvit_6b.sh
# (NVLM pretraining: InternViT-6B at 448 px, patch 14, pixel shuffle, into
# Yi-34B: 60 layers, width 7168, 56 heads in 8 groups, SwiGLU 20480,
# vocabulary 64000; image sequence 256, decoder sequence 512; batch 1 x 2048;
# bf16, tp 8; the LM and the ViT frozen), restated in mmsim's words.  BATCH
# chooses torchrun (0) or srun; backquotes run `date` and `pwd`.
export NCCL_IB_SL=1 CUDA_DEVICE_MAX_CONNECTIONS=1 TOKENIZERS_PARALLELISM="false"
DEBUG=0
if [[ $BATCH -eq 0 ]]; then
    DATETIME=`date +'%y-%m-%d-%H-%M-%S'`
    MODEL_NAME="mcore-nous-yi34b-internvit-mlp-${DATETIME}"
else
    MODEL_NAME="mcore-nous-yi34b-internvit-mlp"
fi
WORKSPACE="<some dir>"
SOURCE=`pwd`
OUTPUT="${WORKSPACE}/output/${MODEL_NAME}"
FINETUNE_DIR=${OUTPUT}/checkpoints
LOGS_DIR="${OUTPUT}/logs"
TENSORBOARD_DIR="${OUTPUT}/tensorboard"
CHECKPOINT_DIR="${WORKSPACE}/combined-yi-34b-internvit-tp8-mcore"
DATA_TRAIN="${SOURCE}/examples/multimodal/nvlm/pretrain_blend.yaml"
if [[ $DEBUG -eq 1 ]]; then
    MBZ=1 BZ=1 NW=0 LI=1 AD=0.0 HD=0.0
else
    MBZ=1 BZ=2048 NW=8 LI=5 AD=0.1 HD=0.1
fi
EXTRA_ARGS=""
SEQ_LEN=256          # image embeddings
DECODER_SEQ_LEN=512  # language model
MAX_POS_EMBED=512

OPTIONS=" \
    --num-layers 60 --hidden-size 7168 --num-attention-heads 56 \
    --group-query-attention --num-query-groups 8 --swiglu --ffn-hidden-size 20480 \
    --normalization RMSNorm --position-embedding-type rope --rotary-percent 1.0 --rotary-base 5000000 \
    --disable-bias-linear --untie-embeddings-and-output-weights \
    --seq-length ${SEQ_LEN} --decoder-seq-length ${DECODER_SEQ_LEN} --max-position-embeddings ${MAX_POS_EMBED} \
    --tokenizer-type MultimodalTokenizer --tokenizer-model NousResearch/Nous-Hermes-2-Yi-34B \
    --tokenizer-prompt-format nvlm-yi-34b --vocab-size 64000 --make-vocab-size-divisible-by 1 \
    --language-model-type yi-34b --vision-model-type internvit \
    --img-h 448 --img-w 448 --patch-dim 14 --pixel-shuffle --disable-vision-class-token --image-tag-type nvlm \
    --freeze-LM --freeze-ViT \
    --tensor-model-parallel-size 8 --use-distributed-optimizer --bf16 --use-te \
    --micro-batch-size ${MBZ} --global-batch-size ${BZ} \
    --train-samples 122880000 --lr-decay-samples 25600000 --lr-warmup-samples 83200 \
    --lr 1e-4 --min-lr 2.5e-5 --lr-decay-style cosine --clip-grad 10.0 --weight-decay 0.1 \
    --adam-beta1 0.9 --adam-beta2 0.95 --init-method-std 0.014 \
    --attention-dropout ${AD} --hidden-dropout ${HD} --eod-mask-loss \
    --num-workers ${NW} --exit-duration-in-mins 230 --tensorboard-dir=${TENSORBOARD_DIR} \
    --data-path ${DATA_TRAIN} --dataloader-type external --split 100,0,0 \
    --prompt-path ${SOURCE}/examples/multimodal/nvlm/nvlm_prompts.json \
    --log-interval ${LI} --save-interval 2000 --eval-interval 500 --eval-iters 10 \
    --log-params-norm --log-num-zeros-in-grad ${EXTRA_ARGS} \
    --save ${FINETUNE_DIR} --load ${FINETUNE_DIR} --dataloader-save ${FINETUNE_DIR}/dataloader \
    --pretrained-checkpoint ${CHECKPOINT_DIR} --allow-missing-vision-projection-checkpoint \
    --use-checkpoint-args --ckpt-format torch
    "
export NVTE_ALLOW_NONDETERMINISTIC_ALGO=1 NVTE_APPLY_QK_LAYER_SCALING=0

if [[ $BATCH -eq 0 ]]; then
    torchrun --nproc_per_node 8 examples/multimodal/train.py ${OPTIONS}
else
    run_cmd="python -u ${SOURCE}/examples/multimodal/train.py ${OPTIONS}"
    srun -l --verbose --output=${LOGS_DIR}/%x_%j.log sh -c "${run_cmd}"
fi
