#include "validate/worker.h"

#include <algorithm>
#include <cmath>

#include "planner/io/plan_file.h"
#include "validate/local_rank.h"
#include "validate/manifest.h"
#include "validate/report.h"

namespace shardplan::validate {
namespace {

struct Prepared {
  RankManifest manifest;
  RunConfig config;
  std::unique_ptr<DeviceBackend> backend;
  int plan_ranks = 0;
};

// Everything local a rank needs before the first collective of the run.
StatusOr<Prepared> Prepare(const WorkerOptions& o, const Communicator& world, const Deadline& deadline,
                           Progress* progress) {
  SP_ASSIGN_OR_RETURN(Plan plan, LoadPlan(o.plan));
  Prepared p;
  p.plan_ranks = plan.layout.world();
  SP_ASSIGN_OR_RETURN(p.config.present, ParseRanks(o.ranks, p.plan_ranks));
  if (static_cast<int>(p.config.present.size()) != world.size()) {
    return Status::BadInput("--ranks " + o.ranks + " names " + std::to_string(p.config.present.size()) +
                            " plan ranks but the job has " + std::to_string(world.size()) +
                            " processes; launch one process per rehearsed rank");
  }
  SP_ASSIGN_OR_RETURN(p.config.scale, ParseScale(o.scale, o.backend));
  SP_ASSIGN_OR_RETURN(int64_t capacity, ParseCapacity(o.capacity));
  SP_ASSIGN_OR_RETURN(p.config.fault, ParseFault(o.inject_fault));
  SP_ASSIGN_OR_RETURN(p.manifest, BuildManifest(plan, p.config.present[static_cast<size_t>(world.rank())]));
  p.config.capacity_bytes = capacity > 0 ? capacity : p.manifest.capacity_bytes;
  p.config.headroom_bytes = p.manifest.headroom_bytes;
  p.config.iterations = o.iterations;
  p.config.deadline = deadline;
  p.config.progress = progress;
  const int64_t raw_capacity = std::llround(static_cast<double>(p.config.capacity_bytes) * p.config.scale);
  SP_ASSIGN_OR_RETURN(p.backend, MakeBackend(o.backend, raw_capacity));
  return p;
}

// Rank 0's list of distinct messages, each with the ranks that reported it.
std::vector<std::string> DistinctErrors(const std::vector<std::string>& per_rank) {
  std::vector<std::pair<std::string, std::string>> seen;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    if (per_rank[r].empty()) continue;
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == per_rank[r]; });
    if (it == seen.end()) seen.emplace_back(per_rank[r], "rank " + std::to_string(r));
    else it->second += "," + std::to_string(r);
  }
  std::vector<std::string> out;
  for (const auto& [msg, ranks] : seen) out.push_back(ranks + ": " + msg);
  return out;
}

// Collective over the world: the worst code of `local`, with rank 0 holding the messages.
int AgreeOnInputs(const Status& local, Communicator& world, WorkerOutcome* out) {
  StatusOr<std::vector<std::string>> msgs = world.Gather(local.ok() ? "" : local.message(), 0);
  StatusOr<int64_t> worst = world.AllReduceMax(local.exit_code());
  if (!msgs.ok() || !worst.ok()) {
    out->errors.push_back((msgs.ok() ? worst.status() : msgs.status()).message());
    return 3;
  }
  if (world.rank() == 0) out->errors = DistinctErrors(*msgs);
  return static_cast<int>(*worst);
}

// Rank 0 renders every rank's result; the job's code goes back to every rank.
int Report(const RankResult& mine, const WorkerOptions& o, const Prepared& p, Communicator& world,
           WorkerOutcome* out) {
  StatusOr<std::vector<std::string>> texts = world.Gather(ToJsonText(mine), 0);
  if (!texts.ok()) {
    out->errors.push_back(texts.status().message());
    return 3;
  }
  int code = 0;
  if (world.rank() == 0) {
    std::vector<RankResult> all;
    for (const std::string& t : *texts) {
      StatusOr<RankResult> r = RankResultFromJson(t);
      if (!r.ok()) {
        out->errors.push_back(r.status().message());
        return 3;
      }
      all.push_back(std::move(*r));
    }
    const ReportContext ctx{o.plan, o.backend, p.config.scale, o.iterations, p.plan_ranks};
    out->report = o.json ? FormatJson(all, ctx) : FormatTable(all, ctx);
    code = JobExitCode(all);
    if (code != 0 && o.json) out->errors.push_back(FailureMessage(all));
  }
  StatusOr<int64_t> job = world.AllReduceMax(code);
  return job.ok() ? static_cast<int>(*job) : 3;
}

}  // namespace

WorkerOutcome RunWorker(const WorkerOptions& o, Communicator& world, const Deadline& deadline,
                        Progress* progress) {
  WorkerOutcome out;
  // The local rank first: without launcher variables it is an all-gather every rank joins.
  StatusOr<int> local_rank = DiscoverLocalRank(world);
  StatusOr<Prepared> prep = local_rank.ok() ? Prepare(o, world, deadline, progress)
                                            : StatusOr<Prepared>(local_rank.status());
  out.exit_code = AgreeOnInputs(prep.status(), world, &out);
  if (out.exit_code != 0) return out;
  RankResult mine = Rehearse(prep->manifest, prep->config, *prep->backend, world, *local_rank);
  prep->backend.reset();  // releases the device before the report
  out.exit_code = Report(mine, o, *prep, world, &out);
  return out;
}

}  // namespace shardplan::validate
