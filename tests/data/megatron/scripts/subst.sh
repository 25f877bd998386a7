#!/bin/bash
# mmsim test input (tests/test_interop.c): a command substitution is not
# run; its output is unknown, fine for torchrun's --nnodes (costless) and
# refused where a number is needed: --num-layers on line 7.
NODES=$(scontrol show hostnames | wc -l)
LAYERS=`cat layers.txt`
torchrun --nnodes $NODES pretrain_gpt.py --num-layers $LAYERS \
  --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --bf16
