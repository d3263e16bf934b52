#include "validate/fault.h"

#include <charconv>
#include <string>

namespace shardplan::validate {

StatusOr<Fault> ParseFault(std::string_view text) {
  if (text.empty()) return Fault{};
  const size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  Fault f;
  if (kind == "hang") f.kind = FaultKind::kHang;
  else if (kind == "exit") f.kind = FaultKind::kExit;
  else if (kind == "oom") f.kind = FaultKind::kOom;
  const std::string_view rank = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  auto [end, ec] = std::from_chars(rank.data(), rank.data() + rank.size(), f.rank);
  if (f.kind == FaultKind::kNone || rank.empty() || ec != std::errc() || end != rank.data() + rank.size()) {
    return Status::BadInput("--inject-fault " + std::string(text) + ": expected hang:RANK, exit:RANK or oom:RANK");
  }
  return f;
}

}  // namespace shardplan::validate
