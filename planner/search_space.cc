#include "planner/search_space.h"

#include <algorithm>

#include "planner/quantization.h"

namespace shardplan {
namespace {

std::vector<int> PowersOfTwoUpTo(int limit) {
  std::vector<int> v;
  for (int x = 1; x <= limit; x *= 2) v.push_back(x);
  return v;
}

std::vector<int> Divisors(int n, int limit) {
  std::vector<int> v;
  for (int d = 1; d <= n && d <= limit; ++d)
    if (n % d == 0) v.push_back(d);
  return v;
}

bool Uses(Framework f, LayoutKey key) {
  switch (key) {
    case kKeyTp:
    case kKeyPp: return f != Framework::kFsdp;
    case kKeyCp:
    case kKeyVpp:
    case kKeyEp: return f == Framework::kMegatron || f == Framework::kTorchtitan;
    default: return true;
  }
}

std::vector<int> ZeroStages(Framework f, int dp, int pp) {
  switch (f) {
    case Framework::kDeepSpeed: return pp > 1 ? std::vector<int>{0, 1} : dp > 1 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0, 3};
    case Framework::kFsdp: return dp > 1 ? std::vector<int>{0, 2, 3} : std::vector<int>{0, 3};
    case Framework::kMegatron: return {0, 1};  // the distributed optimizer also spans cp
    case Framework::kTorchtitan: return {0, 3};
  }
  return {0};
}

struct OffloadPair {
  Offload optimizer, params;
};

std::vector<OffloadPair> Offloads(Framework f, int zero, bool nvme) {
  std::vector<OffloadPair> v = {{Offload::kNone, Offload::kNone}};
  if (f == Framework::kDeepSpeed && zero >= 1) {
    v.push_back({Offload::kCpu, Offload::kNone});
    if (nvme) v.push_back({Offload::kNvme, Offload::kNone});
    if (zero == 3) {
      v.push_back({Offload::kCpu, Offload::kCpu});
      if (nvme) v.push_back({Offload::kNvme, Offload::kNvme});
    }
  }
  if ((f == Framework::kFsdp || f == Framework::kTorchtitan) && zero == 3) v.push_back({Offload::kCpu, Offload::kCpu});
  if (f == Framework::kMegatron && zero == 1) v.push_back({Offload::kCpu, Offload::kNone});
  return v;
}

}  // namespace

SearchSpace::SearchSpace(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const SearchOptions& opt)
    : m_(m), w_(w), c_(c), opt_(opt) {}

std::vector<int> SearchSpace::Values(LayoutKey key, int fixed_value, std::vector<int> candidates) const {
  if (opt_.fixed.fixed & key) return {fixed_value};
  return candidates;
}

void SearchSpace::AddTraining(Framework f, std::vector<Layout>& out) const {
  const Layout& fx = opt_.fixed;
  const int world = c_.world_size();
  std::vector<int> tps = Uses(f, kKeyTp) ? Values(kKeyTp, fx.tp, PowersOfTwoUpTo(c_.gpus_per_node)) : std::vector<int>{1};
  std::vector<int> cps = Uses(f, kKeyCp) ? Values(kKeyCp, fx.cp, PowersOfTwoUpTo(16)) : std::vector<int>{1};
  for (int tp : tps) {
    if (m_.heads % tp != 0) continue;
    for (int cp : cps) {
      if (world % (tp * cp) != 0 || (cp > 1 && w_.seq_len % (2 * cp) != 0)) continue;
      const int rest = world / (tp * cp);
      std::vector<int> pps = Uses(f, kKeyPp) ? Values(kKeyPp, fx.pp, Divisors(rest, static_cast<int>(m_.layers))) : std::vector<int>{1};
      for (int pp : pps) {
        if (rest % pp != 0) continue;
        const int dp = rest / pp;
        if ((fx.fixed & kKeyDp) && dp != fx.dp) continue;
        if (w_.global_batch < dp) continue;  // every replica needs a sequence per step
        std::vector<int> vpps = {1};
        if (Uses(f, kKeyVpp) && pp > 1) vpps = Values(kKeyVpp, fx.vpp, {1, 2, 4, 8});
        std::vector<int> eps = {1};
        if (m_.is_moe() && Uses(f, kKeyEp)) eps = Values(kKeyEp, fx.ep, Divisors(static_cast<int>(m_.experts), 64));
        std::vector<int> zeros = Values(kKeyZero, fx.zero, ZeroStages(f, dp, pp));
        for (int vpp : vpps) {
          if (vpp > 1 && m_.layers < static_cast<int64_t>(pp) * vpp) continue;
          for (int ep : eps) {
            if ((dp * cp * tp) % ep != 0) continue;
            for (int zero : zeros) {
              std::vector<int> groups = {0};
              if (zero == 3 && dp > c_.gpus_per_node && dp % c_.gpus_per_node == 0 && f != Framework::kMegatron)
                groups.push_back(c_.gpus_per_node);  // HSDP / hpZ inside a node
              groups = Values(kKeyShardGroup, fx.shard_group, groups);
              for (int sg : groups) {
                for (const OffloadPair& off : Offloads(f, zero, c_.nvme_bytes > 0)) {
                  if ((fx.fixed & kKeyOffloadOptimizer) && off.optimizer != fx.offload_optimizer) continue;
                  if ((fx.fixed & kKeyOffloadParams) && off.params != fx.offload_params) continue;
                  Layout l = fx;
                  l.framework = f;
                  if (!(fx.fixed & kKeyFramework)) l.stack = DefaultStack(f, w_, c_);
                  l.tp = tp, l.cp = cp, l.pp = pp, l.dp = dp, l.vpp = vpp, l.ep = ep, l.zero = zero;
                  l.shard_group = sg;
                  l.sp = tp > 1 && (f == Framework::kMegatron || f == Framework::kTorchtitan);
                  if (fx.fixed & kKeySp) l.sp = fx.sp;
                  l.offload_optimizer = off.optimizer;
                  l.offload_params = off.params;
                  l.fixed |= kKeyFramework | kKeyTp | kKeyCp | kKeyPp | kKeyDp | kKeyVpp | kKeyEp | kKeyZero |
                             kKeyShardGroup | kKeyOffloadOptimizer | kKeyOffloadParams | kKeySp;
                  out.push_back(l);
                }
              }
            }
          }
        }
      }
    }
  }
}

void SearchSpace::AddInference(std::vector<Layout>& out) const {
  const Layout& fx = opt_.fixed;
  const int world = c_.world_size();
  const Dtype served = ServedFormat(m_, w_.inference.weights);
  std::vector<Dtype> weights = {served};
  std::vector<Dtype> kvs = {w_.inference.kv_cache};
  if (!(fx.fixed & kKeyWeights))
    for (Dtype d : {Dtype::kFp8, Dtype::kInt8, Dtype::kInt4})
      if (DtypeBytes(d) < DtypeBytes(served) && (d != Dtype::kFp8 || c_.gpu.fp8_flops > 0)) weights.push_back(d);
  if (!(fx.fixed & kKeyKvCache) && w_.inference.kv_cache != Dtype::kFp8) kvs.push_back(Dtype::kFp8);
  for (int tp : Values(kKeyTp, fx.tp, PowersOfTwoUpTo(c_.gpus_per_node))) {
    if (m_.heads % tp != 0 || world % tp != 0) continue;
    for (int pp : Values(kKeyPp, fx.pp, Divisors(world / tp, static_cast<int>(std::min<int64_t>(m_.layers, 64))))) {
      if ((world / tp) % pp != 0) continue;
      for (Dtype wt : (fx.fixed & kKeyWeights) ? std::vector<Dtype>{fx.weights} : weights)
        for (Dtype kv : (fx.fixed & kKeyKvCache) ? std::vector<Dtype>{fx.kv_cache} : kvs) {
          Layout l = fx;
          l.tp = tp, l.pp = pp, l.dp = world / (tp * pp);
          l.weights = wt, l.kv_cache = kv;
          l.fixed |= kKeyTp | kKeyPp | kKeyDp | kKeyWeights | kKeyKvCache;
          out.push_back(l);
        }
    }
  }
}

std::vector<Layout> SearchSpace::Groups() const {
  std::vector<Layout> out;
  if (!w_.training()) {
    AddInference(out);
    return out;
  }
  for (Framework f : opt_.frameworks) {
    if ((opt_.fixed.fixed & kKeyFramework) && f != opt_.fixed.framework) continue;
    AddTraining(f, out);
  }
  return out;
}

std::vector<int> SearchSpace::MicroBatches(const Layout& g) const {
  if (opt_.fixed.fixed & kKeyMbs) return {opt_.fixed.mbs};
  std::vector<int> v;
  const int64_t per_replica = w_.global_batch / std::max(1, g.dp);
  for (int b = 1; b <= 64 && b <= per_replica; b *= 2)
    if (per_replica % b == 0 && b >= opt_.min_mbs) v.push_back(b);
  if (v.empty() && opt_.min_mbs <= 1) v.push_back(1);
  return v;  // empty when no micro-batch of at least min_mbs divides the replica's batch
}

std::vector<int> SearchSpace::Batches(const Layout& g) const {
  if (opt_.fixed.fixed & kKeyBatch) return {opt_.fixed.batch};
  const int64_t want = std::max<int64_t>(1, (w_.inference.batch + g.dp - 1) / g.dp);
  std::vector<int> v = {static_cast<int>(want)};
  for (int64_t b = want / 2; b >= 1; b /= 2) v.push_back(static_cast<int>(b));
  return v;
}

}  // namespace shardplan
