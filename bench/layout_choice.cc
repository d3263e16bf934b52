// Layout choice against published production runs (bench/data/layout_cases.yaml): the
// published layout must be among the plans that fit, and the top plan must be predicted no
// slower than it. Prints the rank of the published layout among every feasible plan.
// Exit 0 when every case holds, 1 when one does not, 2 on bad input.
#include <cstdio>
#include <string>

#include "planner/io/model_reader.h"
#include "planner/search.h"
#include "topology/cluster_reader.h"

namespace shardplan {
namespace {

struct Case {
  std::string id, published;
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
};

StatusOr<Case> ReadCase(const Document& doc, const YAML::Node& n) {
  Case c;
  SP_RETURN_IF_ERROR(doc.CheckKeys(n, {"id", "source", "model", "cluster", "workload", "published"}));
  c.id = n["id"].as<std::string>();
  c.published = n["published"].as<std::string>();
  if (n["model"].IsScalar()) {
    SP_ASSIGN_OR_RETURN(c.model, LoadModel(n["model"].Scalar()));
  } else {
    SP_ASSIGN_OR_RETURN(c.model, ParseModelNode(doc, n["model"], c.id));
  }
  const YAML::Node cl = n["cluster"];
  if (cl["builtin"].IsDefined()) {
    SP_ASSIGN_OR_RETURN(c.cluster, LoadCluster(cl["builtin"].Scalar()));
    c.cluster.nodes = cl["nodes"].as<int>();
  } else {
    SP_ASSIGN_OR_RETURN(c.cluster, ParseClusterNode(doc, cl));
  }
  const YAML::Node w = n["workload"];
  c.workload.seq_len = w["seq_len"].as<int64_t>();
  c.workload.global_batch = w["global_batch"].as<int64_t>();
  return c;
}

// The best feasible completion of the published keys, and the full search.
bool Run(const Case& c) {
  SearchOptions pub;
  auto fixed = ParseLayout(c.published);
  if (!fixed.ok()) {
    std::printf("%s: %s\n", c.id.c_str(), fixed.status().message().c_str());
    return false;
  }
  pub.fixed = *fixed;
  pub.top_k = 1;
  SearchResult p = Search(c.model, c.workload, c.cluster, pub);
  SearchOptions all;
  all.top_k = 1000000;  // every feasible plan, to rank the published one
  SearchResult r = Search(c.model, c.workload, c.cluster, all);
  if (p.plans.empty() || r.plans.empty()) {
    std::printf("%-34s published layout %s: %s\n", c.id.c_str(), c.published.c_str(),
                p.plans.empty() ? "does NOT fit in shardplan's model" : "fits, but the full search found nothing");
    if (!p.plans.empty() || !p.binding.empty()) std::printf("    %s\n", p.binding.c_str());
    return false;
  }
  const double pub_tps = p.plans.front().time.tokens_per_second_per_gpu;
  const double top_tps = r.plans.front().time.tokens_per_second_per_gpu;
  int64_t rank = 1;
  for (const Candidate& x : r.plans) rank += x.time.tokens_per_second_per_gpu > pub_tps * (1 + 1e-9);
  const bool ok = top_tps >= pub_tps * (1 - 1e-9);
  std::printf("%-34s published fits: rank %lld of %zu feasible; published %.0f tok/s/GPU, top %.0f (%+.1f%%) %s\n",
              c.id.c_str(), static_cast<long long>(rank), r.plans.size(), pub_tps, top_tps,
              100 * (top_tps / pub_tps - 1), ok ? "" : "TOP IS SLOWER");
  std::printf("    published: %s\n    top:       %s\n", FormatLayout(p.plans.front().layout).c_str(),
              FormatLayout(r.plans.front().layout).c_str());
  return ok;
}

}  // namespace
}  // namespace shardplan

int main(int argc, char** argv) {
  using namespace shardplan;
  std::string path = argc > 1 ? argv[1] : std::string(SHARDPLAN_SOURCE_DIR) + "/bench/data/layout_cases.yaml";
  auto doc = Document::Load(path);
  if (!doc.ok()) {
    std::fprintf(stderr, "layout_choice: %s\n", doc.status().message().c_str());
    return 2;
  }
  int held = 0, total = 0;
  for (const auto& n : doc->root()["cases"]) {
    auto c = Guarded(*doc, [&] { return ReadCase(*doc, n); });
    if (!c.ok()) {
      std::fprintf(stderr, "layout_choice: %s\n", c.status().message().c_str());
      return 2;
    }
    ++total;
    held += Run(*c);
  }
  std::printf("layout choice: %d of %d published layouts fit and are matched or beaten by the top plan\n", held, total);
  return held == total ? 0 : 1;
}
