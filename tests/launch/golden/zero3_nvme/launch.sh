#!/usr/bin/env bash
# llama-3.1-70b on 2 node(s) x 8 GPU(s) (h100-sxm-80gb), layout framework=deepspeed,dp=16,tp=1,pp=1,zero=3,shard_group=8,ac=full,offload_optimizer=nvme,offload_params=nvme,mbs=1,grad_accum=2
# Written by shardplan emit. Run on every node: NODE_RANK=i MASTER_ADDR=node0 ./launch.sh
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
NODE_RANK="${NODE_RANK:?set NODE_RANK to the index of this node, 0..1 in hostfile order}"
MASTER_ADDR="${MASTER_ADDR:?set MASTER_ADDR to node 0 of 2}"
MASTER_PORT="${MASTER_PORT:-29500}"
export MASTER_ADDR MASTER_PORT
exec torchrun \
  --nnodes 2 \
  --nproc-per-node 8 \
  --node-rank "$NODE_RANK" \
  --master-addr "$MASTER_ADDR" \
  --master-port "$MASTER_PORT" \
  "$TRAIN_SCRIPT" \
  --deepspeed \
  --deepspeed_config deepspeed.json \
  "$@"
