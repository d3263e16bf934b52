#include "validate/watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "validate/check.h"

namespace shardplan::validate {

Watchdog::Watchdog(double seconds, const Progress* progress, int rank)
    : thread_([this, seconds, progress, rank] { Wait(seconds, progress, rank); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    disarmed_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::Wait(double seconds, const Progress* progress, int rank) {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return disarmed_; })) return;
  const int iteration = progress ? progress->iteration.load() : -1;
  const int phase = progress ? progress->phase.load() : 0;
  const std::string where = iteration < 0 ? std::string("setting up")
                                          : std::string(PhaseName(static_cast<Phase>(phase))) +
                                                " of iteration " + std::to_string(iteration);
  std::fprintf(stderr,
               "shardplan-validate-worker: error: process %d on %s: --timeout reached while %s "
               "(a rank hung or died); exiting\n",
               rank, HostName().c_str(), where.c_str());
  std::fflush(stderr);
  _exit(3);  // not exit(): other threads may hold locks; the OS frees all memory
}

}  // namespace shardplan::validate
