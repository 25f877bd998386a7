#!/bin/bash
# mmsim test input (tests/test_interop.c): a launch script written for the
# tests, read by `mmsim run --megatron-script`, never run.  Hyperparameters
# (facts) of GPT-3 175B from NVIDIA/Megatron-LM commit d98e8a64dd,
# examples/gpt3/train_gpt3_175b_distributed.sh; the layout is mmsim's:
# variables with defaults, arrays built up with +=, torchrun's own options.

export CUDA_DEVICE_MAX_CONNECTIONS=1
NODES=${SLURM_NNODES:-16}
PER_NODE=8
CKPT=${1:-/checkpoints/gpt3}      # a path: only costless options take it

LAYERS=96
WIDTH=12288
HEADS=96
CONTEXT=2048

LAUNCH=(--nproc_per_node "$PER_NODE" --nnodes "$NODES" --master_addr "${MASTER_ADDR:-localhost}")

NET=(--num-layers $LAYERS --hidden-size $WIDTH --num-attention-heads $HEADS)
NET+=(--seq-length $CONTEXT --max-position-embeddings $CONTEXT --attention-backend auto)

STEP=(
  --micro-batch-size 1 --global-batch-size 1536   # 1536 sequences per step
  --rampup-batch-size 16 16 5859375
  --train-iters 500000 --fp16
  --lr 6.0e-5 --min-lr 6.0e-6 --lr-decay-style cosine --lr-decay-iters 430000
  --lr-warmup-fraction .001 --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95
  --init-method-std 0.006 --clip-grad 1.0
)
SPLIT="--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16"

mkdir -p "$CKPT"
torchrun "${LAUNCH[@]}" pretrain_gpt.py "${NET[@]}" "${STEP[@]}" $SPLIT \
    --data-path "$DATA" --vocab-file "$VOCAB" --merge-file "$MERGES" --split 949,50,1 \
    --log-interval 100 --save-interval 10000 --eval-interval 1000 --eval-iters 10 \
    --save "$CKPT" --load "$CKPT" --tensorboard-dir "${CKPT}/tb" 2>&1 | tee "$CKPT/log.txt"
