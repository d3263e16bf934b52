// Worker: one process of a validation job, from its flags to its share of the verdict. It
// loads the plan, builds its rank's manifest, rehearses it on the chosen backend and sends
// the result to rank 0, which renders the report. Every rank makes the same sequence of
// world calls whether or not its own input was good, so a bad file on one node ends the
// whole job with that node's message instead of hanging it.
#pragma once

#include <string>
#include <vector>

#include "validate/communicator.h"
#include "validate/device_backend.h"
#include "validate/rehearsal.h"
#include "validate/worker_options.h"

namespace shardplan::validate {

struct WorkerOutcome {
  int exit_code = 0;                // the job's code, the same on every rank
  std::string report;               // rank 0: the table or JSON for stdout
  std::vector<std::string> errors;  // rank 0: diagnostics for stderr
};

WorkerOutcome RunWorker(const WorkerOptions& o, Communicator& world, const Deadline& deadline,
                        Progress* progress);

}  // namespace shardplan::validate
