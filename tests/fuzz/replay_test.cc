// Replays every stored fuzz input -- the minimized corpus and the reproducers of defects
// the fuzzers found -- through the same contract checks, without libFuzzer, so the
// ordinary suite keeps each fixed defect fixed.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/fuzz/contracts.h"

namespace shardplan::fuzz {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Replay : public ::testing::TestWithParam<std::string> {};

int ReplayFolder(const std::string& target, const fs::path& dir) {
  int n = 0;
  if (!fs::is_directory(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    ++n;
    EXPECT_EQ(Check(target, Read(e.path())), "") << e.path();
  }
  return n;
}

TEST_P(Replay, RegressionsKeepTheContract) {
  const fs::path root = fs::path(SHARDPLAN_SOURCE_DIR) / "tests/fuzz";
  ReplayFolder(GetParam(), root / "regressions" / GetParam());
}

TEST_P(Replay, CorpusKeepsTheContract) {
  const fs::path root = fs::path(SHARDPLAN_SOURCE_DIR) / "tests/fuzz";
  EXPECT_GT(ReplayFolder(GetParam(), root / "corpus" / GetParam()), 0) << "no stored corpus for " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Replay, ::testing::ValuesIn(Targets()),
                         [](const auto& info) { return info.param; });

TEST(FuzzContract, BrokenContractsAreReported) {
  // The checks themselves must bite: an unlocated error and an unknown target are reported.
  EXPECT_NE(Check("nope", "x"), "");
  EXPECT_EQ(Check("layout", "tp=8,zero=3"), "");
  EXPECT_EQ(Check("layout", "tp=eight"), "");  // an error quoting "eight" keeps the contract
  EXPECT_EQ(Check("cluster", "nodes: 2\ngpus_per_node: [8]\n"), "");
}

}  // namespace
}  // namespace shardplan::fuzz
