// `shardplan validate PLAN`: rehearse a plan on real processes -- each rank allocates the
// terms its manifest names, runs the planned collectives and reports its measured peak --
// by launching shardplan-validate-worker under mpirun (one process per rehearsed rank), or
// directly for a single rank, or by printing the mpirun/srun line for a cluster.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/html_report.h"
#include "cli/inputs.h"
#include "planner/io/plan_file.h"
#include "validate/launch_command.h"
#include "validate/rank_result.h"
#include "validate/report.h"
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
  std::string html;                // also write an HTML report (the worker then reports JSON)
  bool user_json = false;          // --json as the user gave it
};

// Waits for `pid` until `limit_s`, then ends it (TERM, then KILL); its exit code, 3 when a
// signal or the limit ended it. On a terminal, says on stderr how long `what` has run once
// it passes a second (as plan and capacity do); quiet when stderr is a file or a pipe.
int WaitFor(pid_t pid, double limit_s, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(limit_s);
  const bool tty = isatty(STDERR_FILENO) != 0;
  bool termed = false, shown = false;
  int ticks = 0;
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      if (shown) std::fprintf(stderr, "\n");
      return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty && s >= 1.0 && ++ticks % 10 == 0) {
      std::fprintf(stderr, "\r%s: %.1f s   ", what.c_str(), s);
      shown = true;
    }
    if (done < 0 && errno != EINTR) return 3;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, termed ? SIGKILL : SIGTERM);
      if (!termed) std::cerr << "shardplan: error: validation job passed --timeout; ending it\n";
      termed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Runs argv to completion; with `stdout_path`, its standard output goes to that file.
StatusOr<int> Run(const std::vector<std::string>& argv, double limit_s, const std::string& what,
                  const std::string& stdout_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!stdout_path.empty())
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status::Internal("cannot start " + argv[0] + ": " + std::strerror(rc));
  return WaitFor(pid, limit_s, what);
}

// --html: the worker's JSON report becomes the page; stdout gets what the user asked for
// (the JSON, or the table rebuilt from it).
Status ReportHtml(const ValidateFlags& f, const std::string& json_path) {
  std::ifstream in(json_path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.contains("ranks"))
    return Status::Internal("the validation job wrote no JSON report, so --html " + f.html + " was not written");
  SP_ASSIGN_OR_RETURN(Plan plan, LoadPlan(f.worker.plan));
  const nlohmann::json inputs = {{"plan", f.worker.plan}, {"model", plan.model_ref}, {"cluster", plan.cluster_ref},
                                 {"workload", plan.workload_ref}, {"backend", f.worker.backend}, {"ranks", f.worker.ranks}};
  const std::string title = "shardplan validate: " + plan.model.name + " on " + std::to_string(plan.layout.world()) +
                            " x " + plan.cluster.gpu.name + ", " + f.worker.backend + " backend";
  SP_RETURN_IF_ERROR(WriteHtml(f.html, {"validate", title, inputs, j}));
  if (f.user_json) {
    std::cout << text.str();
    return Status::Ok();
  }
  std::vector<validate::RankResult> ranks;
  for (const nlohmann::json& r : j["ranks"]) {
    SP_ASSIGN_OR_RETURN(validate::RankResult rr, validate::RankResultFromJson(r.dump()));
    ranks.push_back(std::move(rr));
  }
  const validate::ReportContext ctx{j.value("plan", ""), j.value("backend", ""), j.value("scale", 1.0),
                                    j.value("iterations", 2), j.value("plan_ranks", 0)};
  std::cout << validate::FormatTable(ranks, ctx) << "wrote the HTML report to " << f.html << "\n";
  return Status::Ok();
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
  validate::WorkerOptions worker = f.worker;
  std::string json_path;
  if (!f.html.empty()) {
    worker.json = true;
    std::string tmpl = (std::filesystem::temp_directory_path() / "shardplan-validate-XXXXXX").string();
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) {
      Fail(Status::Internal("--html: cannot create a temporary file for the worker's report: " + std::string(std::strerror(errno))));
      return;
    }
    close(fd);
    json_path = tmpl;
  }
  std::vector<std::string> argv;
  if (spec->np == 1) {  // one rank needs no launcher, and a GPU box may lack MPI
    argv.push_back(spec->worker);
    for (std::string& a : validate::WorkerArgs(worker)) argv.push_back(std::move(a));
  } else {
    const std::optional<std::string> mpirun = validate::FindOnPath("mpirun");
    if (!mpirun) {
      Fail(Status::Internal("mpirun is not on PATH; install OpenMPI, or print a cluster command with --print-command"));
      return;
    }
    argv = validate::LocalCommand(*spec, worker);
    argv[0] = *mpirun;
  }
  // The workers end themselves by --timeout; this limit only catches a launcher that hangs.
  const std::string what = "rehearsing " + std::to_string(spec->np) + " rank" + (spec->np == 1 ? "" : "s") + " on the " +
                           f.worker.backend + " backend";
  StatusOr<int> code = Run(argv, f.worker.timeout_s + 20, what, json_path);
  if (!code.ok()) {
    Fail(code.status());
    return;
  }
  ExitCode() = *code;
  if (!json_path.empty()) {
    // A run that broke (2, 3) has said why on stderr and wrote no report.
    Status s = *code <= 1 ? ReportHtml(f, json_path) : Status::Ok();
    std::error_code ec;
    std::filesystem::remove(json_path, ec);
    if (!s.ok()) Fail(s);
  }
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
  cmd->add_option("--html", flags->html, "also write a self-contained HTML report (planned against measured, per rank and term)");
  cmd->callback([flags] {
    flags->user_json = flags->worker.json;
    RunValidate(*flags);
  });
});

}  // namespace
}  // namespace shardplan::cli
