// End-to-end runs of the worker under `mpirun -np 4` on the host backend (CI has no GPU):
// a plan that fits exits 0; the same plan with too small a capacity exits 1 naming the
// rank, phase, term and bytes; faults end the job within --timeout. SP_WORKER and
// SP_MPIEXEC come from tests/validate/CMakeLists.txt.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "planner/io/plan_file.h"
#include "tests/validate/test_plans.h"

namespace shardplan::validate {
namespace {

struct Outcome {
  int code = -1;
  std::string out;     // stdout
  std::string err;     // stderr
  double seconds = 0;
};

// Runs `command` through the shell; stdout and stderr captured separately.
Outcome Shell(const std::string& command, const std::string& dir) {
  const std::string err_file = dir + "/stderr.txt";
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen((command + " 2>" + err_file).c_str(), "r");
  Outcome o;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) o.out.append(buf.data(), n);
  const int status = pclose(pipe);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  FILE* e = fopen(err_file.c_str(), "r");
  while (size_t n = fread(buf.data(), 1, buf.size(), e)) o.err.append(buf.data(), n);
  fclose(e);
  return o;
}

class MpiRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "sp_validate_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    // 4 ranks: tp=2 x dp=2, torchtitan FSDP2 (ZeRO-3): TP all-reduces (sequence parallelism off,
    // which torchtitan would otherwise turn on), FSDP all-gathers and reduce-scatters.
    StatusOr<Plan> plan = testing::Gpt2Plan("framework=torchtitan,tp=2,dp=2,zero=3,sp=off,mbs=1", 4);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    plan_ = *plan;
    ASSERT_TRUE(SavePlan(plan_, dir_ + "/plan.yaml").ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Outcome Mpirun(int np, const std::string& flags) {
    const std::string cmd = std::string(SP_MPIEXEC) + " -np " + std::to_string(np) +
                            " --allow-run-as-root --oversubscribe --bind-to none " + SP_WORKER + " " +
                            dir_ + "/plan.yaml --backend host " + flags;
    return Shell(cmd, dir_);
  }

  std::string dir_;
  Plan plan_;
};

TEST_F(MpiRunTest, PlanThatFitsExitsZero) {
  const Outcome o = Mpirun(4, "--json");
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_EQ(j["exit_code"], 0);
  ASSERT_EQ(j["ranks"].size(), 4u);
  for (const auto& r : j["ranks"]) {
    EXPECT_TRUE(r["fits"].get<bool>()) << r.dump();
    // Host backend: every term is allocated, so the peak is the manifest's live bytes at
    // most, to within the rounding of --scale (1/1024) on each allocation.
    EXPECT_LE(r["measured_peak_bytes"].get<int64_t>(), r["manifest_peak_bytes"].get<int64_t>() + 1024 * 2048);
    EXPECT_GT(r["measured_peak_bytes"].get<int64_t>(), 0);
  }
  bool ran_tp = false;
  for (const auto& c : j["collectives"]) {
    if (c["name"] == "tp_all_reduce_fwd") {
      ran_tp = c["ranks_run"] == 4 && c["nranks"] == 2 && c["time"].get<double>() > 0;
    }
  }
  EXPECT_TRUE(ran_tp) << j["collectives"].dump(1);
}

// Context parallelism folds the CP ranks into the FSDP group: dp=2 x cp=2 gathers over 4.
TEST_F(MpiRunTest, ContextParallelFsdpGathersOverDpTimesCp) {
  StatusOr<Plan> plan = testing::Gpt2Plan("framework=torchtitan,cp=2,dp=2,zero=3,mbs=1", 4);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_TRUE(SavePlan(*plan, dir_ + "/plan.yaml").ok());
  const Outcome o = Mpirun(4, "--json");
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const nlohmann::json j = nlohmann::json::parse(o.out);
  bool gathered = false;
  for (const auto& c : j["collectives"])
    if (c["name"] == "fsdp_all_gather_fwd") gathered = c["group"] == "dp_cp" && c["nranks"] == 4 && c["ranks_run"] == 4;
  EXPECT_TRUE(gathered) << j["collectives"].dump(1);
}

TEST_F(MpiRunTest, TooSmallCapacityExitsOneNamingRankPhaseTerm) {
  // 1 GiB at plan scale cannot hold the CUDA context stand-in plus GPT-2's states.
  const Outcome o = Mpirun(4, "--capacity '1 GiB'");
  ASSERT_EQ(o.code, 1) << o.err << o.out;
  const size_t verdict = o.out.find("# Verdict: DOES NOT FIT: rank ");
  ASSERT_NE(verdict, std::string::npos) << o.out;
  const std::string line = o.out.substr(verdict, o.out.find('\n', verdict) - verdict);
  EXPECT_NE(line.find(": phase "), std::string::npos) << line;
  EXPECT_NE(line.find("allocating "), std::string::npos) << line;
  EXPECT_NE(line.find(" in use of 1.00 GiB capacity"), std::string::npos) << line;
}

TEST_F(MpiRunTest, RehearsesChosenRanksOnly) {
  const Outcome o = Mpirun(2, "--ranks 1,3 --json");
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][0]["rank"], 1);
  EXPECT_EQ(j["ranks"][1]["rank"], 3);
  EXPECT_EQ(j["plan_ranks"], 4);
  for (const auto& c : j["collectives"]) {
    // Ranks 1 and 3 share a DP group (tp coordinate 1), not a TP group.
    if (c["group"] == "tp") {
      EXPECT_EQ(c["ranks_run"], 0) << c.dump();
    }
    if (c["group"] == "dp") {
      EXPECT_EQ(c["nranks"], 2) << c.dump();
    }
  }
}

TEST_F(MpiRunTest, InjectedOutOfMemoryIsReportedNotACrash) {
  const Outcome o = Mpirun(4, "--inject-fault oom:2");
  ASSERT_EQ(o.code, 1) << o.err << o.out;
  EXPECT_NE(o.out.find("# Verdict: DOES NOT FIT: rank 2 (stage 0, "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("injected out-of-memory"), std::string::npos) << o.out;
}

TEST_F(MpiRunTest, HungRankEndsWithinTimeout) {
  const Outcome o = Mpirun(4, "--timeout 6 --inject-fault hang:1");
  EXPECT_NE(o.code, 0);
  EXPECT_LT(o.seconds, 6.0 + 4.0) << "mpirun teardown took too long";
  EXPECT_NE(o.err.find("--timeout reached"), std::string::npos) << o.err;
}

// Counts the workers still running on this test's plan. The pattern is written "[p]lan.yaml"
// so that it does not match the shell running it: a pipeline's forked shells carry the
// parent's command line until they exec, and "plan.yaml" there was counted as an orphan.
std::string NoWorkersLeft(const std::string& dir) { return "pgrep -f '" + dir + "/[p]lan.yaml' | wc -l"; }

TEST_F(MpiRunTest, DeadRankEndsTheJob) {
  const Outcome o = Mpirun(4, "--timeout 20 --inject-fault exit:3");
  EXPECT_NE(o.code, 0);
  EXPECT_LT(o.seconds, 20.0);
  EXPECT_NE(o.err.find("rank 3: injected exit"), std::string::npos) << o.err;
}

// A rank SIGKILLed as its peers enter a collective ends the job, well within the timeout,
// naming the rank; no worker is left running.
TEST_F(MpiRunTest, KilledRankMidCollectiveEndsTheJob) {
  const Outcome o = Mpirun(4, "--timeout 20 --inject-fault kill:2");
  EXPECT_NE(o.code, 0);
  EXPECT_LT(o.seconds, 20.0);
  EXPECT_NE(o.err.find("rank 2: injected SIGKILL"), std::string::npos) << o.err;
  EXPECT_EQ(Shell(NoWorkersLeft(dir_), dir_).out, "0\n") << "orphaned workers";
}

// An allocation that fails in any phase is a verdict (exit 1) naming the rank and the phase.
TEST_F(MpiRunTest, OutOfMemoryInEachPhaseIsAVerdict) {
  for (const char* phase : {"setup", "forward", "backward", "step"}) {
    const Outcome o = Mpirun(4, std::string("--timeout 20 --inject-fault oom:1@") + phase);
    EXPECT_EQ(o.code, 1) << phase << ": " << o.err << o.out;
    EXPECT_NE(o.out.find("rank 1"), std::string::npos) << phase << ": " << o.out;
    EXPECT_NE(o.out.find(phase), std::string::npos) << phase << ": " << o.out;
  }
  EXPECT_EQ(Shell(NoWorkersLeft(dir_), dir_).out, "0\n") << "orphaned workers";
}

TEST_F(MpiRunTest, SingleRankRunsWithoutMpirun) {
  const Outcome o = Shell(std::string(SP_WORKER) + " " + dir_ + "/plan.yaml --backend host --ranks 0", dir_);
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("1 of 4 ranks"), std::string::npos) << o.out;
}

#ifdef SP_SHARDPLAN
// `shardplan validate` finds the worker next to itself and launches mpirun.
TEST_F(MpiRunTest, ShardplanValidateLaunchesTheWorker) {
  const std::string cli = std::string(SP_SHARDPLAN) + " validate " + dir_ + "/plan.yaml ";
  Outcome o = Shell(cli + "--backend host", dir_);
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("backend host, 4 of 4 ranks, scale 1/1024"), std::string::npos) << o.out;
  o = Shell(cli + "--backend host --capacity '1 GiB'", dir_);
  EXPECT_EQ(o.code, 1) << o.err << o.out;
  o = Shell(cli + "--backend host --ranks 3", dir_);  // one rank: no mpirun
  EXPECT_EQ(o.code, 0) << o.err << o.out;
  o = Shell(cli + "--np 2", dir_);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--np 2 but --ranks all names 4 of the plan's 4 ranks"), std::string::npos) << o.err;
  o = Shell(cli + "--print-command --launcher srun", dir_);
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out.rfind("srun --nodes 1 --ntasks 4 --ntasks-per-node 4 --gpus-per-node 4 --kill-on-bad-exit=1", 0), 0u)
      << o.out;
}
#endif

TEST_F(MpiRunTest, BadInputExitsTwo) {
  const Outcome o = Mpirun(4, "--scale 2");
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("rank 0,1,2,3: --scale 2: expected a factor in (0, 1]"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace shardplan::validate
