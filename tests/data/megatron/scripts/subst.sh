#!/bin/bash
# mmsim test input (tests/test_interop.c): a command substitution on line 4,
# refused naming the line.
NODES=$(scontrol show hostnames | wc -l)
torchrun --nnodes $NODES pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16
