// Report: rank 0's view of a validation run -- every rank's planned and measured peak, the
// free memory left, the first thing that did not fit, and the collectives in nccl-tests
// units -- as a fixed-width table (`#` context lines, as nccl-tests prints) or as JSON.
// Pure: rank results in, text out.
#pragma once

#include <string>
#include <vector>

#include "validate/rank_result.h"

namespace shardplan::validate {

struct ReportContext {
  std::string plan;        // the plan file as the user named it
  std::string backend;
  double scale = 1;
  int iterations = 2;
  int plan_ranks = 0;      // ranks in the plan (a rehearsal may run fewer)
};

// 0 every rank fits; 1 a rank does not; 2/3 a rank's run broke (the highest code wins).
int JobExitCode(const std::vector<RankResult>& ranks);

// One line naming the rank, phase, term and bytes that failed; empty when all fit.
std::string FailureMessage(const std::vector<RankResult>& ranks);

// One collective over all ranks that ran it: mean time, nccl-tests bandwidths.
struct CollectiveSummary {
  std::string name, group;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Phase phase = Phase::kForward;
  int64_t size_bytes = 0;
  int elem_bytes = 2;
  int nranks = 1;
  int64_t repeat = 1;
  double seconds = 0;      // mean over ranks; 0 when none ran it
  Bandwidth bw;
  int ranks_run = 0;
  bool scratch = false;    // some rank ran it in scratch memory
  bool skipped = false;    // some rank had fewer than two members of its group present
};
std::vector<CollectiveSummary> SummarizeCollectives(const std::vector<RankResult>& ranks);

std::string FormatTable(const std::vector<RankResult>& ranks, const ReportContext& ctx);
std::string FormatJson(const std::vector<RankResult>& ranks, const ReportContext& ctx);

// nccl-tests' getFloatStr: %.2f, degrading to %.1f, %.0f and %e to fit `width`.
std::string FitFloat(double v, int width);

}  // namespace shardplan::validate
