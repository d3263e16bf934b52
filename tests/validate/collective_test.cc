#include "validate/collective.h"

#include <gtest/gtest.h>

namespace shardplan::validate {
namespace {

// Bus-bandwidth factors from nccl-tests src/<op>.cu *GetBw (ecosystem.md 6.3).
struct FactorCase {
  CollectiveKind kind;
  int nranks;
  double factor;
};

TEST(CollectiveTest, BusFactorsMatchNcclTests) {
  const FactorCase cases[] = {
      {CollectiveKind::kAllReduce, 8, 1.75},      // 2(n-1)/n
      {CollectiveKind::kAllReduce, 2, 1.0},
      {CollectiveKind::kAllGather, 8, 0.875},     // (n-1)/n
      {CollectiveKind::kReduceScatter, 4, 0.75},
      {CollectiveKind::kAllToAll, 2, 0.5},
      {CollectiveKind::kSendRecv, 8, 1.0},
  };
  for (const FactorCase& c : cases) {
    EXPECT_DOUBLE_EQ(BusFactor(c.kind, c.nranks), c.factor) << CollectiveName(c.kind) << " n=" << c.nranks;
  }
}

TEST(CollectiveTest, BandwidthInNcclTestsUnits) {
  // 1 GB all-reduced in 0.5 s over 8 ranks: algbw 2 GB/s, busbw 2 x 1.75.
  Bandwidth ar = ComputeBandwidth(CollectiveKind::kAllReduce, 1'000'000'000, 0.5, 8);
  EXPECT_DOUBLE_EQ(ar.algbw_gb_per_s, 2.0);
  EXPECT_DOUBLE_EQ(ar.busbw_gb_per_s, 3.5);
  // An 8 GB gathered array in 2 s over 4 ranks: algbw 4, busbw 4 x 3/4.
  Bandwidth ag = ComputeBandwidth(CollectiveKind::kAllGather, 8'000'000'000, 2.0, 4);
  EXPECT_DOUBLE_EQ(ag.algbw_gb_per_s, 4.0);
  EXPECT_DOUBLE_EQ(ag.busbw_gb_per_s, 3.0);
}

TEST(CollectiveTest, BufferBytes) {
  EXPECT_EQ(BufferBytes(CollectiveKind::kAllReduce, 100), 100);
  EXPECT_EQ(BufferBytes(CollectiveKind::kAllGather, 100), 100);
  EXPECT_EQ(BufferBytes(CollectiveKind::kReduceScatter, 100), 100);
  EXPECT_EQ(BufferBytes(CollectiveKind::kAllToAll, 100), 200);
  EXPECT_EQ(BufferBytes(CollectiveKind::kSendRecv, 100), 200);
}

struct RoundCase {
  CollectiveKind kind;
  int64_t size;
  int nranks, elem;
  int64_t want;
};

TEST(CollectiveTest, RoundSizeSplitsEvenly) {
  const RoundCase cases[] = {
      {CollectiveKind::kAllGather, 1000, 4, 2, 1000},
      {CollectiveKind::kAllGather, 1007, 4, 2, 1000},     // down to a multiple of 4 x 2
      {CollectiveKind::kReduceScatter, 7, 4, 2, 8},       // never below one element per rank
      {CollectiveKind::kAllToAll, 100, 3, 4, 96},
      {CollectiveKind::kAllReduce, 1001, 4, 2, 1000},     // only whole elements
      {CollectiveKind::kSendRecv, 3, 2, 4, 4},
  };
  for (const RoundCase& c : cases) {
    EXPECT_EQ(RoundSize(c.kind, c.size, c.nranks, c.elem), c.want) << CollectiveName(c.kind) << " " << c.size;
  }
}

}  // namespace
}  // namespace shardplan::validate
