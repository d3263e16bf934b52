// The CUDA backend on a real GPU (label `gpu`); skips where Open finds no usable GPU (no
// driver library, or a driver that sees no device).
#include "validate/cuda_backend.h"

#include <gtest/gtest.h>

namespace shardplan::validate {
namespace {

TEST(CudaBackendTest, AllocatesMeasuresAndFrees) {
  std::unique_ptr<Communicator> world = SingleProcessWorld();
  std::unique_ptr<DeviceBackend> gpu = MakeCudaBackend();
  const Status open = gpu->Open(0);
  if (!open.ok() && open.message().find("no usable GPU") != std::string::npos) GTEST_SKIP() << open.message();
  ASSERT_TRUE(open.ok()) << open.message();
  ASSERT_TRUE(gpu->Connect(*world, Deadline::In(60)).ok());
  StatusOr<MemorySample> before = gpu->Sample();
  ASSERT_TRUE(before.ok()) << before.status().message();
  StatusOr<DeviceBuffer> buf = gpu->Allocate(256LL << 20);
  ASSERT_TRUE(buf.ok()) << buf.status().message();
  StatusOr<MemorySample> after = gpu->Sample();
  EXPECT_GE(after->used_bytes - before->used_bytes, 256LL << 20);
  ASSERT_TRUE(gpu->Free(*buf).ok());
  // Far more than any GPU holds: out of memory is a "no", not an error.
  EXPECT_EQ(gpu->Allocate(1LL << 50).status().code(), Code::kNegative);
  EXPECT_EQ(*gpu->CreateGroup(-1, 0, Deadline::In(60)), -1);
  EXPECT_TRUE(gpu->Shutdown(Deadline::In(60)).ok());
}

}  // namespace
}  // namespace shardplan::validate
