#!/usr/bin/env bash
# llama-3.1-70b on 2 node(s) x 8 GPU(s) (h100-sxm-80gb), layout framework=torchtitan,dp=4,tp=4,pp=1,sp=on,zero=3,shard_group=2,ac=full,mbs=1,grad_accum=8
# Written by shardplan emit. Run on node 0: ./launch.sh
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
MASTER_ADDR="${MASTER_ADDR:-$(awk '!/^#/ && NF {print $1; exit}' hostfile)}"
MASTER_PORT="${MASTER_PORT:-29500}"
export MASTER_ADDR MASTER_PORT
# OpenMPI refuses to run as root unless given --allow-run-as-root.
# shellcheck disable=SC2016  # expanded by each rank, not here
exec mpirun \
  -np 2 \
  --hostfile hostfile \
  --map-by ppr:1:node \
  --rank-by slot \
  --bind-to none \
  --report-bindings \
  -x MASTER_ADDR -x MASTER_PORT -x CUDA_DEVICE_ORDER -x NCCL_DEBUG -x TORCH_NCCL_ASYNC_ERROR_HANDLING \
  -x PATH -x LD_LIBRARY_PATH \
  bash -c 'exec accelerate launch --config_file accelerate_config.yaml --machine_rank "$OMPI_COMM_WORLD_RANK" --main_process_ip "$MASTER_ADDR" --main_process_port "$MASTER_PORT" "$@"' mpi-node \
  "$TRAIN_SCRIPT" "$@"
