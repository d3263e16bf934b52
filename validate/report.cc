#include "validate/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "planner/units.h"

namespace shardplan::validate {

int JobExitCode(const std::vector<RankResult>& ranks) {
  int code = 0;
  for (const RankResult& r : ranks) code = std::max(code, ExitCodeOf(r));
  return code;
}

static std::string OneFailure(const RankResult& r) {
  const std::string who = fmt::format("rank {} (stage {}, {})", r.rank, r.stage, r.host);
  if (r.error_code != Code::kOk) return who + ": " + r.error;
  const Failure& f = r.failure;
  if (!f.failed) {
    return fmt::format("{}: peak {} is above capacity {} minus headroom {}", who,
                       FormatBytes(r.measured_peak_bytes), FormatBytes(r.capacity_bytes),
                       FormatBytes(r.headroom_bytes));
  }
  const std::string where = fmt::format("{}: phase {}: {}", who, PhaseName(f.phase), f.term);
  if (f.detail == "usage passed capacity minus the plan's headroom") {
    // A collective or a phase boundary allocates nothing of ours: no bytes to name.
    const std::string size = f.bytes > 0 ? " (" + FormatBytes(f.bytes) + ")" : "";
    return fmt::format("{}{} took usage to {}, above capacity {} minus headroom {} = {}", where, size,
                       FormatBytes(f.used_bytes), FormatBytes(r.capacity_bytes), FormatBytes(r.headroom_bytes),
                       FormatBytes(r.limit_bytes()));
  }
  return fmt::format("{}: allocating {} failed with {} in use of {} capacity: {}", where,
                     FormatBytes(f.bytes), FormatBytes(f.used_bytes), FormatBytes(r.capacity_bytes),
                     f.detail);
}

std::string FailureMessage(const std::vector<RankResult>& ranks) {
  const int code = JobExitCode(ranks);
  if (code == 0) return "";
  for (const RankResult& r : ranks) {
    if (ExitCodeOf(r) == code) return OneFailure(r);
  }
  return "";
}

std::vector<CollectiveSummary> SummarizeCollectives(const std::vector<RankResult>& ranks) {
  std::vector<CollectiveSummary> out;
  for (const RankResult& r : ranks) {
    for (const CollectiveResult& c : r.collectives) {
      auto it = std::find_if(out.begin(), out.end(), [&](const CollectiveSummary& s) { return s.name == c.name; });
      if (it == out.end()) {
        out.push_back({c.name, c.group, c.kind, c.phase, 0, c.elem_bytes, 1, c.repeat, 0, {}, 0, false, false});
        it = out.end() - 1;
      }
      it->skipped = it->skipped || c.skipped;
      if (c.skipped || c.seconds <= 0) continue;
      it->size_bytes = std::max(it->size_bytes, c.size_bytes);
      it->nranks = std::max(it->nranks, c.nranks);
      it->seconds += c.seconds;  // summed here, averaged below
      it->scratch = it->scratch || c.scratch;
      ++it->ranks_run;
    }
  }
  for (CollectiveSummary& s : out) {
    if (s.ranks_run == 0) continue;
    s.seconds /= s.ranks_run;
    s.bw = ComputeBandwidth(s.kind, s.size_bytes, s.seconds, s.nranks);
  }
  return out;
}

std::string FitFloat(double v, int width) {
  for (const char* f : {"{:.2f}", "{:.1f}", "{:.0f}"}) {
    std::string s = fmt::format(fmt::runtime(f), v);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:.0e}", v);
}

static const char* TypeName(int elem) {
  switch (elem) {
    case 1: return "int8";
    case 2: return "bfloat16";
    case 8: return "double";
    default: return "float";
  }
}

static std::string RankRows(const std::vector<RankResult>& ranks) {
  std::string o = fmt::format("# {:>5} {:>5}  {:<12} {:>11} {:>11} {:>11} {:>11}  {:<8} {:>11}  {}\n",
                              "rank", "stage", "host", "planned", "manifest", "measured", "runtime",
                              "at", "free", "verdict");
  for (const RankResult& r : ranks) {
    if (r.error_code != Code::kOk) {  // nothing it measured means anything
      o += fmt::format("  {:>5} {:>5}  {:<12} {:>11} {:>11} {:>11} {:>11}  {:<8} {:>11}  ERROR\n", r.rank, r.stage,
                       r.host.substr(0, 12), FormatBytes(r.planned_peak_bytes), FormatBytes(r.manifest_peak_bytes),
                       "-", "-", "-", "-");
      continue;
    }
    const char* verdict = r.stopped ? "stopped" : r.fits ? "fits" : "FAILS";
    o += fmt::format("  {:>5} {:>5}  {:<12} {:>11} {:>11} {:>11} {:>11}  {:<8} {:>11}  {}\n", r.rank, r.stage,
                     r.host.substr(0, 12), FormatBytes(r.planned_peak_bytes), FormatBytes(r.manifest_peak_bytes),
                     FormatBytes(r.measured_peak_bytes), FormatBytes(r.runtime_bytes_at_peak),
                     PhaseName(r.measured_peak_phase), FormatBytes(r.free_bytes()), verdict);
  }
  return o;
}

// The terms of the rank that failed, else of the one with the highest measured peak.
static std::string TermRows(const std::vector<RankResult>& ranks) {
  const RankResult* pick = &ranks.front();
  for (const RankResult& r : ranks) {
    if (ExitCodeOf(r) > ExitCodeOf(*pick) ||
        (ExitCodeOf(r) == ExitCodeOf(*pick) && r.measured_peak_bytes > pick->measured_peak_bytes)) {
      pick = &r;
    }
  }
  std::string o = fmt::format("#\n# Terms of rank {} (planned bytes; the most allocated at once)\n", pick->rank);
  o += fmt::format("# {:<28} {:>11} {:>11}  {}\n", "term", "planned", "allocated", "pool");
  for (const TermResult& t : pick->terms) {
    const std::string pool = t.measured_by_runtime ? "non-torch (measured)" : t.pool == Pool::kTorch ? "torch" : "non-torch";
    o += fmt::format("  {:<28} {:>11} {:>11}  {}\n", t.name, FormatBytes(t.planned_bytes),
                     FormatBytes(t.allocated_bytes), pool);
  }
  return o;
}

static std::string CollectiveRows(const std::vector<RankResult>& ranks) {
  std::string o = "#\n# Collectives: mean over ranks of the iterations after the first (nccl-tests units, GB = 1e9)\n";
  o += fmt::format("# {:<26} {:<9} {:<14} {:<8} {:>12} {:>12} {:>8} {:>6} {:>7} {:>9} {:>7} {:>7}\n", "name",
                   "group", "op", "phase", "size", "count", "type", "ranks", "repeat", "time", "algbw", "busbw");
  o += fmt::format("# {:<26} {:<9} {:<14} {:<8} {:>12} {:>12} {:>8} {:>6} {:>7} {:>9} {:>7} {:>7}\n", "", "", "",
                   "", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  for (const CollectiveSummary& s : SummarizeCollectives(ranks)) {
    if (s.ranks_run == 0) {
      o += fmt::format("  {:<26} {:<9} {:<14} {:<8} {}\n", s.name, s.group, CollectiveName(s.kind), PhaseName(s.phase),
                       s.skipped ? "skipped: fewer than 2 ranks of its group present" : "not run: the run stopped first");
      continue;
    }
    o += fmt::format("  {:<26} {:<9} {:<14} {:<8} {:>12} {:>12} {:>8} {:>6} {:>7} {:>9} {:>7} {:>7}{}\n", s.name,
                     s.group, CollectiveName(s.kind), PhaseName(s.phase), s.size_bytes, s.size_bytes / s.elem_bytes,
                     TypeName(s.elem_bytes), s.nranks, s.repeat, FitFloat(s.seconds * 1e6, 9),
                     FitFloat(s.bw.algbw_gb_per_s, 7), FitFloat(s.bw.busbw_gb_per_s, 7), s.scratch ? "  (scratch)" : "");
  }
  return o;
}

static std::string ScaleText(double scale) {
  if (scale < 1 && std::abs(1 / scale - std::round(1 / scale)) < 1e-9) return fmt::format("1/{:.0f}", 1 / scale);
  return fmt::format("{:g}", scale);
}

std::string FormatTable(const std::vector<RankResult>& ranks, const ReportContext& ctx) {
  std::string o = fmt::format("# shardplan validate {}: backend {}, {} of {} ranks, scale {}, {} iterations\n",
                              ctx.plan, ctx.backend, ranks.size(), ctx.plan_ranks, ScaleText(ctx.scale),
                              ctx.iterations);
  if (!ranks.empty()) {
    o += fmt::format("# capacity {} per rank, headroom {}; bytes at plan scale (measured / scale)\n#\n",
                     FormatBytes(ranks.front().capacity_bytes), FormatBytes(ranks.front().headroom_bytes));
    o += RankRows(ranks);
    const bool any_ran = std::any_of(ranks.begin(), ranks.end(), [](const RankResult& r) { return r.error_code == Code::kOk; });
    if (any_ran) o += TermRows(ranks) + CollectiveRows(ranks);
  }
  const int code = JobExitCode(ranks);
  o += "#\n";
  if (code == 0) o += "# Verdict: every rank fits with the plan's headroom\n";
  if (code == 1) o += "# Verdict: DOES NOT FIT: " + FailureMessage(ranks) + "\n";
  if (code > 1) o += "# Verdict: ERROR: " + FailureMessage(ranks) + "\n";
  return o;
}

std::string FormatJson(const std::vector<RankResult>& ranks, const ReportContext& ctx) {
  using nlohmann::json;
  json j = {{"plan", ctx.plan}, {"backend", ctx.backend}, {"scale", ctx.scale},
            {"iterations", ctx.iterations}, {"plan_ranks", ctx.plan_ranks},
            {"exit_code", JobExitCode(ranks)}};
  j["fits"] = JobExitCode(ranks) == 0;
  const std::string failure = FailureMessage(ranks);
  j["failure"] = failure.empty() ? json(nullptr) : json(failure);
  j["ranks"] = json::array();
  for (const RankResult& r : ranks) j["ranks"].push_back(json::parse(ToJsonText(r)));
  j["collectives"] = json::array();
  for (const CollectiveSummary& s : SummarizeCollectives(ranks)) {
    j["collectives"].push_back({{"name", s.name}, {"group", s.group}, {"op", CollectiveName(s.kind)},
                                {"phase", PhaseName(s.phase)}, {"size", s.size_bytes},
                                {"count", s.size_bytes / s.elem_bytes}, {"type", TypeName(s.elem_bytes)},
                                {"nranks", s.nranks}, {"repeat", s.repeat}, {"time", s.seconds * 1e6},
                                {"algbw", s.bw.algbw_gb_per_s}, {"busbw", s.bw.busbw_gb_per_s},
                                {"ranks_run", s.ranks_run}, {"scratch", s.scratch}, {"skipped", s.skipped}});
  }
  return j.dump(2) + "\n";
}

}  // namespace shardplan::validate
