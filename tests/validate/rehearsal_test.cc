#include "validate/rehearsal.h"

#include <cmath>

#include <gtest/gtest.h>

#include "validate/host_backend.h"

namespace shardplan::validate {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr Phase kSetup = Phase::kSetup, kForward = Phase::kForward, kBackward = Phase::kBackward,
                kStep = Phase::kStep;

// A GPU-like backend without a GPU: a fixed runtime footprint (context, NCCL) that the
// runtime holds, plus what is allocated; counts calls.
class FakeGpu final : public DeviceBackend {
 public:
  explicit FakeGpu(int64_t runtime) : runtime_(runtime) {}
  std::string_view Name() const override { return "fake"; }
  Status Open(int) override { return Status::Ok(); }
  Status Connect(Communicator&, const Deadline&) override { return Status::Ok(); }
  std::string DeviceName() const override { return "fake GPU"; }
  bool MeasuresRuntimeOverheads() const override { return true; }
  StatusOr<DeviceBuffer> Allocate(int64_t bytes) override {
    ++allocations;
    live_ += bytes;
    return DeviceBuffer{reinterpret_cast<void*>(static_cast<uintptr_t>(allocations)), bytes};
  }
  Status Free(DeviceBuffer b) override {
    live_ -= b.bytes;
    return Status::Ok();
  }
  StatusOr<MemorySample> Sample() override { return MemorySample{runtime_ + live_, 0, 0, -1}; }
  StatusOr<int> CreateGroup(int, int, const Deadline&) override { return -1; }
  int GroupSize(int) const override { return 1; }
  StatusOr<double> Run(int, const CollectiveCall&, const Deadline&) override { return 0.0; }
  void Abort() override {}
  Status Shutdown(const Deadline&) override { return Status::Ok(); }
  int allocations = 0;

 private:
  int64_t runtime_, live_ = 0;
};

Allocation Alloc(std::string term, int64_t bytes, Phase first, Phase last, int64_t index = 0,
                 int64_t count = 1, Pool pool = Pool::kTorch) {
  Allocation a;
  a.term = std::move(term);
  a.bytes = bytes;
  a.first = first;
  a.last = last;
  a.index = index;
  a.count = count;
  a.pool = pool;
  return a;
}

// Parameters 4 MiB, a 2 MiB context stand-in, activations 2 x 4 MiB, gradients 4 MiB.
RankManifest Manifest() {
  RankManifest m;
  m.allocations = {Alloc("parameters", 4 * kMiB, kSetup, kStep),
                   Alloc("cuda_context", 2 * kMiB, kSetup, kStep, 0, 1, Pool::kNonTorch),
                   Alloc("activations", 4 * kMiB, kForward, kBackward, 0, 2),
                   Alloc("activations", 4 * kMiB, kForward, kBackward, 1, 2),
                   Alloc("gradients", 4 * kMiB, kBackward, kStep)};
  m.live_bytes = LiveBytesByPhase(m.allocations);
  m.planned_device_peak = 20 * kMiB;
  m.planned_peak_phase = kBackward;
  return m;
}

RunConfig Config(int64_t capacity, int64_t headroom, double scale = 1) {
  RunConfig c;
  c.scale = scale;
  c.capacity_bytes = capacity;
  c.headroom_bytes = headroom;
  c.present = {0};
  return c;
}

RankResult RunOnHost(const RankManifest& m, const RunConfig& c) {
  std::unique_ptr<Communicator> world = SingleProcessWorld();
  HostBackend b(std::llround(static_cast<double>(c.capacity_bytes) * c.scale));
  return Rehearse(m, c, b, *world, 0);
}

TEST(RehearsalTest, WalksThePhasesAndMeasuresEachOne) {
  const RankResult r = RunOnHost(Manifest(), Config(32 * kMiB, 4 * kMiB));
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.measured_peak_bytes, 18 * kMiB);
  EXPECT_EQ(r.measured_peak_phase, kBackward);
  EXPECT_EQ(r.manifest_peak_bytes, 18 * kMiB);
  // setup: parameters + context; forward, loss and the loss's backward add the activations;
  // the layers' backward the gradients; step holds the gradients after the activations are freed.
  const std::array<int64_t, kPhaseCount> want = {6 * kMiB, 14 * kMiB, 14 * kMiB, 14 * kMiB, 18 * kMiB, 10 * kMiB};
  EXPECT_EQ(r.measured_by_phase, want);
  EXPECT_EQ(r.free_bytes(), 14 * kMiB);
  EXPECT_EQ(r.runtime_bytes_at_peak, 0);
  ASSERT_EQ(r.terms.size(), 4u);
  EXPECT_EQ(r.terms[2].name, "activations");
  EXPECT_EQ(r.terms[2].planned_bytes, 8 * kMiB);
  EXPECT_EQ(r.terms[2].allocated_bytes, 8 * kMiB);
  EXPECT_FALSE(r.terms[1].measured_by_runtime);
}

TEST(RehearsalTest, ScaledRunReportsAtPlanScale) {
  const RankResult r = RunOnHost(Manifest(), Config(32 * kMiB, 4 * kMiB, 1.0 / 1024));
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.measured_peak_bytes, 18 * kMiB);  // 18 KiB allocated, x 1024
  EXPECT_EQ(r.scale, 1.0 / 1024);
}

TEST(RehearsalTest, AllocationPastCapacityFailsNamingPhaseAndTerm) {
  const RankResult r = RunOnHost(Manifest(), Config(16 * kMiB, 0));
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.error_code, Code::kOk);
  EXPECT_EQ(ExitCodeOf(r), 1);
  EXPECT_TRUE(r.failure.failed);
  EXPECT_EQ(r.failure.phase, kBackward);
  EXPECT_EQ(r.failure.term, "gradients");
  EXPECT_EQ(r.failure.bytes, 4 * kMiB);
  EXPECT_EQ(r.failure.used_bytes, 14 * kMiB);
  EXPECT_EQ(r.failure.detail, "does not fit in the capacity");
}

TEST(RehearsalTest, PassingTheHeadroomFailsAtTheTermThatCrossedIt) {
  const RankResult r = RunOnHost(Manifest(), Config(32 * kMiB, 16 * kMiB));
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.failure.phase, kBackward);
  EXPECT_EQ(r.failure.term, "gradients");
  EXPECT_EQ(r.failure.used_bytes, 18 * kMiB);
  EXPECT_EQ(r.failure.detail, "usage passed capacity minus the plan's headroom");
}

TEST(RehearsalTest, InjectedOutOfMemoryStopsTheRunCleanly) {
  RunConfig c = Config(32 * kMiB, 0);
  c.fault = {FaultKind::kOom, 0};
  const RankResult r = RunOnHost(Manifest(), c);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.failure.phase, kForward);
  EXPECT_EQ(r.failure.term, "activations [1/2]");
  EXPECT_EQ(r.failure.detail, "injected out-of-memory (--inject-fault)");
}

TEST(RehearsalTest, GpuBackendMeasuresTheRuntimeInsteadOfAllocatingIt) {
  std::unique_ptr<Communicator> world = SingleProcessWorld();
  FakeGpu gpu(3 * kMiB);
  const RankResult r = Rehearse(Manifest(), Config(32 * kMiB, 4 * kMiB), gpu, *world, 0);
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.measured_peak_bytes, 19 * kMiB);  // 16 MiB allocated + 3 MiB runtime
  EXPECT_EQ(r.runtime_bytes_at_peak, 3 * kMiB);
  EXPECT_TRUE(r.terms[1].measured_by_runtime);
  EXPECT_EQ(r.terms[1].allocated_bytes, 0);
  // Terms born at setup are made once; the others every iteration: 1 + 2 x (2 + 1).
  EXPECT_EQ(gpu.allocations, 7);
}

TEST(RehearsalTest, CollectivesWithoutPeersAreSkipped) {
  RankManifest m = Manifest();
  m.groups = {{"tp", {0, 1}}};
  CollectiveStep c;
  c.name = "tp_all_reduce_fwd";
  c.group = "tp";
  c.size_bytes = 1024;
  c.phase = kForward;
  c.buffer = 2;
  m.collectives = {c};
  const RankResult r = RunOnHost(m, Config(32 * kMiB, 4 * kMiB));
  EXPECT_TRUE(r.fits);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_TRUE(r.collectives[0].skipped);  // rank 1 is not in this run
}

TEST(RehearsalTest, ParseFault) {
  EXPECT_EQ(ParseFault("")->kind, FaultKind::kNone);
  EXPECT_EQ(ParseFault("hang:3")->kind, FaultKind::kHang);
  EXPECT_EQ(ParseFault("hang:3")->rank, 3);
  EXPECT_EQ(ParseFault("oom:0")->kind, FaultKind::kOom);
  for (const char* bad : {"hang", "boom:1", "exit:", "exit:x"}) {
    EXPECT_EQ(ParseFault(bad).status().code(), Code::kBadInput) << bad;
  }
}

}  // namespace
}  // namespace shardplan::validate
