// accuracy: scores the memory model against published runs.
//
//   accuracy [--cases FILE] [--thresholds FILE] [--headroom GIB] [--json] [--verbose]
//
// Reads bench/data/public_cases.yaml (copied from the project's research notes), maps every
// case with a per-GPU memory figure or a fit/OOM outcome onto shardplan's specs
// (bench/case_reader.h), runs EstimateMemory, and compares the figure the source measured
// with the matching prediction: allocated_peak with max_memory_allocated, reserved_peak with
// max_memory_reserved, device_peak with nvidia-smi. Prints each case, the cases it could not
// map and why, and a summary; with --thresholds, exits 1 when the summary is worse than the
// file allows (DESIGN.md exit codes: 0 pass, 1 worse, 2 bad input).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bench/case_reader.h"
#include "planner/io/document.h"
#include "planner/layout.h"
#include "planner/memory_model.h"
#include "planner/search.h"
#include "planner/units.h"

namespace shardplan::bench {
namespace {

#ifdef SP_BENCH_DATA_DIR
constexpr const char* kDataDir = SP_BENCH_DATA_DIR;
#else
constexpr const char* kDataDir = "bench/data";
#endif

struct Options {
  std::string cases = std::string(kDataDir) + "/public_cases.yaml";
  std::string thresholds;  // empty: report only
  double headroom_gib = ToGiB(MemoryOptions().headroom_bytes);
  bool json = false;
  bool verbose = false;
};

// Limits on the summary; accuracy_thresholds.yaml records them a little looser than the
// current figures so that a change that makes the model worse fails the test.
struct Thresholds {
  double max_median_abs_error = 0, max_p90_abs_error = 0, max_worst_under_prediction = 0, min_fit_agreement = 0;
  int64_t max_optimistic_misses = 0;
};

struct Row {
  const PublicCase* c = nullptr;
  Layout layout;
  MemoryEstimate estimate;
  std::string recompute_note;  // set when an unstated recomputation was resolved
  int64_t measured = 0, predicted = 0;  // bytes; 0 measured = fit outcome only
  int peak_stage = 0;                   // index into estimate.stages where the metric peaks
  double error() const { return static_cast<double>(predicted) / static_cast<double>(measured) - 1; }
};

struct Summary {
  int scored = 0, fit_cases = 0, fit_agree = 0;
  double median = 0, p90 = 0, worst_under = 0;
  std::string worst_under_id;
  std::vector<std::string> optimistic, pessimistic;
  double fit_agreement() const { return fit_cases ? static_cast<double>(fit_agree) / fit_cases : 1.0; }
};

StatusOr<Thresholds> ReadThresholds(const std::string& path) {
  SP_ASSIGN_OR_RETURN(Document doc, Document::Load(path));
  const YAML::Node& root = doc.root();
  SP_RETURN_IF_ERROR(doc.ExpectMap(root, "thresholds"));
  SP_RETURN_IF_ERROR(doc.CheckKeys(root, {"max_median_abs_error", "max_p90_abs_error", "max_worst_under_prediction",
                                          "min_fit_agreement", "max_optimistic_misses"}));
  Thresholds t;
  auto fraction = [&](const char* key, double* out) -> Status {
    SP_ASSIGN_OR_RETURN(std::optional<double> v, doc.Number(root, key, 0, 10));
    if (!v) return doc.ErrorAt(root, std::string(key) + ": missing; expected a fraction like 0.10");
    *out = *v;
    return Status::Ok();
  };
  SP_RETURN_IF_ERROR(fraction("max_median_abs_error", &t.max_median_abs_error));
  SP_RETURN_IF_ERROR(fraction("max_p90_abs_error", &t.max_p90_abs_error));
  SP_RETURN_IF_ERROR(fraction("max_worst_under_prediction", &t.max_worst_under_prediction));
  SP_RETURN_IF_ERROR(fraction("min_fit_agreement", &t.min_fit_agreement));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> misses, doc.Int(root, "max_optimistic_misses", 0, 1 << 20));
  if (!misses) return doc.ErrorAt(root, "max_optimistic_misses: missing; expected a count like 0");
  t.max_optimistic_misses = *misses;
  return t;
}

int64_t StageMetric(Metric metric, const StageMemory& s) {
  switch (metric) {
    case Metric::kAllocated: return s.allocated_peak;
    case Metric::kDevice: return s.device_peak;
    case Metric::kWeights: {
      int64_t bytes = 0;
      for (const MemoryTerm& t : s.terms)
        if (t.name == "weights") bytes += t.bytes;
      return bytes;
    }
    default: return s.reserved_peak;
  }
}

// Estimates one mapped case; the error names the layout rule a case breaks.
StatusOr<Row> Score(const PublicCase& c, const MemoryOptions& opt) {
  Row r;
  r.c = &c;
  SP_ASSIGN_OR_RETURN(Layout parsed, ParseLayout(c.layout));
  SP_ASSIGN_OR_RETURN(r.layout, ResolveLayout(c.model, c.workload, c.cluster, parsed));
  // What the case leaves unstated about recomputation is settled as `shardplan estimate`
  // settles it for a user (the least that fits), whatever the run's outcome.
  std::string note;
  if (c.recompute_unstated) {
    Layout open = r.layout;
    open.fixed &= ~static_cast<uint32_t>(kKeyAc);
    std::tie(r.layout, r.estimate) = LeastRecomputationThatFits(c.model, c.workload, open, c.cluster, opt, &note);
  } else {
    r.estimate = EstimateMemory(c.model, c.workload, r.layout, c.cluster, opt);
  }
  r.recompute_note = note;
  const std::vector<StageMemory>& stages = r.estimate.stages;
  r.peak_stage = r.estimate.fullest_stage_index;
  for (size_t i = 0; i < stages.size(); ++i)  // the fullest rank for the source's metric (max across ranks)
    if (StageMetric(c.metric, stages[i]) > StageMetric(c.metric, stages[static_cast<size_t>(r.peak_stage)]))
      r.peak_stage = static_cast<int>(i);
  const StageMemory& peak = stages[static_cast<size_t>(r.peak_stage)];
  if (c.metric == Metric::kKvBudget) {
    r.measured = c.measured_kv_tokens * r.estimate.kv.kv_bytes_per_token;
    r.predicted = r.estimate.kv.max_kv_tokens * r.estimate.kv.kv_bytes_per_token;
  } else if (c.metric != Metric::kNone) {
    r.measured = c.measured_bytes;
    r.predicted = StageMetric(c.metric, peak);
  }
  return r;
}

double Percentile(std::vector<double> v, double q) {  // nearest rank
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

Summary Summarize(const std::vector<Row>& rows) {
  Summary s;
  std::vector<double> abs_errors;
  for (const Row& r : rows) {
    if (r.measured > 0) {
      ++s.scored;
      abs_errors.push_back(std::fabs(r.error()));
      if (-r.error() > s.worst_under) s.worst_under = -r.error(), s.worst_under_id = r.c->id;
    }
    if (!r.c->fits) continue;
    ++s.fit_cases;
    const bool predicted = r.estimate.gpu_fits;
    if (predicted == *r.c->fits) ++s.fit_agree;
    else (predicted ? s.optimistic : s.pessimistic).push_back(r.c->id);
  }
  s.median = Percentile(abs_errors, 0.5);
  s.p90 = Percentile(abs_errors, 0.9);
  return s;
}

std::string FitText(const Row& r) {
  const std::string predicted = r.estimate.gpu_fits ? "fits" : "OOM";
  if (!r.c->fits) return "- / " + predicted;
  const std::string source = *r.c->fits ? "ran" : "OOM";
  const bool agree = r.estimate.gpu_fits == *r.c->fits;
  return source + " / " + predicted + (agree ? "" : r.estimate.gpu_fits ? "  OPTIMISTIC" : "  pessimistic");
}

void PrintVerbose(const Row& r) {
  fmt::print("    layout: {}\n", FormatLayout(r.layout));
  for (const std::string& a : r.c->assumed) fmt::print("    assumed: {}\n", a);
  if (!r.recompute_note.empty()) fmt::print("    assumed: {}\n", r.recompute_note);
  for (const std::string& u : r.c->unmodelled) fmt::print("    not modelled: {}\n", u);
  const StageMemory& s = r.estimate.stages[static_cast<size_t>(r.peak_stage)];
  std::vector<const MemoryTerm*> live;
  for (const MemoryTerm& t : s.terms)
    if (s.peak_phase >= t.first && s.peak_phase <= t.last) live.push_back(&t);
  std::sort(live.begin(), live.end(), [](const MemoryTerm* a, const MemoryTerm* b) { return a->bytes > b->bytes; });
  fmt::print("    stage {} at {}: allocated {:.2f}, reserved {:.2f}, device {:.2f} GiB of {:.2f}\n", s.stage,
             PhaseName(s.peak_phase), ToGiB(s.allocated_peak), ToGiB(s.reserved_peak), ToGiB(s.device_peak),
             ToGiB(r.estimate.capacity_bytes));
  for (const MemoryTerm* t : live) fmt::print("      {:<28} {:9.2f} GiB\n", t->name, ToGiB(t->bytes));
}

void PrintText(const std::vector<Row>& rows, const std::vector<std::pair<std::string, std::string>>& skipped,
               const Summary& s, const Options& o) {
  fmt::print("{:<58} {:<17} {:>9} {:>9} {:>8}  {}\n", "case", "metric", "measured", "predicted", "error",
             "fit (source / predicted)");
  for (const Row& r : rows) {
    std::string measured = "-", predicted = "-", error = "-";
    if (r.measured > 0) {
      measured = fmt::format("{:.2f}", ToGiB(r.measured));
      predicted = fmt::format("{:.2f}", ToGiB(r.predicted));
      error = fmt::format("{:+.1f}%", 100 * r.error());
    } else {
      predicted = fmt::format("({:.2f})", ToGiB(r.estimate.stages[static_cast<size_t>(r.peak_stage)].device_peak));
    }
    fmt::print("{:<58} {:<17} {:>9} {:>9} {:>8}  {}\n", r.c->id, MetricName(r.c->metric), measured, predicted, error,
               FitText(r));
    if (o.verbose) PrintVerbose(r);
  }
  fmt::print("\nGiB per GPU; fit-only cases show the predicted nvidia-smi peak in parentheses.\n");
  fmt::print("\nskipped ({}):\n", skipped.size());
  for (const auto& [id, why] : skipped) fmt::print("  {:<58} {}\n", id, why);
  fmt::print("\nmemory figures scored: {}   median |error| {:.1f}%   p90 |error| {:.1f}%   worst under-prediction "
             "{:.1f}%{}\n",
             s.scored, 100 * s.median, 100 * s.p90, 100 * s.worst_under,
             s.worst_under_id.empty() ? "" : " (" + s.worst_under_id + ")");
  fmt::print("fit/OOM agreement: {} of {} = {:.1f}% (headroom {:.2f} GiB)\n", s.fit_agree, s.fit_cases,
             100 * s.fit_agreement(), o.headroom_gib);
  fmt::print("optimistic misses (predicted fits, OOMed): {}\n", s.optimistic.empty() ? "none" : "");
  for (const std::string& id : s.optimistic) fmt::print("  {}\n", id);
  fmt::print("pessimistic misses (predicted OOM, ran): {}\n", s.pessimistic.empty() ? "none" : "");
  for (const std::string& id : s.pessimistic) fmt::print("  {}\n", id);
}

nlohmann::json ToJson(const std::vector<Row>& rows, const std::vector<std::pair<std::string, std::string>>& skipped,
                      const Summary& s, const Options& o) {
  nlohmann::json cases = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json j = {{"id", r.c->id},
                        {"source", r.c->source},
                        {"metric", MetricName(r.c->metric)},
                        {"layout", FormatLayout(r.layout)},
                        {"assumed", r.c->assumed},
                        {"not_modelled", r.c->unmodelled},
                        {"predicted_fits", r.estimate.gpu_fits},
                        {"peak_stage", r.estimate.stages[static_cast<size_t>(r.peak_stage)].stage}};
    j["source_fits"] = r.c->fits ? nlohmann::json(*r.c->fits) : nlohmann::json(nullptr);
    if (r.measured > 0) {
      j["measured_gib"] = ToGiB(r.measured);
      j["predicted_gib"] = ToGiB(r.predicted);
      j["error"] = r.error();
    }
    const StageMemory& st = r.estimate.stages[static_cast<size_t>(r.peak_stage)];
    j["allocated_peak_gib"] = ToGiB(st.allocated_peak);
    j["reserved_peak_gib"] = ToGiB(st.reserved_peak);
    j["device_peak_gib"] = ToGiB(st.device_peak);
    j["capacity_gib"] = ToGiB(r.estimate.capacity_bytes);
    nlohmann::json terms = nlohmann::json::object();
    for (const MemoryTerm& t : st.terms) terms[t.name] = ToGiB(t.bytes);
    j["terms_gib"] = terms;
    cases.push_back(j);
  }
  nlohmann::json skip = nlohmann::json::array();
  for (const auto& [id, why] : skipped) skip.push_back({{"id", id}, {"reason", why}});
  return {{"cases", cases},
          {"skipped", skip},
          {"summary",
           {{"scored", s.scored},
            {"median_abs_error", s.median},
            {"p90_abs_error", s.p90},
            {"worst_under_prediction", s.worst_under},
            {"worst_under_prediction_id", s.worst_under_id},
            {"fit_cases", s.fit_cases},
            {"fit_agreement", s.fit_agreement()},
            {"optimistic_misses", s.optimistic},
            {"pessimistic_misses", s.pessimistic},
            {"headroom_gib", o.headroom_gib}}}};
}

// The limits the summary breaks, one line each.
std::vector<std::string> Broken(const Summary& s, const Thresholds& t) {
  std::vector<std::string> out;
  auto check = [&](bool bad, const std::string& line) {
    if (bad) out.push_back(line);
  };
  check(s.median > t.max_median_abs_error,
        fmt::format("median |error| {:.1f}% > {:.1f}%", 100 * s.median, 100 * t.max_median_abs_error));
  check(s.p90 > t.max_p90_abs_error,
        fmt::format("p90 |error| {:.1f}% > {:.1f}%", 100 * s.p90, 100 * t.max_p90_abs_error));
  check(s.worst_under > t.max_worst_under_prediction,
        fmt::format("worst under-prediction {:.1f}% > {:.1f}%", 100 * s.worst_under,
                    100 * t.max_worst_under_prediction));
  check(s.fit_agreement() < t.min_fit_agreement,
        fmt::format("fit/OOM agreement {:.1f}% < {:.1f}%", 100 * s.fit_agreement(), 100 * t.min_fit_agreement));
  check(static_cast<int64_t>(s.optimistic.size()) > t.max_optimistic_misses,
        fmt::format("optimistic misses {} > {}", s.optimistic.size(), t.max_optimistic_misses));
  return out;
}

int Run(const Options& o) {
  std::optional<Thresholds> limits;
  if (!o.thresholds.empty()) {
    StatusOr<Thresholds> t = ReadThresholds(o.thresholds);
    if (!t.ok()) return fmt::print(stderr, "accuracy: {}\n", t.status().message()), t.status().exit_code();
    limits = *t;
  }
  StatusOr<std::vector<PublicCase>> cases = ReadPublicCases(o.cases);
  if (!cases.ok()) return fmt::print(stderr, "accuracy: {}\n", cases.status().message()), cases.status().exit_code();
  MemoryOptions mopt;
  mopt.headroom_bytes = std::llround(o.headroom_gib * kGiB);
  std::vector<Row> rows;
  std::vector<std::pair<std::string, std::string>> skipped;
  for (const PublicCase& c : *cases) {
    if (c.skip.empty() && c.metric == Metric::kNone && !c.fits) {
      skipped.emplace_back(c.id, "no memory figure and no fit/OOM outcome");
      continue;
    }
    if (!c.skip.empty()) {
      skipped.emplace_back(c.id, c.skip);
      continue;
    }
    StatusOr<Row> r = Score(c, mopt);
    if (r.ok()) rows.push_back(*r);
    else skipped.emplace_back(c.id, r.status().message() + " [" + c.layout + "]");
  }
  const Summary s = Summarize(rows);
  const std::vector<std::string> broken = limits ? Broken(s, *limits) : std::vector<std::string>{};
  if (o.json) {
    nlohmann::json j = ToJson(rows, skipped, s, o);
    j["thresholds_broken"] = broken;
    fmt::print("{}\n", j.dump(2));
  } else {
    PrintText(rows, skipped, s, o);
    if (limits) fmt::print("thresholds ({}): {}\n", o.thresholds, broken.empty() ? "pass" : "FAIL");
    for (const std::string& b : broken) fmt::print("  FAIL: {}\n", b);
  }
  return broken.empty() ? 0 : 1;
}

int Usage(int code) {
  fmt::print(code ? stderr : stdout,
             "usage: accuracy [--cases FILE] [--thresholds FILE] [--headroom GIB] [--json] [--verbose]\n");
  return code;
}

}  // namespace
}  // namespace shardplan::bench

int main(int argc, char** argv) {
  using shardplan::bench::Usage;
  shardplan::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--cases" && has_value) {
      o.cases = argv[++i];
    } else if (arg == "--thresholds" && has_value) {
      o.thresholds = argv[++i];
    } else if (arg == "--headroom" && has_value) {
      char* end = nullptr;
      o.headroom_gib = std::strtod(argv[++i], &end);
      if (*end != '\0' || o.headroom_gib < 0) {
        fmt::print(stderr, "accuracy: --headroom: expected GiB like 2, got \"{}\"\n", argv[i]);
        return 2;
      }
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--verbose" || arg == "-v") {
      o.verbose = true;
    } else {
      return Usage(arg == "--help" || arg == "-h" ? 0 : 2);
    }
  }
  return shardplan::bench::Run(o);
}
