#include "validate/worker_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "planner/units.h"

namespace shardplan::validate {

void AddWorkerFlags(CLI::App& app, WorkerOptions& o) {
  app.add_option("plan", o.plan, "plan.yaml written by `shardplan plan -o`")->required();
  app.add_option("--backend", o.backend, "cuda (GPUs + NCCL) or host (host memory + MPI)")
      ->check(CLI::IsMember({"cuda", "host"}));
  app.add_option("--ranks", o.ranks, "plan ranks to rehearse: all, or a list such as 0,2,4-7");
  app.add_option("--scale", o.scale, "multiply every allocation and the capacity (default 1 on cuda, 1/1024 on host)");
  app.add_option("--capacity", o.capacity, "per-rank memory instead of the plan's GPU, e.g. \"24 GiB\"");
  app.add_option("--timeout", o.timeout_s, "seconds after which every process has exited")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--iters", o.iterations, "iterations (at least 2)")->check(CLI::Range(2, 1000));
  app.add_flag("--json", o.json, "JSON report on stdout");
  app.add_option("--inject-fault", o.inject_fault, "testing: KIND:RANK[@PHASE], KIND hang, exit, oom or kill (SIGKILL as peers enter a collective)")
      ->group("");  // hidden: a test aid, not a user feature
}

std::vector<std::string> WorkerArgs(const WorkerOptions& o) {
  std::vector<std::string> a = {o.plan, "--backend", o.backend, "--ranks", o.ranks, "--timeout",
                                fmt::format("{:g}", o.timeout_s), "--iters", std::to_string(o.iterations)};
  if (!o.scale.empty()) a.insert(a.end(), {"--scale", o.scale});
  if (!o.capacity.empty()) a.insert(a.end(), {"--capacity", o.capacity});
  if (o.json) a.push_back("--json");
  if (!o.inject_fault.empty()) a.insert(a.end(), {"--inject-fault", o.inject_fault});
  return a;
}

static bool ParseDouble(std::string_view s, double* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(*out);
}

StatusOr<double> ParseScale(std::string_view text, std::string_view backend) {
  // Host runs default to 1/1024 so a plan for 80 GiB GPUs rehearses in 80 MiB per rank.
  if (text.empty()) return backend == "host" ? 1.0 / 1024 : 1.0;
  double num = 0, den = 1;
  const size_t slash = text.find('/');
  const bool ok = slash == std::string_view::npos
                      ? ParseDouble(text, &num)
                      : ParseDouble(text.substr(0, slash), &num) && ParseDouble(text.substr(slash + 1), &den);
  if (!ok || den <= 0 || num <= 0 || num / den > 1) {
    return Status::BadInput("--scale " + std::string(text) + ": expected a factor in (0, 1] such as 1/1024 or 0.25");
  }
  return num / den;
}

static bool ParseInt(std::string_view s, int* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

StatusOr<std::vector<int>> ParseRanks(std::string_view text, int world) {
  std::vector<int> out;
  if (text == "all") {
    for (int r = 0; r < world; ++r) out.push_back(r);
    return out;
  }
  const std::string all(text);  // `text` is consumed below; messages quote it whole
  const auto bad = [&](std::string_view why) {
    return Status::BadInput("--ranks " + all + ": " + std::string(why));
  };
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (!ParseInt(item.substr(0, dash), &lo) || !ParseInt(dash == std::string_view::npos ? item.substr(0, dash) : item.substr(dash + 1), &hi) || hi < lo) {
      return bad("expected all, or ranks and ranges such as 0,2,4-7");
    }
    if (hi >= world) return bad("rank " + std::to_string(hi) + " is outside the plan's " + std::to_string(world) + " ranks");
    for (int r = lo; r <= hi; ++r) out.push_back(r);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return bad("trailing comma");
  }
  if (out.empty()) return bad("no ranks");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

StatusOr<int64_t> ParseCapacity(std::string_view text) {
  if (text.empty()) return int64_t{0};
  StatusOr<int64_t> b = ParseBytes(text);
  if (!b.ok()) return b.status().WithContext("--capacity");
  if (*b <= 0) return Status::BadInput("--capacity " + std::string(text) + ": expected a positive size");
  return *b;
}

// A tenth of the timeout, between 0.5 and 5 seconds, is left for tearing down.
static double Margin(double timeout_s) { return std::clamp(timeout_s * 0.1, 0.5, 5.0); }
double OperationSeconds(double timeout_s) { return timeout_s - Margin(timeout_s); }
double WatchdogSeconds(double timeout_s) { return timeout_s - Margin(timeout_s) / 2; }

}  // namespace shardplan::validate
