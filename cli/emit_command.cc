// `shardplan emit PLAN --format F --launcher L -o DIR [--force]`: writes the framework
// configs, a launch script and a README for a saved plan into DIR, all or nothing.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/inputs.h"
#include "launch/emit.h"
#include "launch/output_dir.h"
#include "planner/io/plan_file.h"

namespace shardplan::cli {
namespace {

struct EmitFlags {
  std::string plan;
  std::string format = "all";
  std::string launcher = "torchrun";
  std::string output;
  std::string nvme_path = "/local_nvme";
  int master_port = 29500;
  bool force = false;
  bool json = false;
};

nlohmann::json ToJson(const EmitFlags& f, const launch::Emitted& e) {
  nlohmann::json j = {{"dir", f.output}, {"format", f.format}, {"launcher", f.launcher}};
  j["files"] = nlohmann::json::array();
  for (const launch::EmittedFile& file : e.files) j["files"].push_back(file.name);
  j["notes"] = e.notes;
  return j;
}

void PrintText(const EmitFlags& f, const launch::Emitted& e) {
  std::cout << "wrote " << e.files.size() << " files to " << f.output << ":\n";
  for (const launch::EmittedFile& file : e.files) std::cout << "  " << file.name << "\n";
  for (const std::string& n : e.notes) std::cout << "note: " << n << "\n";
  std::cout << "see " << f.output << "/README.md for how to launch\n";
}

void Run(const EmitFlags& f) {
  launch::EmitOptions opt;
  opt.format = *launch::ParseFormat(f.format);      // CLI11 checked the names
  opt.launcher = *launch::ParseLauncher(f.launcher);
  opt.nvme_path = f.nvme_path;
  opt.master_port = f.master_port;
  StatusOr<Plan> plan = LoadPlan(f.plan);
  if (!plan.ok()) return (void)Fail(plan.status());
  StatusOr<launch::Emitted> e = launch::EmitPlan(*plan, opt);
  if (!e.ok()) return (void)Fail(e.status().WithContext(f.plan));
  Status w = launch::WriteOutputDir(f.output, e->files, f.force);
  if (!w.ok()) return (void)Fail(w);
  if (f.json) std::cout << ToJson(f, *e).dump(2) << "\n";
  else PrintText(f, *e);
}

Registrar reg(40, [](CLI::App& app) {
  auto flags = std::make_shared<EmitFlags>();
  CLI::App* cmd = app.add_subcommand("emit", "write framework configs and launch scripts for a plan");
  cmd->add_option("plan", flags->plan, "plan.yaml written by `shardplan plan -o`")->required();
  cmd->add_option("--format", flags->format, "deepspeed|accelerate|torchtitan|megatron|litgpt|all (default all)")
      ->check(CLI::IsMember({"deepspeed", "accelerate", "torchtitan", "megatron", "all"}));
  cmd->add_option("--launcher", flags->launcher, "torchrun|deepspeed|mpirun|slurm (default torchrun)")
      ->check(CLI::IsMember({"torchrun", "deepspeed", "mpirun", "slurm"}));
  cmd->add_option("-o,--output", flags->output, "output directory (created; replaced all or nothing)")->required();
  cmd->add_flag("--force", flags->force, "overwrite files that already exist in the output directory");
  cmd->add_option("--nvme-path", flags->nvme_path, "node-local NVMe mount for offload=nvme (default /local_nvme)");
  cmd->add_option("--master-port", flags->master_port, "rendezvous port (default 29500)")
      ->check(CLI::Range(1, 65535));
  cmd->add_flag("--json", flags->json, "print the written files as JSON on stdout");
  cmd->callback([flags] { Run(*flags); });
});

}  // namespace
}  // namespace shardplan::cli
