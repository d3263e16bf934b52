#!/usr/bin/env bash
# llama-3.1-70b on 4 node(s) x 8 GPU(s) (h100-sxm-80gb), layout framework=deepspeed,dp=2,tp=8,pp=2,sp=on,zero=1,ac=selective,mbs=1,grad_accum=16
# Written by shardplan emit. Run on node 0: ./launch.sh
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TRAIN_SCRIPT="${TRAIN_SCRIPT:-pretrain_gpt.py}"
case "$TRAIN_SCRIPT" in /*) ;; *) TRAIN_SCRIPT="$PWD/$TRAIN_SCRIPT" ;; esac
cd "$here"
# shellcheck source=megatron_args.sh
source megatron_args.sh
# Local rank i drives GPU i in nvidia-smi (PCI bus) order, as the plan's rank map.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
export CUDA_DEVICE_MAX_CONNECTIONS=1  # Megatron orders TP/CP comm before compute
MASTER_ADDR="${MASTER_ADDR:-$(awk '!/^#/ && NF {print $1; exit}' hostfile)}"
MASTER_PORT="${MASTER_PORT:-29500}"
export MASTER_ADDR MASTER_PORT
# OpenMPI refuses to run as root unless given --allow-run-as-root.
# shellcheck disable=SC2016  # expanded by each rank, not here
exec mpirun \
  -np 32 \
  --hostfile hostfile \
  --map-by ppr:8:node \
  --rank-by slot \
  --bind-to numa \
  --report-bindings \
  -x MASTER_ADDR -x MASTER_PORT -x CUDA_DEVICE_ORDER -x NCCL_DEBUG -x TORCH_NCCL_ASYNC_ERROR_HANDLING -x CUDA_DEVICE_MAX_CONNECTIONS \
  -x PATH -x LD_LIBRARY_PATH \
  bash -c 'export RANK=$OMPI_COMM_WORLD_RANK LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE LOCAL_WORLD_SIZE=$OMPI_COMM_WORLD_LOCAL_SIZE; exec python "$@"' mpi-rank \
  "$TRAIN_SCRIPT" \
  "${MEGATRON_ARGS[@]}" \
  "$@"
