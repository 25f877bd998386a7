#!/bin/bash
# mmsim test input (tests/test_interop.c): a BERT launch (entry script
# pretrain_bert.py, as NVIDIA/Megatron-LM commit d98e8a64dd names it),
# which mmsim refuses by name.
ARGS=(--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --bf16)
torchrun --nproc_per_node 8 pretrain_bert.py "${ARGS[@]}"
