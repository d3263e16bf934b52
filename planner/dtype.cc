#include "planner/dtype.h"

#include "planner/strings.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace shardplan {

double DtypeBytes(Dtype d) {
  switch (d) {
    case Dtype::kFp32: return 4;
    case Dtype::kBf16:
    case Dtype::kFp16: return 2;
    case Dtype::kFp8:
    case Dtype::kInt8: return 1;
    case Dtype::kInt4:
    case Dtype::kNf4:
    case Dtype::kFp4: return 0.5;
  }
  return 2;
}

std::string_view DtypeName(Dtype d) {
  switch (d) {
    case Dtype::kFp32: return "fp32";
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp8: return "fp8";
    case Dtype::kInt8: return "int8";
    case Dtype::kInt4: return "int4";
    case Dtype::kNf4: return "nf4";
    case Dtype::kFp4: return "nvfp4";
  }
  return "?";
}

std::optional<Dtype> ParseDtype(std::string_view written) {
  // As sources write them: any case, and the mixed-precision and FP8 recipe labels of
  // Lightning/NeMo (bf16-mixed), Composer/llm-foundry (amp_bf16, amp_fp8), Megatron-Bridge's
  // tables (FP8-CS, MXFP8) and torchtitan's (float8 tensorwise, float8 rowwise: torchao's
  // recipe names). Here each is fp8; which scaling the words name is the workload reader's
  // to read (Fp8RecipeInPrecision, workload.h).
  const std::string s = Spelling(written);
  constexpr std::string_view kFp8Recipes[] = {"tensorwise", "rowwise", "rowwise-with-gw-hp", "delayed",
                                              "delayed-scaling", "current", "current-scaling", "e4m3"};
  for (const std::string_view prefix : {std::string_view("fp8-"), std::string_view("float8-")}) {
    if (s.rfind(prefix, 0) != 0) continue;
    const std::string_view recipe = std::string_view(s).substr(prefix.size());
    if (std::find(std::begin(kFp8Recipes), std::end(kFp8Recipes), recipe) != std::end(kFp8Recipes)) return Dtype::kFp8;
  }
  if (s == "fp32" || s == "float32" || s == "float" || s == "32" || s == "32-true") return Dtype::kFp32;
  if (s == "bf16" || s == "bfloat16" || s == "bf16-mixed" || s == "bf16-true" || s == "amp-bf16") return Dtype::kBf16;
  if (s == "fp16" || s == "float16" || s == "half" || s == "16-mixed" || s == "fp16-mixed" || s == "amp-fp16")
    return Dtype::kFp16;
  if (s == "fp8" || s == "float8" || s == "float8-e4m3fn" || s == "fp8-cs" || s == "fp8-ds" || s == "fp8-mx" ||
      s == "mxfp8" || s == "fp8-hybrid" || s == "fp8-blockwise" || s == "fp8-mixed" || s == "amp-fp8")
    return Dtype::kFp8;
  if (s == "int8") return Dtype::kInt8;
  if (s == "int4" || s == "gptq" || s == "awq") return Dtype::kInt4;
  if (s == "nf4") return Dtype::kNf4;
  if (s == "nvfp4" || s == "fp4" || s == "fp4-e2m1" || s == "nvfp4-mixed") return Dtype::kFp4;
  return std::nullopt;
}

double QuantizedBytesPerParam(Dtype d) {
  switch (d) {
    // memory-model.md 5.1: qweight int32[in/8,out] + qzeros int32[in/g,out/8] + scales fp16[in/g,out]
    case Dtype::kInt4: return 0.5 + (2.0 + 0.5) / 128.0;
    // memory-model.md 5.1: bnb NF4 block 64 with double quantization
    case Dtype::kNf4: return 0.5 + 1.0 / 64.0 + 4.0 / 16384.0;
    // memory-model.md 5.1: fp8 block 128x128 scales (DeepSeek-V3 layout), fp32 per block
    case Dtype::kFp8: return 1.0 + 4.0 / 16384.0;
    // NVFP4: an e4m3 scale per 16 values (and one fp32 scale per tensor)
    case Dtype::kFp4: return 0.5 + 1.0 / 16.0;
    default: return DtypeBytes(d);
  }
}

}  // namespace shardplan
