# shellcheck shell=bash
# Megatron-LM arguments for llama-3.1-70b, written by shardplan emit.
# Usage: source megatron_args.sh, then run pretrain_gpt.py "${MEGATRON_ARGS[@]}"
# followed by your data and tokenizer arguments (--data-path, --tokenizer-type, ...).
# shellcheck disable=SC2034  # used by the script that sources this file
MEGATRON_ARGS=(
  --tensor-model-parallel-size 8
  --pipeline-model-parallel-size 2
  --context-parallel-size 1
  --sequence-parallel
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
  --recompute-granularity selective
  --micro-batch-size 1
  --global-batch-size 32
  --seq-length 8192
  --bf16
  --clip-grad 1
  --num-layers 80
  --hidden-size 8192
  --ffn-hidden-size 28672
  --num-attention-heads 64
  --group-query-attention
  --num-query-groups 8
  --max-position-embeddings 131072
  --swiglu
  --normalization RMSNorm
  --position-embedding-type rope
  --untie-embeddings-and-output-weights
  --disable-bias-linear
)
