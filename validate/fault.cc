#include "validate/fault.h"

#include <charconv>
#include <string>

namespace shardplan::validate {

StatusOr<Fault> ParseFault(std::string_view text) {
  if (text.empty()) return Fault{};
  const Status bad = Status::BadInput("--inject-fault " + std::string(text) +
                                      ": expected KIND:RANK[@PHASE], KIND one of hang, exit, oom, kill; PHASE one of "
                                      "setup, forward, loss, backward, step");
  const size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  Fault f;
  if (kind == "hang") f.kind = FaultKind::kHang;
  else if (kind == "exit") f.kind = FaultKind::kExit;
  else if (kind == "oom") f.kind = FaultKind::kOom;
  else if (kind == "kill") f.kind = FaultKind::kKill;
  std::string_view rank = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  if (const size_t at = rank.find('@'); at != std::string_view::npos) {
    const std::string_view phase = rank.substr(at + 1);
    rank = rank.substr(0, at);
    bool found = false;
    for (int i = 0; i < kPhaseCount; ++i)
      if (PhaseName(static_cast<Phase>(i)) == phase) f.phase = static_cast<Phase>(i), found = true;
    if (!found) return bad;
  }
  auto [end, ec] = std::from_chars(rank.data(), rank.data() + rank.size(), f.rank);
  if (f.kind == FaultKind::kNone || rank.empty() || ec != std::errc() || end != rank.data() + rank.size()) return bad;
  return f;
}

}  // namespace shardplan::validate
