// One libFuzzer target: SP_FUZZ_TARGET names the reader (tests/fuzz/contracts.h). A broken
// contract aborts, so libFuzzer stores the input as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/contracts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string broken =
      shardplan::fuzz::Check(SP_FUZZ_TARGET, std::string_view(reinterpret_cast<const char*>(data), size));
  if (!broken.empty()) {
    std::fprintf(stderr, "contract broken (%s): %s\n", SP_FUZZ_TARGET, broken.c_str());
    std::abort();
  }
  return 0;
}
