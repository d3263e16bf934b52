// `shardplan topology discover [-o cluster.yaml] [--from-topo FILE --from-query FILE] [--json]`:
// the local node's GPUs as a cluster YAML that `shardplan plan --cluster` reads. With the
// --from-* flags it reads nvidia-smi outputs captured on a GPU node instead of this machine.
// stdout: the YAML (or, with -o, a summary; with --json, JSON); notes go to stderr.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/inputs.h"
#include "planner/io/atomic_file.h"
#include "topology/cluster_writer.h"
#include "topology/discover.h"

namespace shardplan::cli {
namespace {

struct DiscoverFlags {
  std::string output;      // -o: write the YAML here
  std::string from_topo;   // captured `nvidia-smi topo -m`
  std::string from_query;  // captured `nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id ...`
  std::string name;        // cluster name; default: host name, or "discovered" for captures
  bool json = false;
};

nlohmann::json Link(const LinkSpec& l) {
  if (l.fabric.empty()) return nullptr;  // unknown: left to the reader's default
  return {{"fabric", l.fabric}, {"bandwidth", l.bandwidth}, {"latency_s", l.latency_s},
          {"nics_per_node", l.nics_per_node}};
}

nlohmann::json ToJson(const Discovery& d, const std::string& output) {
  const ClusterSpec& c = d.cluster;
  nlohmann::json gpus = nlohmann::json::array(), links = nlohmann::json::array();
  for (const DiscoveredGpu& g : d.gpus) {
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"memory_bytes", g.memory_bytes},
                    {"pci_bus_id", g.pci_bus_id}, {"numa_node", g.numa_node < 0 ? nlohmann::json() : nlohmann::json(g.numa_node)},
                    {"cpu_affinity", g.cpu_affinity}, {"nvlinks", g.nvlinks}});
    nlohmann::json row = nlohmann::json::array();
    for (const TopoLink& l : d.links[g.index]) row.push_back(LinkName(l));
    links.push_back(row);
  }
  nlohmann::json cluster = {
      {"name", c.name}, {"nodes", c.nodes}, {"gpus_per_node", c.gpus_per_node},
      {"gpu", {{"name", c.gpu.name}, {"display_name", c.gpu.display_name}, {"memory_bytes", c.gpu.memory_bytes},
               {"bf16_flops", c.gpu.bf16_flops}, {"memory_bandwidth", c.gpu.memory_bandwidth},
               {"nvlink_bandwidth", c.gpu.nvlink_bandwidth}, {"compute_capability", c.gpu.compute_capability}}},
      {"intra_node", Link(c.intra_node)}, {"inter_node", Link(c.inter_node)},
      {"host_memory_bytes", c.host_memory_bytes}, {"pcie_bandwidth", c.pcie_bandwidth}};
  return {{"source", d.source},
          {"driver_version", d.driver_version},
          {"cluster", cluster},
          {"gpus", gpus},
          {"links", links},
          {"nvlink_islands", d.nvlink_islands},
          {"nics", d.nics},
          {"notes", d.notes},
          {"output", output.empty() ? nlohmann::json() : nlohmann::json(output)}};
}

int Run(const DiscoverFlags& f) {
  DiscoverOptions options;
  options.name = f.name;
  // Steps on stderr only for a person watching a terminal; files and pipes stay quiet.
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  bool shown = false;
  std::function<void(const std::string&)> progress;
  if (tty && f.from_topo.empty()) {
    progress = [&](const std::string& what) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\rdiscovering: %s (%.1f s)\033[K", what.c_str(), s);
      shown = true;
    };
  }
  StatusOr<Discovery> d =
      f.from_topo.empty() ? DiscoverLocal(options, progress) : DiscoverFromFiles(f.from_topo, f.from_query, options);
  if (shown) std::fprintf(stderr, "\r\033[K");
  if (!d.ok()) return Fail(d.status().WithContext("topology discover"));
  ClusterYamlOptions yaml_options;
  yaml_options.header = DiscoveryComments(*d);
  yaml_options.source = "shardplan topology discover: " + d->source;
  std::string yaml = WriteClusterYaml(d->cluster, yaml_options);
  for (const std::string& note : d->notes) std::cerr << "note: " << note << "\n";
  if (!f.output.empty()) {
    Status written = WriteFileAtomically(f.output, yaml);
    if (!written.ok()) return Fail(written);
  }
  if (f.json) std::cout << ToJson(*d, f.output).dump(2) << "\n";
  else if (f.output.empty()) std::cout << yaml;
  else std::cout << DescribeDiscovery(*d) << "wrote " << f.output << "\n";
  return 0;
}

Registrar reg(61, [](CLI::App& app) {
  auto flags = std::make_shared<DiscoverFlags>();
  CLI::App* topo = Group(app, "topology", "cluster topologies: show a cluster file, discover the local machine");
  CLI::App* cmd = topo->add_subcommand(
      "discover", "describe this node's GPUs (NVML, else nvidia-smi) as a cluster YAML for --cluster");
  cmd->add_option("-o,--output", flags->output, "write the cluster YAML to this file (atomically) instead of stdout");
  CLI::Option* topo_file = cmd->add_option(
      "--from-topo", flags->from_topo, "read captured `nvidia-smi topo -m` output instead of this machine");
  CLI::Option* query_file = cmd->add_option(
      "--from-query", flags->from_query,
      "read captured `nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader,nounits`");
  topo_file->needs(query_file);
  query_file->needs(topo_file);
  cmd->add_option("--name", flags->name, "the cluster's name (default: the host name; \"discovered\" for captures)");
  cmd->add_flag("--json", flags->json, "print the discovery as JSON on stdout");
  cmd->callback([flags] { ExitCode() = Run(*flags); });
});

}  // namespace
}  // namespace shardplan::cli
