#!/bin/bash
# mmsim test input (tests/test_interop.c): a script with a loop on line 5,
# which mmsim's script reader refuses naming the line.
ARGS=(--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16)
for n in 1 2; do
  torchrun pretrain_gpt.py "${ARGS[@]}"
done
