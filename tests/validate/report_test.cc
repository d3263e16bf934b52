#include "validate/report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace shardplan::validate {
namespace {

constexpr int64_t kMiB = 1 << 20, kGiB = 1 << 30;

RankResult Fitting(int rank) {
  RankResult r;
  r.rank = r.world_rank = rank;
  r.host = "node1";
  r.device = "host memory";
  r.backend = "host";
  r.capacity_bytes = 80 * kGiB;
  r.headroom_bytes = 2 * kGiB;
  r.planned_peak_bytes = 60 * kGiB;
  r.manifest_peak_bytes = 58 * kGiB;
  r.measured_peak_bytes = 59 * kGiB;
  r.measured_peak_phase = Phase::kBackward;
  r.fits = true;
  r.terms = {{"parameters", Pool::kTorch, 10 * kGiB, 10 * kGiB, false},
             {"cuda_context", Pool::kNonTorch, 600 * kMiB, 0, true}};
  return r;
}

TEST(ReportTest, ExitCodes) {
  std::vector<RankResult> ranks = {Fitting(0), Fitting(1)};
  EXPECT_EQ(JobExitCode(ranks), 0);
  EXPECT_EQ(FailureMessage(ranks), "");
  ranks[1].fits = false;
  ranks[0].fits = false;
  ranks[0].stopped = true;  // stopped by rank 1's failure: not a verdict of its own
  EXPECT_EQ(JobExitCode(ranks), 1);
  ranks[0].error_code = Code::kInternal;
  ranks[0].error = "cudaMalloc failed";
  EXPECT_EQ(JobExitCode(ranks), 3);
  EXPECT_EQ(FailureMessage(ranks), "rank 0 (stage 0, node1): cudaMalloc failed");
}

TEST(ReportTest, FailedAllocationNamesRankPhaseTermAndBytes) {
  RankResult r = Fitting(2);
  r.stage = 1;
  r.fits = false;
  r.failure = {true, Phase::kBackward, "gradients [3/4]", 512 * kMiB, 79 * kGiB + 700 * kMiB,
               "does not fit in the capacity"};
  EXPECT_EQ(FailureMessage({Fitting(0), r}),
            "rank 2 (stage 1, node1): phase backward: gradients [3/4]: allocating 512.0 MiB failed with "
            "79.68 GiB in use of 80.00 GiB capacity: does not fit in the capacity");
}

TEST(ReportTest, CrossingTheHeadroomNamesTheTermThatDidIt) {
  RankResult r = Fitting(0);
  r.fits = false;
  r.failure = {true, Phase::kStep, "optimizer_step_temp", 4 * kGiB, 79 * kGiB,
               "usage passed capacity minus the plan's headroom"};
  EXPECT_EQ(FailureMessage({r}),
            "rank 0 (stage 0, node1): phase step: optimizer_step_temp (4.00 GiB) took usage to 79.00 GiB, "
            "above capacity 80.00 GiB minus headroom 2.00 GiB = 78.00 GiB");
  // NCCL grows its buffers inside a collective: nothing of ours was allocated.
  r.failure = {true, Phase::kForward, "collective ep_all_to_all_fwd", 0, 79 * kGiB,
               "usage passed capacity minus the plan's headroom"};
  EXPECT_EQ(FailureMessage({r}),
            "rank 0 (stage 0, node1): phase forward: collective ep_all_to_all_fwd took usage to 79.00 GiB, "
            "above capacity 80.00 GiB minus headroom 2.00 GiB = 78.00 GiB");
}

TEST(ReportTest, CollectivesAveragedOverRanks) {
  std::vector<RankResult> ranks = {Fitting(0), Fitting(1)};
  CollectiveResult c;
  c.name = "tp_all_reduce_fwd";
  c.group = "tp";
  c.size_bytes = 1'000'000;
  c.nranks = 2;
  c.seconds = 100e-6;
  ranks[0].collectives = {c};
  c.seconds = 300e-6;
  ranks[1].collectives = {c};
  const std::vector<CollectiveSummary> s = SummarizeCollectives(ranks);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].seconds, 200e-6);
  EXPECT_DOUBLE_EQ(s[0].bw.algbw_gb_per_s, 5.0);  // 1e6 B / 200 us
  EXPECT_DOUBLE_EQ(s[0].bw.busbw_gb_per_s, 5.0);  // all-reduce on 2 ranks: factor 1
  EXPECT_EQ(s[0].ranks_run, 2);
}

TEST(ReportTest, FitFloatDegradesLikeNcclTests) {
  EXPECT_EQ(FitFloat(3.14159, 7), "3.14");
  EXPECT_EQ(FitFloat(12345.678, 7), "12345.7");
  EXPECT_EQ(FitFloat(1234567.8, 7), "1234568");
  EXPECT_EQ(FitFloat(123456789.0, 7), "1e+08");
}

TEST(ReportTest, RankResultRoundTripsThroughJson) {
  RankResult r = Fitting(3);
  r.stage = 2;
  r.scale = 1.0 / 1024;
  r.process_peak_bytes = 5;
  r.measured_by_phase = {1, 2, 3, 4, 5};
  CollectiveResult c;
  c.name = "pp_send_activations";
  c.group = "pp";
  c.kind = CollectiveKind::kSendRecv;
  c.size_bytes = 64;
  c.seconds = 0.25;
  c.scratch = true;
  r.collectives = {c};
  r.failure = {true, Phase::kLoss, "logits_and_loss", 7, 8, "x"};
  StatusOr<RankResult> back = RankResultFromJson(ToJsonText(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJsonText(*back), ToJsonText(r));
  EXPECT_EQ(RankResultFromJson("{").status().code(), Code::kInternal);
}

TEST(ReportTest, TableAndJson) {
  const std::vector<RankResult> ranks = {Fitting(0)};
  const ReportContext ctx{"plan.yaml", "host", 1.0 / 1024, 2, 8};
  const std::string table = FormatTable(ranks, ctx);
  EXPECT_EQ(table.rfind("# shardplan validate plan.yaml: backend host, 1 of 8 ranks, scale 1/1024, 2 iterations\n", 0), 0u)
      << table;
  EXPECT_NE(table.find("# Verdict: every rank fits with the plan's headroom\n"), std::string::npos) << table;
  EXPECT_NE(table.find("non-torch (measured)"), std::string::npos) << table;
  const nlohmann::json j = nlohmann::json::parse(FormatJson(ranks, ctx));
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_TRUE(j["failure"].is_null());
  EXPECT_EQ(j["ranks"][0]["measured_peak_bytes"], 59 * kGiB);
}

}  // namespace
}  // namespace shardplan::validate
