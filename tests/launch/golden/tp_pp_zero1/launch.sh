#!/usr/bin/env bash
# llama-3.1-70b on 4 node(s) x 8 GPU(s) (h100-sxm-80gb), layout framework=deepspeed,dp=2,tp=8,pp=2,sp=on,zero=1,ac=selective,mbs=1,grad_accum=16
# Written by shardplan emit. Run on node 0 (pdsh reaches the others): ./launch.sh
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"
case "$TRAIN_SCRIPT" in /*) ;; *) TRAIN_SCRIPT="$PWD/$TRAIN_SCRIPT" ;; esac
cd "$here"
# Local rank i drives GPU i in nvidia-smi (PCI bus) order, as the plan's rank map.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
export DS_ENV_FILE="$here/deepspeed_env"  # exported to every node
MASTER_ADDR="${MASTER_ADDR:-$(awk '!/^#/ && NF {print $1; exit}' hostfile)}"
MASTER_PORT="${MASTER_PORT:-29500}"
export MASTER_ADDR MASTER_PORT
exec deepspeed \
  --hostfile hostfile \
  --num_nodes 4 \
  --master_addr "$MASTER_ADDR" \
  --num_gpus 8 \
  --master_port "$MASTER_PORT" \
  "$TRAIN_SCRIPT" \
  --deepspeed \
  --deepspeed_config deepspeed.json \
  "$@"
