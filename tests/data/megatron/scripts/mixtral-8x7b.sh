#!/bin/bash
# mmsim test input (tests/test_interop.c): a launch script written for the
# tests, read by `mmsim run --megatron-script`, never run.  Hyperparameters
# (facts) of Mixtral 8x7B from NVIDIA/Megatron-LM commit d98e8a64dd,
# examples/mixtral/train_mixtral_8x7b_distributed.sh.  Several of its
# options change the cost in ways mmsim does not model: the test asserts
# that one message names them all.

SHAPE=(--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32
       --group-query-attention --num-query-groups 8 --seq-length 4096 --max-position-embeddings 32768
       --position-embedding-type rope --rotary-base 1000000 --swiglu --normalization RMSNorm
       --untie-embeddings-and-output-weights --disable-bias-linear --no-position-embedding
       --no-masked-softmax-fusion --vocab-size 32000)
EXPERTS=(--num-experts 8 --moe-router-topk 2 --moe-router-load-balancing-type aux_loss
         --moe-aux-loss-coeff 1e-2 --moe-grouped-gemm --moe-token-dispatcher-type alltoall)
RUN=(--micro-batch-size 1 --global-batch-size 256 --bf16 --lr 1e-4 --min-lr 1.0e-5
     --tensor-model-parallel-size 1 --pipeline-model-parallel-size 4 --expert-model-parallel-size 8
     --use-distributed-optimizer --sequence-parallel --overlap-grad-reduce --overlap-param-gather
     --no-load-optim --no-load-rng --save-interval 10000)
torchrun --nproc_per_node 8 pretrain_gpt.py "${SHAPE[@]}" "${EXPERTS[@]}" "${RUN[@]}"
