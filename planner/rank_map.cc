#include "planner/plan.h"

namespace shardplan {

std::vector<RankPlace> MakeRankMap(const ClusterSpec& c, const Layout& l) {
  std::vector<RankPlace> map;
  const int world = l.world();
  const int gpn = c.gpus_per_node > 0 ? c.gpus_per_node : 1;
  const int shard = l.shard_degree() > 0 ? l.shard_degree() : 1;
  map.reserve(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    RankPlace p;
    p.rank = r;
    p.node = r / gpn;
    p.local_gpu = r % gpn;
    int rest = r;
    p.tp = rest % l.tp;
    rest /= l.tp;
    p.cp = rest % l.cp;
    rest /= l.cp;
    p.dp = rest % l.dp;
    rest /= l.dp;
    p.pp = rest;
    // Experts are spread over dp x cp; the EP group holds consecutive (dp, cp) positions.
    const int dpcp = p.dp * l.cp + p.cp;
    p.ep = l.ep > 0 ? dpcp % l.ep : 0;
    p.shard = p.dp % shard;
    map.push_back(p);
  }
  return map;
}

std::vector<int> GroupOf(const ClusterSpec& c, const Layout& l, int rank, std::string_view kind) {
  std::vector<RankPlace> map = MakeRankMap(c, l);
  const RankPlace& me = map.at(static_cast<size_t>(rank));
  const int shard = l.shard_degree() > 0 ? l.shard_degree() : 1;
  std::vector<int> out;
  for (const RankPlace& p : map) {
    bool same_stage = p.pp == me.pp;
    bool in = false;
    if (kind == "tp") in = same_stage && p.dp == me.dp && p.cp == me.cp;
    else if (kind == "cp") in = same_stage && p.dp == me.dp && p.tp == me.tp;
    else if (kind == "dp") in = same_stage && p.cp == me.cp && p.tp == me.tp;
    else if (kind == "pp") in = p.dp == me.dp && p.cp == me.cp && p.tp == me.tp;
    else if (kind == "ep")
      in = same_stage && p.tp == me.tp && (p.dp * l.cp + p.cp) / l.ep == (me.dp * l.cp + me.cp) / l.ep;
    else if (kind == "shard") in = same_stage && p.cp == me.cp && p.tp == me.tp && p.dp / shard == me.dp / shard;
    else if (kind == "replicate") in = same_stage && p.cp == me.cp && p.tp == me.tp && p.shard == me.shard;
    if (in) out.push_back(p.rank);
  }
  return out;
}

}  // namespace shardplan
