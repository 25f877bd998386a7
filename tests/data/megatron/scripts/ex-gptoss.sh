#!/bin/bash
# mmsim test input, never run: the launch of NVIDIA/Megatron-LM commit
# d98e8a64dd, examples/gptoss/02_train.sh, restated in mmsim's words (a
# small GPT-OSS-style MoE: 12 layers, width 512, ffn 2048, 64 heads in 8
# groups, 4 experts top-2, sliding window 127 on alternate layers, learnable
# softmax, quick GeGLU clamped at 7; 8192 tokens; batch 1 x 128; bf16 + FP8
# hybrid; pipeline over all GPUs).  Its options are parsed by a `while` loop
# over the script's arguments.
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}
CHECKPOINT_PATH="NO_VALUE_PROVIDED"
TENSORBOARD_LOGS_PATH="./tensorboard_logs/"
TOKENIZER_ARG="MOCK"
DATA_ARG="MOCK"
DISTRIBUTED_CONFIG_FILE=""

while [[ $# -gt 0 ]]; do
    case $1 in
        --checkpoint-path) CHECKPOINT_PATH="$2"; shift 2 ;;
        --tensorboard-logs-path) TENSORBOARD_LOGS_PATH="$2"; shift 2 ;;
        --tokenizer) TOKENIZER_ARG="$2"; shift 2 ;;
        --data) DATA_ARG="$2"; shift 2 ;;
        --distributed-config-file) DISTRIBUTED_CONFIG_FILE="$2"; shift 2 ;;
        *) echo "unknown option $1"; exit 1 ;;
    esac
done

if [ ! -d "$CHECKPOINT_PATH" ]; then
    echo "no checkpoint directory $CHECKPOINT_PATH"
    exit 1
fi
if [ -n "$DISTRIBUTED_CONFIG_FILE" ]; then
    source "$DISTRIBUTED_CONFIG_FILE"
fi
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
NUM_NODES=${NUM_NODES:-1}
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))
PRETRAIN_SCRIPT_PATH="pretrain_gpt.py"
DISTRIBUTED_ARGS=(--nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES)
TP_SIZE=1
EP_SIZE=1
PP_SIZE=${WORLD_SIZE}
NUM_LAYERS=12
SEQ_LENGTH=8192
MODEL_ARGS=(--no-masked-softmax-fusion --transformer-impl transformer_engine --disable-bias-linear
    --untie-embeddings-and-output-weights --no-rope-fusion --normalization RMSNorm
    --num-layers ${NUM_LAYERS} --hidden-size 512 --ffn-hidden-size 2048 --num-attention-heads 64
    --group-query-attention --num-query-groups 8 --seq-length ${SEQ_LENGTH}
    --max-position-embeddings ${SEQ_LENGTH} --use-mcore-models --rotary-percent 1.0 --rope-type rope
    --position-embedding-type rope --rotary-base 10000 --no-bias-gelu-fusion
    --export-force-local-attention --no-bias-dropout-fusion --quick-geglu --glu-linear-offset 1.0
    --softmax-type learnable --window-attn-skip-freq 2 --activation-func-clamp-value 7.0
    --window-size 127,0 --enable-gpt-oss)
MOE_ARGS=(--num-experts 4 --moe-router-topk 2 --moe-router-load-balancing-type aux_loss
    --moe-aux-loss-coeff 1e-3 --moe-grouped-gemm --moe-token-dispatcher-type alltoall
    --overlap-param-gather --overlap-grad-reduce --moe-ffn-hidden-size 2048 --moe-router-dtype fp32
    --moe-z-loss-coeff 1e-3 --moe-permute-fusion)
TRAINING_ARGS=(--micro-batch-size 1 --global-batch-size 128 --lr 1.0e-5 --bf16 --use-flash-attn
    --recompute-activations)
MODEL_PARALLEL_ARGS=(--tensor-model-parallel-size ${TP_SIZE} --pipeline-model-parallel-size ${PP_SIZE}
    --expert-model-parallel-size ${EP_SIZE} --sequence-parallel --context-parallel-size 1
    --use-distributed-optimizer --fp8-format hybrid --fp8-param-gather)

python -m torch.distributed.run ${DISTRIBUTED_ARGS[@]} ${PRETRAIN_SCRIPT_PATH} \
    ${MODEL_ARGS[@]} ${MOE_ARGS[@]} ${TRAINING_ARGS[@]} ${MODEL_PARALLEL_ARGS[@]} --mock-data
