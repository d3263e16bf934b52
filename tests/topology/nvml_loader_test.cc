// NVML through its function table: the dlopen loader's failures, and QueryNvml driven by a
// fake NVML (test_support.h), so every path runs without a GPU or a driver.
#include "topology/nvml_loader.h"

#include <gtest/gtest.h>

#include "tests/topology/test_support.h"

namespace shardplan {
namespace {

using testing::DgxH100;
using testing::FakeNvml;

TEST(LoadNvml, MissingLibraryIsAStatusNotACrash) {
  StatusOr<NvmlFunctions> nvml = LoadNvml("libshardplan-no-such-nvml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), Code::kInternal);
  EXPECT_EQ(nvml.status().message().rfind("cannot load libshardplan-no-such-nvml.so.1 (the NVIDIA driver's NVML): ", 0), 0u)
      << nvml.status().message();
}

TEST(LoadNvml, LibraryWithoutNvmlSymbolsNamesTheFirstMissing) {
  StatusOr<NvmlFunctions> nvml = LoadNvml("libm.so.6");  // loads, but is not NVML
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), Code::kInternal);
  EXPECT_EQ(nvml.status().message(), "libm.so.6 lacks nvmlInit_v2; the NVIDIA driver is too old");
}

TEST(QueryNvml, ReadsEveryGpuOfAFakeDgxH100) {
  FakeNvml fake = DgxH100();
  StatusOr<NvmlSnapshot> snap = QueryNvml(fake.Table());
  ASSERT_TRUE(snap.ok()) << snap.status().message();
  EXPECT_EQ(snap->driver_version, "550.90.07");
  ASSERT_EQ(snap->gpus.size(), 8u);
  const NvmlGpu& g0 = snap->gpus[0];
  EXPECT_EQ(g0.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0.memory_bytes, 85520809984);  // 81559 MiB
  EXPECT_EQ(g0.pci_bus_id, "00000000:1B:00.0");
  EXPECT_EQ(g0.compute_capability, 90);
  EXPECT_EQ(g0.numa_node, 0);
  EXPECT_EQ(g0.cpu_affinity, "0-55,112-167");
  EXPECT_EQ(snap->gpus[7].cpu_affinity, "56-111,168-223");
  EXPECT_EQ(g0.pcie_gen, 5);
  EXPECT_EQ(g0.pcie_width, 16);
  ASSERT_EQ(g0.nvlink_peers.size(), 18u);
  EXPECT_EQ(g0.nvlink_peers[0], "00000000:05:00.0");
  EXPECT_EQ(g0.nvlink_peers[17], "00000000:08:00.0");
  ASSERT_EQ(snap->levels.size(), 8u);
  EXPECT_EQ(snap->levels[0][3], 40);
  EXPECT_EQ(snap->levels[0][4], 50);
  EXPECT_EQ(fake.init_calls, 1);
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(QueryNvml, MissingOptionalEntryPointsLeaveFieldsUnknown) {
  FakeNvml fake = DgxH100();
  NvmlFunctions f = fake.Table();
  f.compute_capability = nullptr;
  f.numa_node = nullptr;
  f.cpu_affinity = nullptr;
  f.nvlink_state = nullptr;
  f.common_ancestor = nullptr;
  f.driver_version = nullptr;
  f.max_pcie_gen = nullptr;
  StatusOr<NvmlSnapshot> snap = QueryNvml(f);
  ASSERT_TRUE(snap.ok()) << snap.status().message();
  const NvmlGpu& g = snap->gpus[2];
  EXPECT_EQ(g.compute_capability, 0);
  EXPECT_EQ(g.numa_node, -1);
  EXPECT_EQ(g.cpu_affinity, "");
  EXPECT_TRUE(g.nvlink_peers.empty());
  EXPECT_EQ(g.pcie_gen, 0);
  EXPECT_EQ(g.pcie_width, 16);
  EXPECT_TRUE(snap->levels.empty());
  EXPECT_EQ(snap->driver_version, "");
}

TEST(QueryNvml, InitFailureIsInternalWithNvmlsReason) {
  FakeNvml fake = DgxH100();
  fake.init_result = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  StatusOr<NvmlSnapshot> snap = QueryNvml(fake.Table());
  ASSERT_FALSE(snap.ok());
  EXPECT_EQ(snap.status().code(), Code::kInternal);
  EXPECT_EQ(snap.status().message(), "nvmlInit_v2 failed: Driver Not Loaded (nvmlReturn_t 9)");
  EXPECT_EQ(fake.shutdown_calls, 0);
}

TEST(QueryNvml, FailureAfterInitStillShutsDown) {
  FakeNvml fake = DgxH100();
  NvmlFunctions f = fake.Table();
  f.memory = [](NvmlDevice, NvmlMemory*) { return 15; };  // NVML_ERROR_GPU_IS_LOST
  StatusOr<NvmlSnapshot> snap = QueryNvml(f);
  ASSERT_FALSE(snap.ok());
  EXPECT_EQ(snap.status().message(), "nvmlDeviceGetMemoryInfo for GPU 0 failed: Unknown Error (nvmlReturn_t 15)");
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(QueryNvml, IncompleteTableIsRejected) {
  NvmlFunctions empty;
  StatusOr<NvmlSnapshot> snap = QueryNvml(empty);
  ASSERT_FALSE(snap.ok());
  EXPECT_EQ(snap.status().message(), "the NVML function table lacks a required entry point");
}

TEST(CpuListFromMask, RangesAndSingles) {
  EXPECT_EQ(CpuListFromMask({0}), "");
  EXPECT_EQ(CpuListFromMask({0xffUL}), "0-7");
  EXPECT_EQ(CpuListFromMask({0b1010UL}), "1,3");
  // 0-55 and 112-167 (DGX H100 socket 0): bits across three 64-bit words.
  std::vector<unsigned long> mask(4, 0);
  for (int cpu = 0; cpu < 224; ++cpu)
    if (cpu % 112 < 56) mask[cpu / 64] |= 1UL << (cpu % 64);
  EXPECT_EQ(CpuListFromMask(mask), "0-55,112-167");
}

}  // namespace
}  // namespace shardplan
