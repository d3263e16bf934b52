// Fixed and hidden costs every process pays: the CUDA context, NCCL's buffers per
// communicator (every process group the layout uses), cuBLAS workspaces.
#include <algorithm>

#include "planner/memory_terms.h"
#include "planner/units.h"

namespace shardplan {
namespace {

// The CUDA context and the kernels and library handles loaded on demand, outside PyTorch's
// allocator. Measured on an H100 (driver 580.159.04, CUDA 13.0, torch 2.11; bench/data/
// calibration): 650,969,088 B after torch's first CUDA call in every run, and the device's
// used memory less the reserved peak after a training step, 0.817 GiB under FSDP2 (0.749 for
// a one-GPU loop), 0.69-0.70 GiB after transformers' generate. Training on Hopper and later
// takes the FSDP figure. Older GPUs (fewer SMs, whose per-SM reservations the context holds,
// and other kernel images) and serving keep memory-model.md 4.1's 640 MiB (300-400 MB with
// lazy loading, more with the kernels a step loads): neither is measured here.
constexpr int64_t kCudaContextHopperTraining = 837 * kMiB;
constexpr int64_t kCudaContext = 640 * kMiB;
// memory-model.md 4.3: 544-688 MB per communicator measured on 4x A100 (NCCL #964).
constexpr int64_t kNcclIntraNode = 512 * kMiB;
constexpr int64_t kNcclPcie = 256 * kMiB;             // fewer channels over PCIe
constexpr int64_t kNcclNvls = 256 * kMiB;             // NVLS buffers on sm90+ NVSwitch nodes
constexpr int64_t kNcclAllToAllPerPeer = 384 * kMiB;  // 8-way all-to-all adds about 3 GB (NCCL #1685)
constexpr int64_t kNcclP2p = 128 * kMiB;              // pipeline send/recv to two neighbours
// Serving with TP, vLLM opens the group twice (torch.distributed's NCCL group and its own
// PyNccl communicator) and registers custom all-reduce buffers: the non-torch memory its
// profile sees grow is 2.06-2.21 GiB at TP 2 and 4 against 0.24-0.27 GiB on one GPU in 14
// of llm-d's vLLM 0.19 H100 logs (Llama-3.1-8B, Qwen2.5-7B/72B, Llama-3.3-70B, Mixtral,
// Mistral-Small, Kimi-VL, gpt-oss-20b, Llama-4-Scout), so the group costs ~1.84 GiB.
constexpr int64_t kServingTpBuffers = 1884 * kMiB;

struct Group {
  const char* name;
  int size;
  bool all_to_all;
  bool p2p;
  bool serving_tp = false;  // vLLM's tensor-parallel group
};

int64_t CommunicatorBytes(const ClusterSpec& c, const Group& g) {
  if (g.size <= 1) return 0;
  if (g.p2p) return kNcclP2p;
  if (g.serving_tp) return kServingTpBuffers;
  const bool nvlink = c.intra_node.fabric == "nvlink" && c.gpu.nvlink_bandwidth > 0;
  int64_t bytes = nvlink ? kNcclIntraNode : kNcclPcie;
  if (nvlink && c.gpu.compute_capability >= 90 && g.size > 2 && c.gpus_per_node >= 4) bytes += kNcclNvls;
  if (g.all_to_all) bytes += kNcclAllToAllPerPeer * std::min(g.size - 1, 8);
  return bytes;
}

}  // namespace

void AddOverheads(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out) {
  (void)s;
  const Layout& l = ctx.l;
  const bool measured = ctx.w.training() && ctx.c.gpu.compute_capability >= 90;
  out.push_back({"cuda_context", measured ? kCudaContextHopperTraining : kCudaContext, 1, Phase::kSetup, Phase::kStep,
                 Pool::kNonTorch,
                 measured ? "CUDA context + kernels a training step loads (measured on an H100, bench/data/calibration)"
                          : "CUDA context + lazily loaded kernels (memory-model.md 4.1)"});
  // cuBLAS workspace per (handle, stream): 32 MiB on sm90+, else 8 MiB + 128 KiB; the
  // forward (main thread) and autograd's thread each get a handle (CublasHandlePool.cpp).
  const int64_t ws = ctx.c.gpu.compute_capability >= 90 ? 32 * kMiB : 8 * kMiB + 128 * kKiB;
  const int handles = ctx.w.training() ? 2 : 1;
  out.push_back({"cublas_workspace", ws * handles, handles, Phase::kSetup, Phase::kStep, Pool::kTorch,
                 "cuBLAS workspace per handle and stream (memory-model.md 4.2)"});
  const int dp_group = l.framework == Framework::kMegatron ? l.dp * l.cp : l.dp;
  std::vector<Group> groups = {
      {"tp", l.tp, false, false, !ctx.w.training()}, {"cp", l.cp, false, false}, {"pp", l.pp, false, true}};
  if (ctx.w.training()) {
    if (l.shard_group > 0 && l.shard_group < l.dp) {
      groups.push_back({"shard", l.shard_group, false, false});
      groups.push_back({"replicate", l.dp / l.shard_group, false, false});
    } else {
      groups.push_back({"dp", dp_group, false, false});
    }
    if (l.ep > 1) groups.push_back({"ep", l.ep, true, false});
    const int edp = ExpertShardDegree(l);
    if (ctx.m.is_moe() && l.ep > 1 && edp > 1 && edp != dp_group) groups.push_back({"expert_dp", edp, false, false});
  }
  int64_t nccl = 0;
  int count = 0;
  for (const Group& g : groups) {
    int64_t b = CommunicatorBytes(ctx.c, g);
    if (b > 0) ++count;
    nccl += b;
  }
  if (nccl > 0)
    out.push_back({"nccl_buffers", nccl, count, Phase::kSetup, Phase::kStep, Pool::kNonTorch,
                   "NCCL channel buffers per communicator, one per process group (memory-model.md 4.3)"});
}

}  // namespace shardplan
