#include "validate/host_backend.h"

#include <cstring>

#include <gtest/gtest.h>

namespace shardplan::validate {
namespace {

TEST(HostBackendTest, AllocatesTouchedMemoryAndTracksIt) {
  std::unique_ptr<Communicator> world = SingleProcessWorld();
  HostBackend b(1 << 20);
  ASSERT_TRUE(b.Open(0).ok());
  ASSERT_TRUE(b.Connect(*world, Deadline()).ok());
  StatusOr<DeviceBuffer> buf = b.Allocate(3 * 4096 + 1);
  ASSERT_TRUE(buf.ok()) << buf.status().message();
  EXPECT_EQ(static_cast<char*>(buf->ptr)[3 * 4096], 0);
  StatusOr<MemorySample> s = b.Sample();
  EXPECT_EQ(s->used_bytes, 3 * 4096 + 1);
  EXPECT_EQ(s->total_bytes, 1 << 20);
  EXPECT_EQ(s->free_bytes, (1 << 20) - (3 * 4096 + 1));
  EXPECT_EQ(s->process_bytes, -1);
  ASSERT_TRUE(b.Free(*buf).ok());
  EXPECT_EQ(b.Sample()->used_bytes, 0);
  EXPECT_EQ(b.Free(*buf).code(), Code::kInternal);  // twice: not ours any more
}

TEST(HostBackendTest, GroupsAndCollectivesInAWorldOfOne) {
  std::unique_ptr<Communicator> world = SingleProcessWorld();
  HostBackend b(1 << 20);
  ASSERT_TRUE(b.Open(0).ok());
  ASSERT_TRUE(b.Connect(*world, Deadline()).ok());
  EXPECT_EQ(*b.CreateGroup(-1, 0, Deadline()), -1);
  StatusOr<int> g = b.CreateGroup(0, 0, Deadline());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(b.GroupSize(*g), 1);
  StatusOr<DeviceBuffer> buf = b.Allocate(64);
  std::memset(buf->ptr, 7, 32);
  CollectiveCall call;
  call.kind = CollectiveKind::kAllToAll;
  call.size_bytes = 32;
  call.elem_bytes = 4;
  call.buffer = *buf;
  StatusOr<double> secs = b.Run(*g, call, Deadline());
  ASSERT_TRUE(secs.ok()) << secs.status().message();
  EXPECT_GE(*secs, 0.0);
  EXPECT_EQ(static_cast<char*>(buf->ptr)[63], 7);  // its own slice landed in the receive half
  b.Abort();
  EXPECT_EQ(b.Run(*g, call, Deadline()).status().code(), Code::kInternal);
  EXPECT_EQ(b.Run(*g, call, Deadline::In(-1)).status().code(), Code::kInternal);
}

}  // namespace
}  // namespace shardplan::validate
