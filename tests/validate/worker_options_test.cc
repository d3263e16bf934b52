#include "validate/worker_options.h"

#include <gtest/gtest.h>

namespace shardplan::validate {
namespace {

TEST(WorkerOptionsTest, ScaleDefaultsByBackendAndParsesFractions) {
  EXPECT_DOUBLE_EQ(*ParseScale("", "host"), 1.0 / 1024);
  EXPECT_DOUBLE_EQ(*ParseScale("", "cuda"), 1.0);
  EXPECT_DOUBLE_EQ(*ParseScale("1/1024", "cuda"), 1.0 / 1024);
  EXPECT_DOUBLE_EQ(*ParseScale("0.25", "host"), 0.25);
  EXPECT_DOUBLE_EQ(*ParseScale("1", "host"), 1.0);
  for (const char* bad : {"2", "0", "-1", "1/0", "abc", "1/2/3", "1/", "nan"}) {
    StatusOr<double> s = ParseScale(bad, "host");
    EXPECT_EQ(s.status().code(), Code::kBadInput) << bad;
  }
  EXPECT_EQ(ParseScale("2", "host").status().message(),
            "--scale 2: expected a factor in (0, 1] such as 1/1024 or 0.25");
}

TEST(WorkerOptionsTest, RanksAreSortedUniqueAndInsideThePlan) {
  EXPECT_EQ(*ParseRanks("all", 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(*ParseRanks("0,2,4-6", 8), (std::vector<int>{0, 2, 4, 5, 6}));
  EXPECT_EQ(*ParseRanks("3,1,1", 4), (std::vector<int>{1, 3}));
  EXPECT_EQ(*ParseRanks("5", 8), (std::vector<int>{5}));
  struct Bad {
    const char* text;
    const char* message;
  };
  const Bad cases[] = {
      {"4", "--ranks 4: rank 4 is outside the plan's 4 ranks"},
      {"2-1", "--ranks 2-1: expected all, or ranks and ranges such as 0,2,4-7"},
      {"1-", "--ranks 1-: expected all, or ranks and ranges such as 0,2,4-7"},
      {"a", "--ranks a: expected all, or ranks and ranges such as 0,2,4-7"},
      {"1,", "--ranks 1,: trailing comma"},
      {"", "--ranks : no ranks"},
  };
  for (const Bad& b : cases) EXPECT_EQ(ParseRanks(b.text, 4).status().message(), b.message) << b.text;
}

TEST(WorkerOptionsTest, Capacity) {
  EXPECT_EQ(*ParseCapacity(""), 0);
  EXPECT_EQ(*ParseCapacity("24 GiB"), 24LL << 30);
  EXPECT_EQ(ParseCapacity("0 GiB").status().message(), "--capacity 0 GiB: expected a positive size");
  EXPECT_EQ(ParseCapacity("24").status().code(), Code::kBadInput);  // a bare number has no unit
}

TEST(WorkerOptionsTest, ArgumentsRoundTripThroughTheFlags) {
  WorkerOptions o;
  o.plan = "plan.yaml";
  o.backend = "host";
  o.ranks = "0,2";
  o.scale = "1/64";
  o.capacity = "24 GiB";
  o.timeout_s = 30;
  o.iterations = 3;
  o.json = true;
  o.inject_fault = "oom:2";
  std::vector<std::string> args = WorkerArgs(o);
  EXPECT_EQ(args, (std::vector<std::string>{"plan.yaml", "--backend", "host", "--ranks", "0,2", "--timeout", "30",
                                            "--iters", "3", "--scale", "1/64", "--capacity", "24 GiB", "--json",
                                            "--inject-fault", "oom:2"}));
  WorkerOptions back;
  CLI::App app;
  AddWorkerFlags(app, back);
  std::reverse(args.begin(), args.end());  // CLI11 parses a vector in reverse order
  app.parse(args);
  EXPECT_EQ(back.plan, o.plan);
  EXPECT_EQ(back.backend, o.backend);
  EXPECT_EQ(back.ranks, o.ranks);
  EXPECT_EQ(back.scale, o.scale);
  EXPECT_EQ(back.capacity, o.capacity);
  EXPECT_EQ(back.timeout_s, o.timeout_s);
  EXPECT_EQ(back.iterations, o.iterations);
  EXPECT_EQ(back.json, o.json);
  EXPECT_EQ(back.inject_fault, o.inject_fault);
}

TEST(WorkerOptionsTest, TimeoutMargins) {
  EXPECT_DOUBLE_EQ(OperationSeconds(600), 595);  // margin capped at 5 s
  EXPECT_DOUBLE_EQ(WatchdogSeconds(600), 597.5);
  EXPECT_DOUBLE_EQ(OperationSeconds(20), 18);    // a tenth
  EXPECT_DOUBLE_EQ(OperationSeconds(2), 1.5);    // at least half a second
}

}  // namespace
}  // namespace shardplan::validate
