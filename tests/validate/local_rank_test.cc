#include "validate/local_rank.h"

#include <map>

#include <gtest/gtest.h>

namespace shardplan::validate {
namespace {

GetEnv Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(LocalRankTest, LaunchersInOrder) {
  struct Case {
    std::map<std::string, std::string> env;
    std::optional<int> want;
  };
  const Case cases[] = {
      {{}, std::nullopt},
      {{{"LOCAL_RANK", "3"}}, 3},                                          // torchrun
      {{{"SLURM_LOCALID", "2"}, {"LOCAL_RANK", "3"}}, 2},                  // Slurm before torchrun
      {{{"PMI_LOCAL_RANK", "1"}, {"SLURM_LOCALID", "2"}}, 1},
      {{{"PMIX_LOCAL_RANK", "5"}, {"PMI_LOCAL_RANK", "1"}}, 5},
      {{{"OMPI_COMM_WORLD_LOCAL_RANK", "7"}, {"PMIX_LOCAL_RANK", "5"}}, 7},  // OpenMPI first
      {{{"OMPI_COMM_WORLD_LOCAL_RANK", ""}, {"LOCAL_RANK", "4"}}, 4},      // empty is unset
  };
  for (const Case& c : cases) {
    StatusOr<std::optional<int>> got = LocalRankFromEnv(Env(c.env));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, c.want);
  }
}

TEST(LocalRankTest, MalformedValuesAreBadInput) {
  for (const char* bad : {"x", "-1", "2a", " 1"}) {
    StatusOr<std::optional<int>> got = LocalRankFromEnv(Env({{"LOCAL_RANK", bad}}));
    EXPECT_EQ(got.status().code(), Code::kBadInput) << bad;
  }
  EXPECT_EQ(LocalRankFromEnv(Env({{"SLURM_LOCALID", "x"}})).status().message(),
            "SLURM_LOCALID=\"x\": expected a non-negative integer local rank");
}

TEST(LocalRankTest, HostHashIgnoresTheDomain) {
  EXPECT_EQ(HostHash("node1"), HostHash("node1.cluster.local"));
  EXPECT_NE(HostHash("node1"), HostHash("node2"));
  EXPECT_EQ(HostHash(""), 14695981039346656037ull);  // FNV-1a offset basis
}

TEST(LocalRankTest, RanksOnTheSameHostCountUp) {
  // Ranks 0, 2, 3 on host A; 1 and 4 on host B.
  const std::vector<uint64_t> hashes = {11, 22, 11, 11, 22};
  const int want[] = {0, 0, 1, 2, 1};
  for (int r = 0; r < 5; ++r) EXPECT_EQ(LocalRankFromHashes(hashes, r), want[r]) << r;
}

TEST(LocalRankTest, WorldOfOneWithoutLauncherIsRankZero) {
  std::unique_ptr<Communicator> world = SingleProcessWorld();
  // LOCAL_RANK may be set by whoever runs the tests; either way the result is a rank.
  StatusOr<int> r = DiscoverLocalRank(*world);
  ASSERT_TRUE(r.ok()) << r.status().message();
  if (std::getenv("LOCAL_RANK") == nullptr && std::getenv("OMPI_COMM_WORLD_LOCAL_RANK") == nullptr &&
      std::getenv("SLURM_LOCALID") == nullptr && std::getenv("PMIX_LOCAL_RANK") == nullptr &&
      std::getenv("PMI_LOCAL_RANK") == nullptr) {
    EXPECT_EQ(*r, 0);
  }
}

}  // namespace
}  // namespace shardplan::validate
