// The CUDA backend's loader, without a GPU: what it says when the driver library or NCCL is
// missing or is some other library, the NCCL this machine has (where it has one), and -- where
// a CUDA toolkit's cuda.h and nccl.h are installed -- that the types and constants
// validate/cuda_api.h declares are those headers' own.
#include "validate/cuda_api.h"

#include <gtest/gtest.h>

#include <cstddef>

#if SP_HAVE_CUDA_HEADERS
#include <cuda.h>
#include <nccl.h>
#endif

namespace shardplan::validate::cuda {
namespace {

TEST(CudaApiTest, MissingDriverLibraryIsNoUsableGpu) {
  Api api;
  const Status s = LoadDriver("libcuda-not-installed.so.1", api);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no usable GPU (libcuda-not-installed.so.1, the NVIDIA driver's CUDA library, does not load"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--backend host"), std::string::npos);
}

TEST(CudaApiTest, AnotherLibraryInPlaceOfTheDriverIsNamed) {
  Api api;
  const Status s = LoadDriver("libm.so.6", api);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("libm.so.6 lacks cuInit: not a CUDA driver library"), std::string::npos) << s.message();
  EXPECT_EQ(api.cuInit, nullptr);
}

TEST(CudaApiTest, MissingNcclSaysWhereToFindOne) {
  Api api;
  const Status s = LoadNccl("libnccl-not-installed.so.2", api);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NCCL does not load"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("nvidia/nccl/lib"), std::string::npos);
  EXPECT_NE(s.message().find("SHARDPLAN_NCCL_LIBRARY"), std::string::npos);
}

TEST(CudaApiTest, AnotherLibraryInPlaceOfNcclNamesTheVersionNeeded) {
  Api api;
  const Status s = LoadNccl("libm.so.6", api);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("libm.so.6 lacks ncclGetVersion: the validator needs NCCL 2.18 or later"), std::string::npos)
      << s.message();
}

TEST(CudaApiTest, LoadsTheNcclThisMachineHas) {
  Api api;
  const Status s = LoadNccl("libnccl.so.2", api);
  if (!s.ok() && s.message().find("NCCL does not load") != std::string::npos) GTEST_SKIP() << s.message();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GE(api.nccl_version, 21800);
  EXPECT_NE(api.nccl_path.find("libnccl.so.2"), std::string::npos) << api.nccl_path;
  EXPECT_NE(api.ncclCommSplit, nullptr);
  // ncclAlltoAll exactly where the library is 2.28 or later.
  EXPECT_EQ(api.ncclAlltoAll != nullptr, api.nccl_version >= 22800) << api.nccl_version;
}

TEST(CudaApiTest, NcclVersionText) {
  EXPECT_EQ(NcclVersionText(22809), "2.28.9");
  EXPECT_EQ(NcclVersionText(21805), "2.18.5");
  EXPECT_EQ(NcclVersionText(0), "unknown");
}

#if SP_HAVE_CUDA_HEADERS
TEST(CudaApiTest, DeclarationsMatchTheToolkitHeaders) {
  static_assert(kCuSuccess == CUDA_SUCCESS);
  static_assert(kCuErrorOutOfMemory == CUDA_ERROR_OUT_OF_MEMORY);
  static_assert(kCuErrorNoDevice == CUDA_ERROR_NO_DEVICE);
  static_assert(kCuErrorNotReady == CUDA_ERROR_NOT_READY);
  static_assert(kCuStreamNonBlocking == CU_STREAM_NON_BLOCKING);
  static_assert(sizeof(CUdeviceptr) == sizeof(::CUdeviceptr));
  static_assert(kNcclSuccess == ncclSuccess && kNcclInProgress == ncclInProgress);
  static_assert(sizeof(NcclUniqueId) == sizeof(ncclUniqueId));
  static_assert(int{kNcclInt8} == int{ncclInt8} && int{kNcclFloat32} == int{ncclFloat32} &&
                int{kNcclFloat64} == int{ncclFloat64} && int{kNcclBfloat16} == int{ncclBfloat16});
  static_assert(kNcclSum == int{ncclSum} && kNcclSplitNoColor == NCCL_SPLIT_NOCOLOR);
  // The config is a prefix of ncclConfig_t, field for field.
  static_assert(offsetof(NcclConfig, magic) == offsetof(ncclConfig_t, magic));
  static_assert(offsetof(NcclConfig, version) == offsetof(ncclConfig_t, version));
  static_assert(offsetof(NcclConfig, blocking) == offsetof(ncclConfig_t, blocking));
  static_assert(offsetof(NcclConfig, max_ctas) == offsetof(ncclConfig_t, maxCTAs));
  static_assert(offsetof(NcclConfig, net_name) == offsetof(ncclConfig_t, netName));
  static_assert(offsetof(NcclConfig, split_share) == offsetof(ncclConfig_t, splitShare));
  static_assert(sizeof(NcclConfig) <= sizeof(ncclConfig_t));
  const NcclConfig ours;
  const ncclConfig_t theirs = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(ours.magic, theirs.magic);
  EXPECT_EQ(ours.blocking, theirs.blocking);
  EXPECT_EQ(ours.split_share, theirs.splitShare);
  EXPECT_EQ(ours.version, static_cast<unsigned>(NCCL_VERSION(2, 18, 0)));
}
#endif

}  // namespace
}  // namespace shardplan::validate::cuda
