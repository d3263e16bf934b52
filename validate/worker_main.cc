// shardplan-validate-worker: one process of `shardplan validate`, one per GPU under
// mpirun or srun, or alone (a world of one) for a single GPU without MPI. Flags:
// validate/worker_options.h. Exit codes: 0 every rank fits, 1 one does not, 2 bad input,
// 3 environment error or timeout.
#include <cstdio>

#include "validate/communicator.h"
#include "validate/watchdog.h"
#include "validate/worker.h"

int main(int argc, char** argv) {
  using namespace shardplan::validate;
  const Deadline::Clock::time_point start = Deadline::Clock::now();
  auto created = CreateWorld(&argc, &argv);
  if (!created.ok()) {
    std::fprintf(stderr, "shardplan-validate-worker: error: %s\n", created.status().message().c_str());
    return created.status().exit_code();
  }
  std::unique_ptr<Communicator> world = std::move(*created);
  WorkerOptions o;
  CLI::App app{"shardplan-validate-worker: rehearse a plan's memory and collectives on one rank"};
  AddWorkerFlags(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank got the same arguments: one usage message is enough.
    const int code = world->rank() == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
    return code == 0 ? 0 : 2;
  }
  Progress progress;
  const double elapsed = std::chrono::duration<double>(Deadline::Clock::now() - start).count();
  Watchdog watchdog(WatchdogSeconds(o.timeout_s) - elapsed, &progress, world->rank());
  const Deadline deadline(start + std::chrono::duration_cast<Deadline::Clock::duration>(
                                      std::chrono::duration<double>(OperationSeconds(o.timeout_s))));
  const WorkerOutcome out = RunWorker(o, *world, deadline, &progress);
  for (const std::string& e : out.errors) std::fprintf(stderr, "shardplan-validate-worker: error: %s\n", e.c_str());
  std::fputs(out.report.c_str(), stdout);
  std::fflush(stdout);
  world.reset();  // MPI_Finalize, still under the watchdog
  return out.exit_code;
}
