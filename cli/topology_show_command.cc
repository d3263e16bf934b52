// `shardplan topology show C`: a cluster's summary.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/inputs.h"
#include "topology/cluster_reader.h"

namespace shardplan::cli {
namespace {

struct ShowFlags {
  std::string cluster;
  int nodes = 0;
  bool json = false;
};

Registrar reg(60, [](CLI::App& app) {
  auto flags = std::make_shared<ShowFlags>();
  CLI::App* topo = Group(app, "topology", "cluster topologies: show a cluster file, discover the local machine");
  CLI::App* cmd = topo->add_subcommand("show", "print a cluster's summary");
  cmd->add_option("cluster", flags->cluster, "built-in cluster name or a cluster YAML path")->required();
  cmd->add_option("--nodes", flags->nodes, "override the node count");
  cmd->add_flag("--json", flags->json, "print JSON on stdout");
  cmd->callback([flags] {
    auto c = LoadCluster(flags->cluster);
    if (!c.ok()) return (void)Fail(c.status());
    if (flags->nodes > 0) c->nodes = flags->nodes;
    if (!flags->json) {
      std::cout << DescribeCluster(*c);
      return;
    }
    nlohmann::json j = {{"name", c->name}, {"nodes", c->nodes}, {"gpus_per_node", c->gpus_per_node},
                        {"gpus", c->world_size()}, {"gpu", {{"name", c->gpu.name}, {"display_name", c->gpu.display_name},
                        {"memory_bytes", c->gpu.memory_bytes}, {"allocatable_bytes", UsableMemory(c->gpu)},
                        {"bf16_flops", c->gpu.bf16_flops},
                        {"memory_bandwidth", c->gpu.memory_bandwidth}, {"nvlink_bandwidth", c->gpu.nvlink_bandwidth},
                        {"tdp_watts", c->gpu.tdp_watts},
                        {"power_limit_watts", c->gpu.power_limit_watts > 0 ? c->gpu.power_limit_watts : c->gpu.tdp_watts}}},
                        {"intra_node", {{"fabric", c->intra_node.fabric}, {"bandwidth", c->intra_node.bandwidth},
                                        {"latency_s", c->intra_node.latency_s}}},
                        {"inter_node", {{"fabric", c->inter_node.fabric}, {"bandwidth", c->inter_node.bandwidth},
                                        {"nics_per_node", c->inter_node.nics_per_node},
                                        {"latency_s", c->inter_node.latency_s}}},
                        {"host_memory_bytes", c->host_memory_bytes}, {"pcie_bandwidth", c->pcie_bandwidth},
                        {"nvme_bytes", c->nvme_bytes}, {"nvme_bandwidth", c->nvme_bandwidth}};
    std::cout << j.dump(2) << "\n";
  });
});

}  // namespace
}  // namespace shardplan::cli
