// Numeric formats of weights, activations, optimizer states and KV caches.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shardplan {

// kFp4 is NVFP4: e2m1 values with an fp8 scale per 16 (Blackwell's tensor-core FP4).
enum class Dtype { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4, kNf4, kFp4 };

// Bytes per element before any quantization scales (int4/nf4: 0.5).
double DtypeBytes(Dtype d);
std::string_view DtypeName(Dtype d);
// Accepts "bf16", "bfloat16", "float16", "fp16", "half", "float32", "fp32", "float",
// "fp8", "int8", "int4", "nf4", "nvfp4"; nullopt otherwise.
std::optional<Dtype> ParseDtype(std::string_view s);

// Bytes per parameter of a weight stored in `d` with group-wise quantization scales where
// the format has them: int8 per-channel is counted by the caller; int4 (GPTQ/AWQ, group
// 128): 0.5 + (2 B fp16 scale + 0.5 B packed zero) / 128 (auto-gptq QuantLinear layout);
// nf4 (bitsandbytes, block 64, double-quant): 0.5 + 1/64 + 4/16384.
double QuantizedBytesPerParam(Dtype d);

}  // namespace shardplan
