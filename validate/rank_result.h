// RankResult: what one rank of a validation run planned and measured -- its peak by term
// and by phase, the free memory left, every collective's time and bandwidth, and the first
// thing that did not fit. Ranks send it to rank 0 as JSON text (validate/report.h).
//
// Bytes are at plan scale (measured bytes divided by --scale), so they compare with the
// plan directly; collective sizes are the bytes actually moved, which the times refer to.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/memory_model.h"
#include "planner/status.h"
#include "validate/collective.h"

namespace shardplan::validate {

struct TermResult {
  std::string name;
  Pool pool = Pool::kTorch;
  int64_t planned_bytes = 0;      // the term's bytes in the plan
  int64_t allocated_bytes = 0;    // the most of it live at once in this run
  bool measured_by_runtime = false;  // a non-torch term on a GPU: the runtime holds it
};

struct CollectiveResult {
  std::string name;
  std::string group;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Phase phase = Phase::kForward;
  int64_t size_bytes = 0;         // bytes moved per call (after --scale), nccl-tests size
  int elem_bytes = 2;
  int nranks = 1;                 // ranks of its group present in this run
  int64_t repeat = 1;             // calls per iteration in the real run
  double seconds = 0;             // mean time of one call (iterations after the first)
  bool scratch = false;           // no planned term could hold its buffer
  bool skipped = false;           // fewer than two ranks of its group present
};

// The first thing that broke the fit on a rank: an allocation that failed, or the event
// that took usage past capacity minus headroom.
struct Failure {
  bool failed = false;
  Phase phase = Phase::kSetup;
  std::string term;               // term, or "scratch for <collective>", or "collective <name>"
  int64_t bytes = 0;              // that allocation's bytes (0 for a collective)
  int64_t used_bytes = 0;         // usage when it happened (for an allocation: before it)
  std::string detail;             // the backend's message, e.g. cuMemAlloc's error
};

struct RankResult {
  int rank = 0;                   // plan rank
  int world_rank = 0;             // rank in this job (differs under --ranks)
  int stage = 0;
  std::string host;
  std::string device;
  std::string backend;
  double scale = 1;
  int64_t capacity_bytes = 0;
  int64_t headroom_bytes = 0;
  int64_t planned_peak_bytes = 0;         // the device bytes the estimate says the stage needs
  Phase planned_peak_phase = Phase::kSetup;
  int64_t manifest_peak_bytes = 0;        // the most manifest bytes live in one phase
  int64_t measured_peak_bytes = 0;        // device (or NVML process) usage at its highest
  Phase measured_peak_phase = Phase::kSetup;
  int64_t runtime_bytes_at_peak = 0;      // measured peak minus our own live allocations
  int64_t process_peak_bytes = -1;        // NVML's figure; -1 when unavailable
  int64_t device_free_min_bytes = 0;      // the device's own free memory at its lowest
  std::array<int64_t, kPhaseCount> measured_by_phase{};
  std::vector<TermResult> terms;
  std::vector<CollectiveResult> collectives;
  bool fits = false;
  bool stopped = false;                   // stopped early because another rank failed
  Failure failure;
  Code error_code = Code::kOk;            // the run itself broke (environment, input)
  std::string error;

  int64_t limit_bytes() const { return capacity_bytes - headroom_bytes; }
  int64_t free_bytes() const { return capacity_bytes - measured_peak_bytes; }
};

std::string ToJsonText(const RankResult& r);
StatusOr<RankResult> RankResultFromJson(const std::string& text);

// The rank's verdict as an exit code: 3 (or 2) when the run broke, 1 when it did not fit,
// 0 when it fit or was only stopped because another rank failed.
int ExitCodeOf(const RankResult& r);

// "phase", "kSetup" <-> "setup" etc., shared with report.cc.
StatusOr<Phase> ParsePhase(std::string_view name);

}  // namespace shardplan::validate
