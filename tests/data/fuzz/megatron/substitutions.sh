torchrun pretrain_gpt.py --num-layers=${N:=4} --hidden-size "$((1+1))" `date`
