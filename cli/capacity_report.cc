#include "cli/capacity_report.h"

#include <cmath>

#include "cli/report.h"
#include "cli/table.h"
#include "planner/strings.h"
#include "planner/units.h"

namespace shardplan::cli {
namespace {

std::string_view TargetKind(const CapacityTarget& t) {
  switch (t.kind) {
    case CapacityTarget::Kind::kTrainDeadline: return "train_deadline";
    case CapacityTarget::Kind::kTrainGpus: return "train_gpus";
    case CapacityTarget::Kind::kServe: return "serve";
  }
  return "?";
}

// 15.6T, 500B, 2.1M: token counts as people write them.
std::string Tokens(double n) {
  static const std::pair<double, const char*> kUnits[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, suffix] : kUnits)
    if (n >= scale) return Fixed(n / scale, n / scale < 10 ? 2 : 1) + suffix;
  return Fixed(n, 0);
}

std::string Dollars(double usd) {
  if (usd >= 1e9) return "$" + Fixed(usd / 1e9, 2) + "B";
  if (usd >= 1e6) return "$" + Fixed(usd / 1e6, 2) + "M";
  if (usd >= 1e4) return "$" + Fixed(usd / 1e3, 1) + "K";
  return "$" + Fixed(usd, 2);
}

std::string Count(long long v) { return Thousands(v); }

double Price(const CapacityReport& rep, size_t kind) {
  return kind < rep.prices.size() ? rep.prices[kind].per_gpu_hour : 0;
}

nlohmann::json PointJson(const CapacityReport& rep, const CapacityPoint& p, double price) {
  const bool train = rep.target.training();
  nlohmann::json j = {{"gpus", p.gpus}, {"nodes", p.nodes}, {"on_ladder", p.on_ladder}, {"fits", p.has_plan},
                      {"meets", p.meets}, {"miss", p.miss}};
  if (train) j["global_batch"] = p.global_batch;
  if (!p.has_plan) return j;
  j["layout"] = LayoutJson(p.plan.layout);
  j["step_seconds"] = p.plan.time.step_seconds;
  j["mfu"] = p.plan.time.mfu;
  j["tokens_per_second"] = p.tokens_per_s;
  j["peak_bytes"] = p.plan.memory.fullest().required_peak;  // what the layout needs, as plan's points
  if (train) {
    j["train_seconds"] = p.train_seconds;
    j["train_days"] = p.train_seconds / 86400;
    j["gpu_hours"] = p.gpu_hours();
    j["cost_usd"] = price > 0 ? nlohmann::json(p.gpu_hours() * price) : nlohmann::json(nullptr);
  } else {
    j["sequences"] = p.sequences;
    j["request_tokens_per_second"] = p.request_tokens_per_s;
    j["ttft_seconds"] = p.ttft_seconds;
    j["cost_per_hour_usd"] = price > 0 ? nlohmann::json(price * p.gpus) : nlohmann::json(nullptr);
    j["cost_per_million_tokens_usd"] =
        price > 0 && p.tokens_per_s > 0 ? nlohmann::json(price * p.gpus / (p.tokens_per_s * 3600) * 1e6) : nlohmann::json(nullptr);
  }
  return j;
}

std::string NodeText(const ClusterSpec& n) {
  const std::string node = std::to_string(n.gpus_per_node) + " x " + n.gpu.name + " per node on " + n.intra_node.fabric +
                           " " + FormatBandwidth(n.intra_node.bandwidth);
  if (n.inter_node.bandwidth <= 0 || n.inter_node.fabric == "none") return node + ", no network between nodes";
  return node + ", " + std::to_string(n.inter_node.nics_per_node) + " x " + Fixed(n.inter_node.bandwidth * 8 / 1e9, 0) +
         " Gb/s " + n.inter_node.fabric;
}

// A curve row's reason, up to its first parenthesis: the table stays narrow, --json has it whole.
std::string Short(const std::string& why) {
  const size_t paren = why.find(" (");
  return paren == std::string::npos ? why : why.substr(0, paren);
}

// The summary row of one kind: its answer, else what came closest.
std::vector<std::string> SummaryRow(const CapacityReport& rep, const KindResult& k, double price) {
  const bool train = rep.target.training();
  const std::string gpu = k.kind.node.gpu.name;
  if (k.answer < 0) {
    std::string why = k.points.empty() && !k.advice.empty() ? Short(k.advice.front()) : "meets nothing";
    if (k.closest >= 0) {
      const CapacityPoint& c = k.points[static_cast<size_t>(k.closest)];
      why += ": closest " + Count(c.gpus) + " GPUs" +
             (c.has_plan && train ? ", " + Fixed(c.train_seconds / 86400, 1) + " days" : c.has_plan ? ", " + c.miss : "");
    }
    std::vector<std::string> row(train ? 8 : 9, "-");
    row[0] = gpu;
    row.back() = why;
    return row;
  }
  const CapacityPoint& p = k.points[static_cast<size_t>(k.answer)];
  const std::string layout = CompactLayout(p.plan.layout, !train);
  const std::string per_hour = price > 0 ? Fixed(price, 2) : "-";
  if (train)
    return {gpu, Count(p.gpus), Fixed(p.train_seconds / 86400, 1), Fixed(100 * p.plan.time.mfu, 1) + "%",
            Count(static_cast<long long>(p.gpu_hours())), per_hour, price > 0 ? Dollars(p.gpu_hours() * price) : "-", layout};
  const bool timed = StepTimeKnown(k.kind.node.gpu);  // else the speeds are "-": memory answered, time not modelled
  return {gpu, Count(p.gpus), Count(p.sequences), timed ? Fixed(p.request_tokens_per_s, 1) : "-",
          timed ? Fixed(p.ttft_seconds, 3) : "-", timed ? Count(static_cast<long long>(p.tokens_per_s)) : "-",
          price > 0 ? Dollars(price * p.gpus) : "-",
          price > 0 && p.tokens_per_s > 0 ? Dollars(price * p.gpus / (p.tokens_per_s * 3600) * 1e6) : "-", layout};
}

std::string CurveText(const CapacityReport& rep, const KindResult& k) {
  const bool train = rep.target.training();
  Table t(train ? std::vector<std::string>{"GPUs", "days", "speed-up", "efficiency", "MFU", "layout, or why not"}
                : std::vector<std::string>{"GPUs", "sequences", "tok/s/seq", "TTFT s", "tok/s", "tok/s/GPU", "layout, or why not"});
  const CapacityPoint* prev = nullptr;
  for (size_t i = 0; i < k.points.size(); ++i) {
    const CapacityPoint& p = k.points[i];
    const bool answer = static_cast<int>(i) == k.answer;
    if (!p.on_ladder && !answer) continue;
    const std::string gpus = Count(p.gpus) + (answer ? " *" : "");
    if (!p.has_plan) {
      std::vector<std::string> row(train ? 6 : 7, "-");
      row[0] = gpus;
      row.back() = Short(p.miss);
      t.Row(row);
      continue;
    }
    // Training's days column already says how far a size misses the deadline.
    std::string layout = CompactLayout(p.plan.layout, !train) + (train || p.meets ? "" : "  (" + Short(p.miss) + ")");
    if (train) {
      std::string speedup = "-", eff = "-";
      if (prev) {
        const double s = p.tokens_per_s / prev->tokens_per_s;
        speedup = Fixed(s, 2) + "x";
        eff = Fixed(100 * s * prev->gpus / p.gpus, 0) + "%";
      }
      t.Row({gpus, Fixed(p.train_seconds / 86400, 1), speedup, eff, Fixed(100 * p.plan.time.mfu, 1) + "%", layout});
    } else {
      if (StepTimeKnown(k.kind.node.gpu))
        t.Row({gpus, Count(p.sequences), Fixed(p.request_tokens_per_s, 1), Fixed(p.ttft_seconds, 3),
               Count(static_cast<long long>(p.tokens_per_s)), Fixed(p.tokens_per_s / p.gpus, 0), layout});
      else
        t.Row({gpus, Count(p.sequences), "-", "-", "-", "-", layout});
    }
    prev = &p;
  }
  return t.Render();
}

}  // namespace

nlohmann::json CapacityJson(const CapacityReport& rep, const CapacityResult& r) {
  const CapacityTarget& t = rep.target;
  const Workload& w = rep.workload;
  nlohmann::json j;
  j["model"] = {{"name", rep.model}, {"params_total", rep.params}};
  j["assumed"] = rep.assumed;
  j["workload"] = {{"task", TaskName(w.task)}, {"precision", DtypeName(w.precision)}};
  if (t.training()) {
    j["workload"]["seq_len"] = w.seq_len;
    j["workload"]["global_batch"] = w.global_batch;
    j["target"] = {{"kind", TargetKind(t)}, {"tokens", t.tokens}};
    if (t.kind == CapacityTarget::Kind::kTrainDeadline) j["target"]["deadline_seconds"] = t.deadline_seconds;
    else j["target"]["gpus"] = t.gpus;
  } else {
    j["workload"]["prompt_len"] = w.inference.prompt_len;
    j["workload"]["gen_len"] = w.inference.gen_len;
    j["workload"]["weights"] = DtypeName(w.inference.weights);
    j["workload"]["kv_cache"] = DtypeName(w.inference.kv_cache);
    j["target"] = {{"kind", TargetKind(t)}, {"concurrency", t.concurrency}, {"min_tokens_per_s", t.min_tokens_per_s},
                   {"max_ttft_seconds", t.max_ttft_seconds}};
  }
  j["limits"] = {{"max_gpus", rep.limits.max_gpus}, {"max_global_batch_tokens", rep.limits.max_global_batch_tokens},
                 {"min_micro_batch", rep.limits.min_micro_batch}};
  j["meets"] = r.meets();
  j["kinds"] = nlohmann::json::array();
  for (size_t i = 0; i < r.kinds.size(); ++i) {
    const KindResult& k = r.kinds[i];
    const double price = Price(rep, i);
    const ClusterSpec& n = k.kind.node;
    nlohmann::json kj = {{"gpu", n.gpu.name}, {"meets", k.answer >= 0}, {"advice", k.advice}};
    kj["node"] = {{"name", n.name}, {"gpus_per_node", n.gpus_per_node}, {"intra_node", n.intra_node.fabric},
                  {"intra_node_bandwidth", n.intra_node.bandwidth}, {"inter_node", n.inter_node.fabric},
                  {"inter_node_bandwidth", n.inter_node.bandwidth}, {"nics_per_node", n.inter_node.nics_per_node}};
    if (i < rep.prices.size() && price > 0)
      kj["price"] = {{"per_gpu_hour", price}, {"offering", rep.prices[i].offering}, {"date", rep.prices[i].date},
                     {"source", rep.prices[i].source}};
    else kj["price"] = nullptr;
    kj["answer"] = k.answer >= 0 ? PointJson(rep, k.points[static_cast<size_t>(k.answer)], price) : nlohmann::json(nullptr);
    kj["closest"] = k.closest >= 0 ? PointJson(rep, k.points[static_cast<size_t>(k.closest)], price) : nlohmann::json(nullptr);
    kj["scaling"] = {{"knee_gpus", k.knee >= 0 ? nlohmann::json(k.points[static_cast<size_t>(k.knee)].gpus) : nlohmann::json(nullptr)},
                     {"why", k.scaling}};
    kj["points"] = nlohmann::json::array();
    for (const CapacityPoint& p : k.points) kj["points"].push_back(PointJson(rep, p, price));
    j["kinds"].push_back(std::move(kj));
  }
  j["searches"] = r.searches;
  j["layouts_considered"] = r.layouts;
  j["sweep_seconds"] = rep.seconds;
  return j;
}

std::string CapacityText(const CapacityReport& rep, const CapacityResult& r) {
  const CapacityTarget& t = rep.target;
  const Workload& w = rep.workload;
  const bool train = t.training();
  std::string out = rep.model + " (" + Count(rep.params) + " params), " + std::string(TaskName(w.task));
  if (train) {
    out += ", seq " + std::to_string(w.seq_len) + ", global batch " + std::to_string(w.global_batch);
    if (rep.limits.max_global_batch_tokens > 0) out += " (may grow to " + Tokens(static_cast<double>(rep.limits.max_global_batch_tokens)) + " tokens)";
    out += "\ntarget: " + Tokens(t.tokens) + " tokens " +
           (t.kind == CapacityTarget::Kind::kTrainDeadline ? "within " + Fixed(t.deadline_seconds / 86400, 1) + " days"
                                                          : "on " + Count(t.gpus) + " GPUs");
  } else {
    out += ", " + std::string(DtypeName(w.inference.weights)) + " weights, " + std::string(DtypeName(w.inference.kv_cache)) + " KV cache";
    out += "\ntarget: " + Count(t.concurrency) + " concurrent sequences of " + Count(w.inference.prompt_len) + " + " +
           Count(w.inference.gen_len) + " tokens";
    if (t.min_tokens_per_s > 0) out += ", at least " + Fixed(t.min_tokens_per_s, 1) + " tokens/s each";
    if (t.max_ttft_seconds > 0) out += ", first token within " + Fixed(t.max_ttft_seconds, 3) + " s";
  }
  size_t sizes = 0;
  for (const KindResult& k : r.kinds) sizes += k.points.size();
  out += "\nswept " + std::to_string(r.kinds.size()) + " GPU kinds, " + std::to_string(sizes) + " cluster sizes (" +
         Count(r.layouts) + " layouts searched) in " + Fixed(rep.seconds, 2) + " s\n";
  for (const std::string& a : rep.assumed) out += "assumed: " + a + "\n";
  out += "\n";

  Table sum(train ? std::vector<std::string>{"GPU", "GPUs", "days", "MFU", "GPU-hours", "$/GPU-h", "cost", "best layout"}
                  : std::vector<std::string>{"GPU", "GPUs", "sequences", "tok/s/seq", "TTFT s", "tok/s", "$/hour", "$/M tok", "best layout"});
  for (size_t i = 0; i < r.kinds.size(); ++i) sum.Row(SummaryRow(rep, r.kinds[i], Price(rep, i)));
  out += sum.Render();
  for (size_t i = 0; i < rep.prices.size() && i < r.kinds.size(); ++i)
    if (rep.prices[i].per_gpu_hour > 0)
      out += "price " + r.kinds[i].kind.node.gpu.name + ": " + rep.prices[i].offering + " (" + rep.prices[i].date + ")\n";

  for (const KindResult& k : r.kinds) {
    out += "\n" + k.kind.node.gpu.name + ": " + (train ? "time to train" : "serving") + " against GPUs (" +
           NodeText(k.kind.node) + ")\n";
    out += CurveText(rep, k);
    if (k.answer >= 0) out += "* the smallest size that meets the target\n";
    if (!k.scaling.empty()) out += k.scaling + "\n";
    for (const std::string& a : k.advice) out += "  - " + a + "\n";
  }
  out += std::string("\n") + (r.meets() ? "MEETS the target" : "NO GPU KIND MEETS the target") + "\n";
  return out;
}

}  // namespace shardplan::cli
