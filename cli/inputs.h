// The inputs most subcommands share: --model, --cluster (with --nodes/--gpus-per-node),
// --workload (or its flags), --layout and --headroom, loaded into specs with errors that
// name the file, line and column.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "planner/layout.h"
#include "planner/memory_model.h"
#include "planner/model_spec.h"
#include "planner/plan.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan::cli {

// --help of --model: the order in which a reference is resolved (planner/io/model_reader.h).
inline constexpr const char* kModelHelp =
    "a config.json or YAML file, or a model folder holding config.json; else a built-in name "
    "(llama-3.1-70b); else a hub id org/name[@revision] read from the local Hugging Face cache "
    "(never the network)";

struct InputFlags {
  std::string model = "llama-3.1-8b";
  std::string cluster = "dgx-h100";  // empty: no cluster loaded (capacity builds its own)
  std::string workload;  // empty: built from the flags below (default: pretrain)
  int nodes = 0, gpus_per_node = 0;
  std::string task, precision, optimizer;
  int64_t seq_len = 0, global_batch = 0;
  std::string layout;
  std::string headroom = "2 GiB";
  bool json = false;
  std::string html;  // also write a self-contained HTML report here
  // A layout whose stated degrees use fewer GPUs than the cluster has runs on that part of it
  // (estimate); a trainer file's device count always does.
  bool part_of_cluster = false;
};

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  Layout layout;  // as parsed; not yet resolved
  MemoryOptions memory;
  std::vector<std::string> assumed;  // said with the answer (the part of the cluster used)
};

// Adds the flags; `with_layout` for commands that take --layout.
void AddInputFlags(CLI::App* cmd, InputFlags& f, bool with_layout);
StatusOr<Inputs> LoadInputs(const InputFlags& f);
// Builds the Plan skeleton (refs and inputs) from flags and a resolved layout.
Plan MakePlan(const InputFlags& f, const Inputs& in, const Layout& resolved);

// The inputs as the user named them, for a report's header.
nlohmann::json InputsJson(const InputFlags& f);

// Prints a Status to stderr and records its exit code; returns it.
int Fail(const Status& s);

}  // namespace shardplan::cli
