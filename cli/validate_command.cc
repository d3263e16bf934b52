// `shardplan validate PLAN`: rehearse a plan on real processes -- each rank allocates the
// terms its manifest names, runs the planned collectives and reports its measured peak --
// by launching shardplan-validate-worker under mpirun (one process per rehearsed rank), or
// directly for a single rank, or by printing the mpirun/srun line for a cluster.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "cli/inputs.h"
#include "planner/io/plan_file.h"
#include "validate/launch_command.h"
#include "validate/worker_options.h"

extern char** environ;

namespace shardplan::cli {
namespace {

struct ValidateFlags {
  validate::WorkerOptions worker;
  int np = 0;                      // 0: one process per rehearsed rank
  bool print_command = false;
  std::string launcher = "mpirun";
  std::string worker_path;         // "": next to this executable
};

// Waits for `pid` until `limit_s`, then ends it (TERM, then KILL); its exit code, 3 when a
// signal or the limit ended it.
int WaitFor(pid_t pid, double limit_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  bool termed = false;
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
    if (done < 0 && errno != EINTR) return 3;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, termed ? SIGKILL : SIGTERM);
      if (!termed) std::cerr << "shardplan: error: validation job passed --timeout; ending it\n";
      termed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

StatusOr<int> Run(const std::vector<std::string>& argv, double limit_s) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (rc != 0) return Status::Internal("cannot start " + argv[0] + ": " + std::strerror(rc));
  return WaitFor(pid, limit_s);
}

StatusOr<std::string> FindWorker(const ValidateFlags& f) {
  if (!f.worker_path.empty()) {
    if (access(f.worker_path.c_str(), X_OK) != 0) {
      return Status::BadInput("--worker " + f.worker_path + ": not an executable file");
    }
    return f.worker_path;
  }
  if (auto w = validate::WorkerNextToSelf()) return *w;
  return Status::Internal(std::string(validate::kWorkerName) +
                          " is not next to shardplan; build the target (CMake finds MPI for it) or pass --worker");
}

// Checks the flags against the plan before anything starts, so bad input exits 2 here.
StatusOr<validate::LaunchSpec> Resolve(const ValidateFlags& f) {
  SP_ASSIGN_OR_RETURN(Plan plan, LoadPlan(f.worker.plan));
  SP_ASSIGN_OR_RETURN(std::vector<int> ranks, validate::ParseRanks(f.worker.ranks, plan.layout.world()));
  SP_RETURN_IF_ERROR(validate::ParseScale(f.worker.scale, f.worker.backend).status());
  SP_RETURN_IF_ERROR(validate::ParseCapacity(f.worker.capacity).status());
  const int np = static_cast<int>(ranks.size());
  if (f.np != 0 && f.np != np) {
    return Status::BadInput("--np " + std::to_string(f.np) + " but --ranks " + f.worker.ranks + " names " +
                            std::to_string(np) + " of the plan's " + std::to_string(plan.layout.world()) +
                            " ranks; pass --ranks to choose which ranks " + std::to_string(f.np) +
                            " processes rehearse");
  }
  validate::LaunchSpec spec;
  spec.launcher = f.launcher;
  spec.np = np;
  spec.gpus_per_node = std::max(1, plan.cluster.gpus_per_node);
  spec.as_root = geteuid() == 0;
  SP_ASSIGN_OR_RETURN(spec.worker, FindWorker(f));
  return spec;
}

void RunValidate(const ValidateFlags& f) {
  StatusOr<validate::LaunchSpec> spec = Resolve(f);
  if (!spec.ok()) {
    Fail(spec.status());
    return;
  }
  if (f.print_command) {
    std::cout << validate::ShellJoin(validate::ClusterCommand(*spec, f.worker)) << "\n";
    return;
  }
  std::vector<std::string> argv;
  if (spec->np == 1) {  // one rank needs no launcher, and a GPU box may lack MPI
    argv.push_back(spec->worker);
    for (std::string& a : validate::WorkerArgs(f.worker)) argv.push_back(std::move(a));
  } else {
    const std::optional<std::string> mpirun = validate::FindOnPath("mpirun");
    if (!mpirun) {
      Fail(Status::Internal("mpirun is not on PATH; install OpenMPI, or print a cluster command with --print-command"));
      return;
    }
    argv = validate::LocalCommand(*spec, f.worker);
    argv[0] = *mpirun;
  }
  // The workers end themselves by --timeout; this limit only catches a launcher that hangs.
  StatusOr<int> code = Run(argv, f.worker.timeout_s + 20);
  if (!code.ok()) {
    Fail(code.status());
    return;
  }
  ExitCode() = *code;
}

static Registrar reg(50, [](CLI::App& app) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "rehearse a plan: every rank allocates its planned memory and runs its collectives");
  validate::AddWorkerFlags(*cmd, flags->worker);
  cmd->add_option("--np", flags->np, "processes to launch (default: one per rehearsed rank)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--print-command", flags->print_command, "print the cluster launch command instead of running");
  cmd->add_option("--launcher", flags->launcher, "for --print-command: mpirun or srun")
      ->check(CLI::IsMember({"mpirun", "srun"}));
  cmd->add_option("--worker", flags->worker_path, "path of shardplan-validate-worker (default: next to shardplan)");
  cmd->callback([flags] { RunValidate(*flags); });
});

}  // namespace
}  // namespace shardplan::cli
