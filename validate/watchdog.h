// Watchdog: the last line of defence for --timeout. A blocking MPI call cannot be given a
// deadline, so if a peer hangs or dies while this rank waits in one, the watchdog prints
// where the rank was and ends the process (exit code 3); the launcher then ends the rest of
// the job. The OS reclaims the process's host and device memory.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "validate/rehearsal.h"

namespace shardplan::validate {

class Watchdog {
 public:
  // Fires `seconds` from now unless destroyed first. `progress` may be null; `rank` is
  // the process's rank in the job, for the message.
  Watchdog(double seconds, const Progress* progress, int rank);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void Wait(double seconds, const Progress* progress, int rank);

  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

}  // namespace shardplan::validate
