#include "planner/oom_message.h"

#include <charconv>
#include <regex>

#include "planner/units.h"

namespace shardplan {
namespace {

// "20.00 MiB" / "1.5 GiB" inside the message.
std::optional<int64_t> Quantity(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return std::nullopt;
  auto bytes = ParseBytes(m[1].str() + " " + m[2].str());
  if (!bytes.ok()) return std::nullopt;
  return *bytes;
}

const char kQty[] = R"(([0-9]+(?:\.[0-9]+)?) ?([KMGT]iB|[KMGT]B|B))";

}  // namespace

StatusOr<OomMessage> ParseOomMessage(std::string_view view) {
  const std::string text(view);
  const std::string q = kQty;
  if (text.find("out of memory") == std::string::npos)
    return Status::BadInput("expected a CUDA out-of-memory message (\"CUDA out of memory. Tried to allocate ...\")");
  OomMessage m;
  auto requested = Quantity(text, "Tried to allocate " + q);
  if (!requested) return Status::BadInput("the message has no \"Tried to allocate <size>\"");
  m.requested = *requested;
  std::smatch gpu;
  if (std::regex_search(text, gpu, std::regex(R"(GPU ([0-9]+))"))) {
    // A device index past int is not a GPU; the message is still worth diagnosing.
    const std::string index = gpu[1].str();
    int value = -1;
    if (std::from_chars(index.data(), index.data() + index.size(), value).ec == std::errc()) m.gpu = value;
  }
  // PyTorch 2.x: "GPU 0 has a total capacity of X of which Y is free. Process P has Z memory
  // in use. Of the allocated memory A is allocated by PyTorch, and U is reserved by PyTorch
  // but unallocated."
  if (auto total = Quantity(text, "total capacity of " + q)) {
    m.total = *total;
    m.free = Quantity(text, "of which " + q + " is free").value_or(0);
    m.process = Quantity(text, "has " + q + " memory in use");
    m.allocated = Quantity(text, q + " is allocated by PyTorch").value_or(0);
    const int64_t unallocated = Quantity(text, q + " is reserved by PyTorch but unallocated").value_or(0);
    if (__builtin_add_overflow(m.allocated, unallocated, &m.reserved))
      return Status::BadInput("the message's allocated and reserved sizes add up past 8 EiB; no GPU has that");
    return m;
  }
  // PyTorch 1.x: "(GPU 0; X total capacity; A already allocated; F free; R reserved in total by PyTorch)"
  auto total = Quantity(text, q + " total capacity");
  if (!total) return Status::BadInput("the message states no total capacity of the GPU");
  m.total = *total;
  m.allocated = Quantity(text, q + " already allocated").value_or(0);
  m.free = Quantity(text, q + " free").value_or(0);
  m.reserved = Quantity(text, q + " reserved in total by PyTorch").value_or(m.allocated);
  if (m.reserved < m.allocated)  // PyTorch reserves what it allocates: a garbled or edited message
    return Status::BadInput("the message says " + FormatBytes(m.reserved) + " reserved but " + FormatBytes(m.allocated) +
                            " allocated; reserved memory includes the allocated");
  return m;
}

OomDiagnosis DiagnoseOom(const OomMessage& m) {
  OomDiagnosis d;
  d.message = m;
  d.cached_unallocated = m.reserved - m.allocated;
  const int64_t used = std::max<int64_t>(0, m.total - m.free);  // each size is in [0, 2^63)
  d.outside_torch = std::max<int64_t>(0, used - m.reserved);
  const int64_t other_processes = m.process ? std::max<int64_t>(0, used - *m.process) : 0;
  if (d.cached_unallocated >= m.requested) {
    d.verdict = "fragmentation";
    d.advice.push_back("the allocator holds " + FormatBytes(d.cached_unallocated) + " of freed blocks, more than the " +
                       FormatBytes(m.requested) + " asked for, but none is large enough: set "
                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  } else if (d.outside_torch - 2 * kGiB > m.requested) {
    d.verdict = "outside PyTorch";
    d.advice.push_back(FormatBytes(d.outside_torch) + " is used outside PyTorch's allocator: CUDA context (~0.6 GiB), "
                       "NCCL buffers (0.5-1 GiB per process group; NCCL_NVLS_ENABLE=0 frees ~256 MiB on NVSwitch "
                       "nodes), or other processes");
    if (other_processes > 0)
      d.advice.push_back("other processes hold " + FormatBytes(other_processes) + " of this GPU");
  } else {
    d.verdict = "working set";
    d.advice.push_back("PyTorch really has " + FormatBytes(m.allocated) + " live of " + FormatBytes(m.total) +
                       ": shard more (ZeRO-3/FSDP, TP, PP), recompute activations, lower the micro-batch, or offload");
    d.advice.push_back("`shardplan plan --layout ...` with the keys you keep shows which layouts fit, term by term");
  }
  return d;
}

}  // namespace shardplan
