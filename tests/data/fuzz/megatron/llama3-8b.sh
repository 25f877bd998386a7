#!/bin/bash
# mmsim test input (tests/test_interop.c): a launch script written for the
# tests in the one-string form (MODEL_ARGS="..."), read by `mmsim run
# --megatron-script`, never run.  Hyperparameters (facts) of Llama 3 8B in
# FP8 on H100 from NVIDIA/Megatron-LM commit d98e8a64dd,
# examples/llama/train_llama3_8b_h100_fp8.sh (32 layers, 8192 tokens, tp 1,
# cp 1, micro-batch 1, global batch 128); of its FP8 options only the format
# is kept here.

TP=${TP_SIZE:-1}
CP=${CP_SIZE:-1}
SEQ=8192

MODEL_ARGS="--use-mcore-models --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 \
  --seq-length $SEQ --max-position-embeddings $SEQ --position-embedding-type rope \
  --rotary-base 1000000 --rotary-percent 1.0 --swiglu --normalization RMSNorm \
  --untie-embeddings-and-output-weights --disable-bias-linear --vocab-size 128256"
TRAIN_ARGS="--micro-batch-size 1 --global-batch-size 128 --lr 0.00015 --bf16 --fp8-format hybrid"
PAR_ARGS='--tensor-model-parallel-size '$TP' --context-parallel-size '$CP' --sequence-parallel'
PAR_ARGS+=" --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"

python -m torch.distributed.run --nproc_per_node 8 pretrain_gpt.py $MODEL_ARGS $TRAIN_ARGS $PAR_ARGS \
  --attention-backend fused --mock-data --log-interval 1
