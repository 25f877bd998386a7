A=(--num-layers 2
A+=(--bf16)
python pretrain_gpt.py ${A[@]} ${A[7]} ${A[x]} ${#A} "${A[*]}" $@ $1 ${Z-$Y} 2>&1 >>/dev/null | tee x &
