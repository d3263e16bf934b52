#include "launch/launch_script.h"

#include <fmt/format.h>

#include <vector>

#include "launch/litgpt_config.h"

namespace shardplan::launch {
namespace {

using Words = std::vector<std::string>;

// What each rank runs: a script or a module plus its arguments, as shell words.
struct Program {
  bool module = false;   // torchtitan runs as `-m torchtitan.train`
  std::string target;    // "\"$TRAIN_SCRIPT\"" or a module name
  Words args;
  std::string default_script;  // TRAIN_SCRIPT's default; empty for modules
  std::string setup;           // lines run before launching (sourcing the Megatron args)
};

Program ProgramFor(Format entry) {
  switch (entry) {
    case Format::kTorchtitan:
      return {true, "torchtitan.train", {"--job.config_file torchtitan.toml"}, "", ""};
    case Format::kMegatron:
      return {false, "\"$TRAIN_SCRIPT\"", {"\"${MEGATRON_ARGS[@]}\""}, "pretrain_gpt.py",
              "# shellcheck source=megatron_args.sh\nsource megatron_args.sh\n"};
    case Format::kAccelerate:
      return {false, "\"$TRAIN_SCRIPT\"", {}, "train.py", ""};
    case Format::kLitgpt:  // the command is the plan's (LaunchScripts); Fabric joins the launcher's ranks
      return {true, "litgpt", {"--config litgpt.yaml"}, "", ""};
    default:  // deepspeed.add_config_arguments() flags
      return {false, "\"$TRAIN_SCRIPT\"", {"--deepspeed", "--deepspeed_config deepspeed.json"},
              "train.py", ""};
  }
}

// The program as the words after `python` (or after torchrun / deepspeed, whose module flag
// is spelled differently), with the script's own arguments forwarded last.
Words ProgramWords(const Program& p, std::string_view module_flag) {
  Words w;
  if (p.module) w.push_back(fmt::format("{} {}", module_flag, p.target));
  else w.push_back(p.target);
  for (const std::string& a : p.args) w.push_back(a);
  w.push_back("\"$@\"");
  return w;
}

std::string Cmd(const Words& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i ? " \\\n  " : "") + words[i];
  return out + "\n";
}

void Append(Words& w, const Words& more) { w.insert(w.end(), more.begin(), more.end()); }

std::string Header(const Plan& plan, const JobShape& s, bool sbatch, std::string_view usage) {
  std::string h = sbatch ? "#!/bin/bash\n" : "#!/usr/bin/env bash\n";
  if (sbatch) {
    h += fmt::format("#SBATCH --job-name=shardplan-{}\n", SafeName(plan.model.name));
    h += fmt::format("#SBATCH --nodes={}\n", s.nodes);
    h += "#SBATCH --ntasks-per-node=1\n";  // torchrun / accelerate start the per-GPU processes
    h += fmt::format("#SBATCH --gpus-per-node={}\n", s.procs_per_node);
    h += "#SBATCH --exclusive\n";          // every CPU of the node for the GPU processes
    h += "#SBATCH --output=%x-%j.out\n";
  }
  h += fmt::format("# {} on {} node(s) x {} GPU(s) ({}), layout {}\n", plan.model.name, s.nodes,
                   s.procs_per_node, plan.cluster.gpu.name, LayoutSummary(plan.layout));
  h += fmt::format("# Written by shardplan emit. {}\n", usage);
  h += "# shellcheck source-path=SCRIPTDIR\nset -euo pipefail\n";
  return h;
}

// Resolves TRAIN_SCRIPT against the caller's directory, then runs from the config directory
// so the configs' relative paths (deepspeed_config_file, hostfile) resolve.
std::string Prologue(const Program& p, bool sbatch) {
  std::string t = sbatch ? "here=\"${SLURM_SUBMIT_DIR:-$PWD}\"\n"
                         : "here=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n";
  if (!p.default_script.empty()) {
    t += fmt::format("TRAIN_SCRIPT=\"${{TRAIN_SCRIPT:-{}}}\"\n", p.default_script);
    t += "case \"$TRAIN_SCRIPT\" in /*) ;; *) TRAIN_SCRIPT=\"$PWD/$TRAIN_SCRIPT\" ;; esac\n";
  }
  return t + "cd \"$here\"\n" + p.setup;
}

std::string Environment(const Plan& plan, Format entry) {
  std::string e = "# Local rank i drives GPU i in nvidia-smi (PCI bus) order, as the plan's rank map.\n";
  e += "export CUDA_DEVICE_ORDER=PCI_BUS_ID\n";
  e += "export NCCL_DEBUG=\"${NCCL_DEBUG:-WARN}\"\n";
  e += "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1\n";
  if (entry == Format::kMegatron && (plan.layout.tp > 1 || plan.layout.cp > 1))
    e += "export CUDA_DEVICE_MAX_CONNECTIONS=1  # Megatron orders TP/CP comm before compute\n";
  return e;
}

std::string Rendezvous(const JobShape& s, const LaunchOptions& opt, std::string_view addr_default) {
  std::string r;
  if (addr_default.empty())
    r += fmt::format("MASTER_ADDR=\"${{MASTER_ADDR:?set MASTER_ADDR to node 0 of {}}}\"\n", s.nodes);
  else
    r += fmt::format("MASTER_ADDR=\"${{MASTER_ADDR:-{}}}\"\n", addr_default);
  r += fmt::format("MASTER_PORT=\"${{MASTER_PORT:-{}}}\"\n", opt.master_port);
  return r + "export MASTER_ADDR MASTER_PORT\n";
}

Words AccelerateLaunch(std::string_view machine_rank) {
  Words w = {"accelerate launch", "--config_file accelerate_config.yaml"};
  if (!machine_rank.empty()) {
    w.push_back(fmt::format("--machine_rank \"{}\"", machine_rank));
    w.push_back("--main_process_ip \"$MASTER_ADDR\"");
    w.push_back("--main_process_port \"$MASTER_PORT\"");
  }
  return w;
}

std::string TorchrunBody(const JobShape& s, const Program& p, Format entry, const LaunchOptions& opt) {
  if (!s.multi_node()) {
    if (entry == Format::kAccelerate)
      return Cmd({"exec accelerate launch", "--config_file accelerate_config.yaml", "\"$TRAIN_SCRIPT\" \"$@\""});
    Words w = {"exec torchrun", "--standalone", "--nnodes 1",
               fmt::format("--nproc-per-node {}", s.procs_per_node)};
    Append(w, ProgramWords(p, "-m"));
    return Cmd(w);
  }
  std::string t = fmt::format(
      "NODE_RANK=\"${{NODE_RANK:?set NODE_RANK to the index of this node, 0..{} in hostfile order}}\"\n",
      s.nodes - 1);
  t += Rendezvous(s, opt, "");
  if (entry == Format::kAccelerate) {
    Words w = AccelerateLaunch("$NODE_RANK");
    w[0] = "exec " + w[0];
    w.push_back("\"$TRAIN_SCRIPT\" \"$@\"");
    return t + Cmd(w);
  }
  // Static rendezvous: rank = NODE_RANK x nproc + local rank, exactly the plan's rank map.
  Words w = {"exec torchrun", fmt::format("--nnodes {}", s.nodes),
             fmt::format("--nproc-per-node {}", s.procs_per_node), "--node-rank \"$NODE_RANK\"",
             "--master-addr \"$MASTER_ADDR\"", "--master-port \"$MASTER_PORT\""};
  Append(w, ProgramWords(p, "-m"));
  return t + Cmd(w);
}

StatusOr<std::string> DeepSpeedBody(const Plan& plan, const JobShape& s, const Program& p,
                                    Format entry, const LaunchOptions& opt) {
  if (entry == Format::kAccelerate) {
    if (plan.layout.framework != Framework::kDeepSpeed)
      return Status::BadInput("--launcher deepspeed starts DeepSpeed jobs; an accelerate FSDP "
                              "config runs with --launcher torchrun, mpirun or slurm");
    // accelerate hands the job to the deepspeed launcher (pdsh) with the YAML's hostfile.
    return Cmd({"exec accelerate launch", "--config_file accelerate_config.yaml", "\"$TRAIN_SCRIPT\" \"$@\""});
  }
  std::string t = "export DS_ENV_FILE=\"$here/deepspeed_env\"  # exported to every node\n";
  Words w = {"exec deepspeed"};
  if (s.multi_node()) {
    t += Rendezvous(s, opt, "$(awk '!/^#/ && NF {print $1; exit}' hostfile)");
    Append(w, {"--hostfile hostfile", fmt::format("--num_nodes {}", s.nodes),
               "--master_addr \"$MASTER_ADDR\""});
  } else {
    t += fmt::format("MASTER_PORT=\"${{MASTER_PORT:-{}}}\"\n", opt.master_port);
  }
  Append(w, {fmt::format("--num_gpus {}", s.procs_per_node), "--master_port \"$MASTER_PORT\""});
  Append(w, ProgramWords(p, "--module"));
  return t + Cmd(w);
}

Words MpirunHead(const Plan& plan, const JobShape& s, Format entry, int per_node) {
  Words w = {"exec mpirun", fmt::format("-np {}", s.nodes * per_node)};
  if (s.multi_node()) w.push_back("--hostfile hostfile");
  // ppr:N:node fills node 0 first, so ranks are node-major as in the plan's rank map.
  w.push_back(fmt::format("--map-by ppr:{}:node", per_node));
  w.push_back("--rank-by slot");
  w.push_back(per_node == 1 ? "--bind-to none" : "--bind-to numa");
  w.push_back("--report-bindings");
  std::string env = "-x MASTER_ADDR -x MASTER_PORT -x CUDA_DEVICE_ORDER -x NCCL_DEBUG "
                    "-x TORCH_NCCL_ASYNC_ERROR_HANDLING";
  if (entry == Format::kMegatron && (plan.layout.tp > 1 || plan.layout.cp > 1))
    env += " -x CUDA_DEVICE_MAX_CONNECTIONS";
  w.push_back(env);
  w.push_back("-x PATH -x LD_LIBRARY_PATH");
  return w;
}

std::string MpirunBody(const Plan& plan, const JobShape& s, const Program& p, Format entry,
                       const LaunchOptions& opt) {
  std::string t = Rendezvous(s, opt, s.multi_node() ? "$(awk '!/^#/ && NF {print $1; exit}' hostfile)"
                                                    : "127.0.0.1");
  t += "# OpenMPI refuses to run as root unless given --allow-run-as-root.\n";
  t += "# shellcheck disable=SC2016  # expanded by each rank, not here\n";
  if (entry == Format::kAccelerate) {  // one accelerate launcher per node
    Words w = MpirunHead(plan, s, entry, 1);
    w.push_back("bash -c 'exec accelerate launch --config_file accelerate_config.yaml "
                "--machine_rank \"$OMPI_COMM_WORLD_RANK\" --main_process_ip \"$MASTER_ADDR\" "
                "--main_process_port \"$MASTER_PORT\" \"$@\"' mpi-node");
    w.push_back("\"$TRAIN_SCRIPT\" \"$@\"");
    return t + Cmd(w);
  }
  // OpenMPI's rank variables become the env:// variables torch.distributed reads.
  Words w = MpirunHead(plan, s, entry, s.procs_per_node);
  w.push_back("bash -c 'export RANK=$OMPI_COMM_WORLD_RANK LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK "
              "WORLD_SIZE=$OMPI_COMM_WORLD_SIZE LOCAL_WORLD_SIZE=$OMPI_COMM_WORLD_LOCAL_SIZE; "
              "exec python \"$@\"' mpi-rank");
  Append(w, ProgramWords(p, "-m"));
  return t + Cmd(w);
}

std::string SlurmBody(const JobShape& s, const Program& p, Format entry, const LaunchOptions& opt) {
  std::string t = Rendezvous(s, opt, "$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)");
  t += "# shellcheck disable=SC2016  # expanded on each node, not here\n";
  Words w = {"srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1"};
  if (entry == Format::kAccelerate) {
    w.push_back("bash -c 'exec accelerate launch --config_file accelerate_config.yaml "
                "--machine_rank \"$SLURM_NODEID\" --main_process_ip \"$MASTER_ADDR\" "
                "--main_process_port \"$MASTER_PORT\" \"$@\"' slurm-node");
    w.push_back("\"$TRAIN_SCRIPT\" \"$@\"");
    return t + Cmd(w);
  }
  // Node rank = SLURM_NODEID, so node order follows the allocation's node list.
  w.push_back(fmt::format("bash -c 'exec torchrun --nnodes \"$SLURM_NNODES\" --nproc-per-node {} "
                          "--node-rank \"$SLURM_NODEID\" --master-addr \"$MASTER_ADDR\" "
                          "--master-port \"$MASTER_PORT\" \"$@\"' slurm-node",
                          s.procs_per_node));
  Append(w, ProgramWords(p, "-m"));
  return t + Cmd(w);
}

std::string_view Usage(Launcher l, const JobShape& s) {
  switch (l) {
    case Launcher::kTorchrun:
      return s.multi_node() ? "Run on every node: NODE_RANK=i MASTER_ADDR=node0 ./launch.sh"
                            : "Run: ./launch.sh";
    case Launcher::kDeepSpeed: return "Run on node 0 (pdsh reaches the others): ./launch.sh";
    case Launcher::kMpirun: return "Run on node 0: ./launch.sh";
    case Launcher::kSlurm: return "Submit from this directory: sbatch job.sbatch";
  }
  return "";
}

}  // namespace

std::string Hostfile(const JobShape& s) {
  std::string h = "# One line per node in the plan's node order: node i runs ranks ";
  h += fmt::format("i*{0} .. i*{0}+{1}.\n# Replace node-i with the real host names.\n",
                   s.procs_per_node, s.procs_per_node - 1);
  for (int n = 0; n < s.nodes; ++n) h += fmt::format("node-{} slots={}\n", n, s.procs_per_node);
  return h;
}

StatusOr<Emitted> LaunchScripts(const Plan& plan, const JobShape& s, Launcher launcher,
                                Format entry, const LaunchOptions& opt) {
  Program p = ProgramFor(entry);
  if (entry == Format::kLitgpt) p.args.insert(p.args.begin(), std::string(LitgptCommand(plan)));
  // Megatron-LM trains hybrid (Mamba) models with its own entry point.
  if (entry == Format::kMegatron && plan.model.is_hybrid()) p.default_script = "pretrain_mamba.py";
  const bool sbatch = launcher == Launcher::kSlurm;
  std::string body;
  switch (launcher) {
    case Launcher::kTorchrun: body = TorchrunBody(s, p, entry, opt); break;
    case Launcher::kDeepSpeed: {
      SP_ASSIGN_OR_RETURN(body, DeepSpeedBody(plan, s, p, entry, opt));
      break;
    }
    case Launcher::kMpirun: body = MpirunBody(plan, s, p, entry, opt); break;
    case Launcher::kSlurm: body = SlurmBody(s, p, entry, opt); break;
  }
  Emitted out;
  std::string text = Header(plan, s, sbatch, Usage(launcher, s)) + Prologue(p, sbatch) +
                     Environment(plan, entry) + body;
  out.Add(sbatch ? "job.sbatch" : "launch.sh", text, true);
  const bool ds_pdsh = launcher == Launcher::kDeepSpeed;
  if (s.multi_node() && (ds_pdsh || launcher == Launcher::kMpirun)) out.Add("hostfile", Hostfile(s));
  if (ds_pdsh && entry != Format::kAccelerate)
    out.Add("deepspeed_env", "CUDA_DEVICE_ORDER=PCI_BUS_ID\nTORCH_NCCL_ASYNC_ERROR_HANDLING=1\n");
  if (s.multi_node())
    out.Note("the output directory must be at the same path on every node (a shared filesystem)");
  return out;
}

}  // namespace shardplan::launch
