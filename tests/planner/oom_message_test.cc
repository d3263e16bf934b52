// explain-oom's parser on the two wordings PyTorch has used, and its three verdicts.
#include <gtest/gtest.h>

#include "planner/oom_message.h"
#include "planner/units.h"

namespace shardplan {
namespace {

// PyTorch 2.x wording (c10/cuda/CUDACachingAllocator.cpp).
constexpr char kNew[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.20 GiB is free. Process 4242 has 77.94 GiB memory in use. Of the allocated memory "
    "70.12 GiB is allocated by PyTorch, and 5.60 GiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
// PyTorch 1.x wording.
constexpr char kOld[] =
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.13 GiB "
    "already allocated; 1.67 GiB free; 12.52 GiB reserved in total by PyTorch)";

TEST(OomMessage, ParsesTheNewWording) {
  auto m = ParseOomMessage(kNew);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->gpu, 0);
  EXPECT_EQ(m->requested, *ParseBytes("3.91 GiB"));
  EXPECT_EQ(m->total, *ParseBytes("79.15 GiB"));
  EXPECT_EQ(m->allocated, *ParseBytes("70.12 GiB"));
  EXPECT_EQ(m->reserved, *ParseBytes("70.12 GiB") + *ParseBytes("5.60 GiB"));
  OomDiagnosis d = DiagnoseOom(*m);
  EXPECT_EQ(d.verdict, "fragmentation");  // 5.60 GiB cached > 3.91 GiB asked
}

TEST(OomMessage, ParsesTheOldWording) {
  auto m = ParseOomMessage(kOld);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->requested, 2LL << 30);
  EXPECT_EQ(m->reserved, *ParseBytes("12.52 GiB"));
  OomDiagnosis d = DiagnoseOom(*m);
  EXPECT_EQ(d.verdict, "working set");  // 0.39 GiB cached, 1.6 GiB outside torch
}

TEST(OomMessage, MemoryOutsideTorch) {
  auto m = ParseOomMessage(
      "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 0.50 GiB "
      "is free. Of the allocated memory 60.00 GiB is allocated by PyTorch, and 0.20 GiB is reserved by PyTorch but "
      "unallocated.");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->gpu, 3);
  EXPECT_EQ(DiagnoseOom(*m).verdict, "outside PyTorch");  // 18.45 GiB used but not reserved
}

TEST(OomMessage, RejectsOtherText) {
  EXPECT_EQ(ParseOomMessage("Segmentation fault").status().code(), Code::kBadInput);
  EXPECT_EQ(ParseOomMessage("CUDA out of memory.").status().code(), Code::kBadInput);
}

}  // namespace
}  // namespace shardplan
