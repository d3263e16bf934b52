#include "validate/manifest.h"

#include <algorithm>
#include <string_view>

#include "validate/collective_plan.h"

namespace shardplan::validate {

const std::vector<int>* RankManifest::Group(const std::string& kind) const {
  for (const auto& [k, ranks] : groups) {
    if (k == kind) return &ranks;
  }
  return nullptr;
}

std::vector<Allocation> AllocationsFromTerms(const std::vector<MemoryTerm>& terms) {
  std::vector<Allocation> out;
  for (const MemoryTerm& t : terms) {
    if (t.bytes <= 0) continue;
    // Paged optimizer states and offloaded activations live in host memory, and blocks the
    // caching allocator keeps once freed are no tensor's: nothing to allocate on the device.
    if (!AllocatedOnGpu(t.pool)) continue;
    // A term of more tensors than bytes cannot be split into non-empty pieces.
    const int64_t count = std::clamp<int64_t>(t.tensors, 1, t.bytes);
    const int64_t base = t.bytes / count;
    const int64_t extra = t.bytes % count;  // spread over the first pieces: the sum stays exact
    for (int64_t i = 0; i < count; ++i) {
      Allocation a;
      a.term = t.name;
      a.index = i;
      a.count = count;
      a.bytes = base + (i < extra ? 1 : 0);
      a.first = t.first;
      a.last = t.last;
      a.pool = t.pool;
      out.push_back(std::move(a));
    }
  }
  return out;
}

std::array<int64_t, kPhaseCount> LiveBytesByPhase(const std::vector<Allocation>& allocations) {
  std::array<int64_t, kPhaseCount> live{};
  for (const Allocation& a : allocations) {
    for (int p = static_cast<int>(a.first); p <= static_cast<int>(a.last); ++p) {
      live[static_cast<size_t>(p)] += a.bytes;
    }
  }
  return live;
}

// Name fragments of the terms a collective's buffer would be in a real run.
static std::vector<std::string_view> PreferredTerms(const CollectiveStep& c) {
  if (c.group == "tp" || c.group == "cp" || c.group == "pp" || c.group == "ep") {
    return {"activation"};
  }
  if (c.kind == CollectiveKind::kAllGather) return {"gather", "unshard", "prefetch", "param"};
  return {"bucket", "grad"};
}

static bool Matches(const std::string& term, const std::vector<std::string_view>& keys) {
  for (std::string_view k : keys) {
    if (term.find(k) != std::string::npos) return true;
  }
  return false;
}

// The smallest live torch allocation of at least `need` bytes, among those whose term
// matches `keys` (or among all when `keys` is empty); -1 when none.
static int SmallestFit(const std::vector<Allocation>& allocations, Phase phase, int64_t need,
                       const std::vector<std::string_view>& keys) {
  int best = -1;
  for (size_t i = 0; i < allocations.size(); ++i) {
    const Allocation& a = allocations[i];
    if (a.pool != Pool::kTorch || !a.LiveAt(phase) || a.bytes < need) continue;
    if (!keys.empty() && !Matches(a.term, keys)) continue;
    if (best < 0 || a.bytes < allocations[static_cast<size_t>(best)].bytes) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

void AssignBuffers(const std::vector<Allocation>& allocations,
                   std::vector<CollectiveStep>* collectives) {
  for (CollectiveStep& c : *collectives) {
    const int64_t need = BufferBytes(c.kind, c.size_bytes);
    c.buffer = SmallestFit(allocations, c.phase, need, PreferredTerms(c));
    if (c.buffer < 0) c.buffer = SmallestFit(allocations, c.phase, need, {});
  }
}

static std::vector<std::pair<std::string, std::vector<int>>> GroupsUsed(
    const Plan& plan, int rank, const std::vector<CollectiveStep>& collectives) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const CollectiveStep& c : collectives) {
    bool seen = false;
    for (const auto& g : groups) seen = seen || g.first == c.group;
    if (!seen) groups.emplace_back(c.group, GroupOf(plan.cluster, plan.layout, rank, c.group));
  }
  return groups;
}

StatusOr<RankManifest> BuildManifest(const Plan& plan, int rank) {
  const std::vector<RankPlace> map = MakeRankMap(plan.cluster, plan.layout);
  if (rank < 0 || rank >= static_cast<int>(map.size())) {
    return Status::BadInput("rank " + std::to_string(rank) + " is outside the plan's " +
                            std::to_string(map.size()) + " ranks");
  }
  RankManifest m;
  m.rank = rank;
  m.place = map[static_cast<size_t>(rank)];
  m.stage = m.place.pp;
  if (m.stage >= static_cast<int>(plan.memory.stages.size())) {
    return Status::BadInput("rank " + std::to_string(rank) + " is on pipeline stage " +
                            std::to_string(m.stage) + " but the memory estimate has " +
                            std::to_string(plan.memory.stages.size()) + " stages");
  }
  const StageMemory& stage = plan.memory.stages[static_cast<size_t>(m.stage)];
  m.allocations = AllocationsFromTerms(stage.terms);
  m.live_bytes = LiveBytesByPhase(m.allocations);
  m.collectives = PlanCollectives(plan, m.place);
  AssignBuffers(m.allocations, &m.collectives);
  m.groups = GroupsUsed(plan, rank, m.collectives);
  m.planned_device_peak = stage.required_peak;
  m.planned_peak_phase = stage.peak_phase;
  m.capacity_bytes = plan.memory.capacity_bytes > 0 ? plan.memory.capacity_bytes
                                                    : UsableMemory(plan.cluster.gpu);
  m.headroom_bytes = plan.memory.headroom_required_bytes;
  return m;
}

}  // namespace shardplan::validate
