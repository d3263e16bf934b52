#include <algorithm>

#include "planner/plan.h"

namespace shardplan {

// The rank order: TP innermost, then CP, then DP, then PP (Megatron's tp-cp-ep-dp-pp,
// ecosystem.md 8.3); nodes hold consecutive ranks, so a TP group stays inside a node when
// tp divides gpus_per_node. Every other group follows from these four. The expert layers
// refold a stage's tp x cp x dp ranks as etp x ep x expert-data, ETP innermost (Megatron-core's
// expert rank generator, order "tp-ep-dp" over the expert degrees; torchtitan's EP borrows
// TP's ranks when etp is 1 and only dp x cp's when etp is tp): an EP group is ep ranks etp apart.
GroupSpan SpanOf(const Layout& l, GroupKind g) {
  const int tp = std::max(1, l.tp), cp = std::max(1, l.cp), dp = std::max(1, l.dp), pp = std::max(1, l.pp);
  const int ep = std::max(1, l.ep), etp = std::max(1, l.etp), shard = std::max(1, l.shard_degree());
  switch (g) {
    case GroupKind::kTp: return {1, tp};
    case GroupKind::kCp: return {tp, cp};
    case GroupKind::kDp: return {tp * cp, dp};
    case GroupKind::kPp: return {tp * cp * dp, pp};
    case GroupKind::kEp: return {etp, ep};
    case GroupKind::kExpertData: return {etp * ep, std::max(1, tp * cp * dp / (etp * ep))};
    case GroupKind::kDataContext: return {tp, dp * cp};
    case GroupKind::kShard: return {tp * cp, shard};
    case GroupKind::kShardContext: return {tp, shard * cp};
    case GroupKind::kReplicate: return {tp * cp * shard, std::max(1, dp / shard)};
  }
  return {};
}

namespace {

// A rank's place among its stage's tp x cp x dp ranks, the order the expert layers refold.
int ExpertIndex(const Layout& l, int rank) { return rank % std::max(1, l.tp * l.cp * l.dp); }

}  // namespace

std::vector<RankPlace> MakeRankMap(const ClusterSpec& c, const Layout& l) {
  std::vector<RankPlace> map;
  const int world = l.world();
  const int gpn = c.gpus_per_node > 0 ? c.gpus_per_node : 1;
  const int shard = l.shard_degree() > 0 ? l.shard_degree() : 1;
  auto coordinate = [&](int r, GroupKind g) {
    const GroupSpan s = SpanOf(l, g);
    return (r / s.stride) % s.size;
  };
  map.reserve(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    RankPlace p;
    p.rank = r;
    p.node = r / gpn;
    p.local_gpu = r % gpn;
    p.tp = coordinate(r, GroupKind::kTp);
    p.cp = coordinate(r, GroupKind::kCp);
    p.dp = coordinate(r, GroupKind::kDp);
    p.pp = coordinate(r, GroupKind::kPp);
    p.ep = coordinate(r, GroupKind::kEp);
    p.shard = p.dp % shard;
    map.push_back(p);
  }
  return map;
}

std::vector<int> GroupOf(const ClusterSpec& c, const Layout& l, int rank, std::string_view kind) {
  std::vector<RankPlace> map = MakeRankMap(c, l);
  const int etp = std::max(1, l.etp), ep = std::max(1, l.ep);
  const RankPlace& me = map.at(static_cast<size_t>(rank));
  const int shard = l.shard_degree() > 0 ? l.shard_degree() : 1;
  std::vector<int> out;
  for (const RankPlace& p : map) {
    bool same_stage = p.pp == me.pp;
    bool in = false;
    if (kind == "tp") in = same_stage && p.dp == me.dp && p.cp == me.cp;
    else if (kind == "cp") in = same_stage && p.dp == me.dp && p.tp == me.tp;
    else if (kind == "dp") in = same_stage && p.cp == me.cp && p.tp == me.tp;
    else if (kind == "dp_cp") in = same_stage && p.tp == me.tp;
    else if (kind == "shard_cp") in = same_stage && p.tp == me.tp && p.dp / shard == me.dp / shard;
    else if (kind == "pp") in = p.dp == me.dp && p.cp == me.cp && p.tp == me.tp;
    else if (kind == "ep")
      in = same_stage && ExpertIndex(l, p.rank) % etp == ExpertIndex(l, me.rank) % etp &&
           ExpertIndex(l, p.rank) / (etp * ep) == ExpertIndex(l, me.rank) / (etp * ep);
    else if (kind == "shard") in = same_stage && p.cp == me.cp && p.tp == me.tp && p.dp / shard == me.dp / shard;
    else if (kind == "replicate") in = same_stage && p.cp == me.cp && p.tp == me.tp && p.shard == me.shard;
    if (in) out.push_back(p.rank);
  }
  return out;
}

}  // namespace shardplan
