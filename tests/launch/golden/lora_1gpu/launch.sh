#!/usr/bin/env bash
# llama-3.1-8b on 1 node(s) x 1 GPU(s) (h100-sxm-80gb), layout framework=fsdp,dp=1,tp=1,pp=1,zero=0,ac=full,mbs=4,grad_accum=4
# Written by shardplan emit. Run: ./launch.sh
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
exec accelerate launch \
  --config_file accelerate_config.yaml \
  "$TRAIN_SCRIPT" "$@"
