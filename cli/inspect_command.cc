// `shardplan inspect --model M`: exact parameter counts by part and weight bytes by dtype.
#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/inputs.h"
#include "cli/table.h"
#include "planner/io/model_reader.h"
#include "planner/quantization.h"
#include "planner/strings.h"
#include "planner/units.h"

namespace shardplan::cli {
namespace {

struct WeightFormat {
  const char* name;
  double bytes;        // per parameter, before scales
  double scale_bytes;  // per parameter: group-wise scales (group 128, fp16 scale [+ 4-bit zero])
};

// Group-wise quantization with group 128 (GPTQ/AWQ layout, memory-model.md 5.1).
const WeightFormat kFormats[] = {
    {"fp32", 4, 0}, {"bf16", 2, 0}, {"fp16", 2, 0}, {"fp8", 1, 4.0 / 16384},
    {"int8", 1, 2.0 / 128}, {"int4", 0.5, 2.5 / 128}};

nlohmann::json ToJson(const ModelSpec& m, const ParamCounts& c) {
  nlohmann::json j;
  j["model"] = {{"name", m.name}, {"model_type", m.model_type}, {"layers", m.layers}, {"hidden", m.hidden},
                {"intermediate", m.intermediate}, {"heads", m.heads}, {"kv_heads", m.kv_heads},
                {"head_dim", m.head_dim}, {"vocab", m.vocab}, {"tied_embeddings", m.tied_embeddings},
                {"experts", m.experts}, {"experts_per_token", m.experts_per_token},
                {"expert_intermediate", m.expert_intermediate}, {"moe_layers", m.moe_layer_count()},
                {"attention", m.attention == AttentionKind::kMla ? "mla" : "gqa"}, {"dtype", DtypeName(m.dtype)}};
  if (m.is_hybrid()) {  // one mixer per block, in HF's hybrid_override_pattern letters
    j["model"]["hybrid_pattern"] = m.hybrid;
    j["model"]["linear_mixer"] = {{"kind", m.linear.delta ? "gated_deltanet" : "mamba2"}, {"heads", m.linear.heads},
                                  {"head_dim", m.linear.head_dim}, {"state", m.linear.state},
                           {"groups", m.linear.groups}, {"conv_kernel", m.linear.conv_kernel}};
  }
  j["params_total"] = c.total;
  j["params_active"] = c.active;
  if (c.vision > 0) j["params_vision"] = c.vision;  // a VLM's vision encoder, outside the text totals
  j["params"] = {{"embedding", c.embedding}, {"position", c.position}, {"attention", c.attention}, {"linear_mixers", c.linear_mixers},
                 {"mlp", c.mlp}, {"experts", c.experts}, {"shared_experts", c.shared_experts}, {"router", c.router},
                 {"norms", c.norms}, {"head", c.head}};
  for (const WeightFormat& f : kFormats) {
    const double bytes = f.bytes * static_cast<double>(c.total);
    const double scales = f.scale_bytes * static_cast<double>(c.total);
    j["weights"][f.name] = {{"bytes", static_cast<int64_t>(bytes)}, {"gib", bytes / kGiB},
                            {"scale_bytes", static_cast<int64_t>(scales)}, {"gib_with_scales", (bytes + scales) / kGiB}};
  }
  if (m.quant.quantized()) {
    const int64_t q = QuantizedParams(m);
    const double bytes = static_cast<double>(q) * CheckpointBytesPerParam(m) + static_cast<double>(c.total - q) * 2;
    j["checkpoint"] = {{"quant_method", m.quant.method}, {"format", DtypeName(m.quant.format)},
                       {"bytes_per_quantized_param", CheckpointBytesPerParam(m)}, {"quantized_params", q},
                       {"unquantized_params", c.total - q}, {"modules_not_converted", m.quant.skip},
                       {"bytes", static_cast<int64_t>(bytes)}, {"gib", bytes / kGiB}};
  }
  return j;
}

std::string Pct(int64_t part, int64_t total) { return Fixed(100.0 * static_cast<double>(part) / static_cast<double>(total), 2) + "%"; }

void PrintText(const ModelSpec& m, const ParamCounts& c) {
  std::cout << m.name << " (" << m.model_type << "): " << m.layers << " layers, hidden " << m.hidden << ", "
            << m.heads << " heads / " << m.kv_heads << " KV heads of " << m.head_dim << ", vocab " << m.vocab;
  if (m.is_moe()) std::cout << ", " << m.experts << " experts top-" << m.experts_per_token << " on " << m.moe_layer_count() << " layers";
  if (m.is_hybrid()) {
    const char* mixer = m.linear.delta ? "Gated DeltaNet" : "Mamba-2";
    const std::pair<char, std::string> kinds[] = {{'M', mixer}, {'*', "attention"}, {'-', "MLP"}, {'E', "MoE"},
                                                  {'A', "attention + FFN"}, {'G', std::string(mixer) + " + FFN"},
                                                  {'P', "attention | " + std::string(mixer) + " + FFN"}};
    std::string parts;
    for (const auto& [c, name] : kinds)
      if (const auto n = std::count(m.hybrid.begin(), m.hybrid.end(), c); n > 0)
        parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + name;
    std::cout << "\nhybrid layers: " << parts << "; " << mixer << " of " << m.linear.heads << " heads of "
              << m.linear.head_dim << ", state " << m.linear.state;
  }
  std::cout << "\n\n";
  Table t({"part", "parameters", "share"});
  const std::pair<const char*, int64_t> parts[] = {
      {"embedding", c.embedding}, {"position", c.position}, {"attention", c.attention}, {"linear mixers", c.linear_mixers},
      {"mlp", c.mlp}, {"experts", c.experts}, {"shared experts", c.shared_experts}, {"router", c.router}, {"norms", c.norms},
      {"head", c.head}};
  for (const auto& [name, n] : parts)
    if (n > 0) t.Row({name, Thousands(n), Pct(n, c.total)});
  t.Rule();
  t.Row({"total", Thousands(c.total), "100.00%"});
  if (m.is_moe()) t.Row({"active per token", Thousands(c.active), Pct(c.active, c.total)});
  if (c.vision > 0) t.Row({"+ vision encoder", Thousands(c.vision), "(" + m.vision.kind + ", frozen)"});
  std::cout << t.Render() << "\n";
  Table w({"weights", "bytes", "GiB", "GiB with g128 scales"});
  for (const WeightFormat& f : kFormats) {
    const double bytes = f.bytes * static_cast<double>(c.total);
    const double scales = f.scale_bytes * static_cast<double>(c.total);
    w.Row({f.name, Thousands(static_cast<int64_t>(bytes)), Fixed(bytes / kGiB, 2),
           f.scale_bytes > 0 ? Fixed((bytes + scales) / kGiB, 2) : "-"});
  }
  std::cout << w.Render();
  if (!m.quant.quantized()) return;
  // As shipped: the checkpoint's own format on the modules it quantizes, 16-bit elsewhere.
  const int64_t q = QuantizedParams(m);
  const double bytes = static_cast<double>(q) * CheckpointBytesPerParam(m) + static_cast<double>(c.total - q) * 2;
  std::cout << "\ncheckpoint: " << m.quant.method << ", " << DtypeName(m.quant.format) << " weights on "
            << Thousands(q) << " parameters (" << Pct(q, c.total) << "), 16-bit on the other "
            << Thousands(c.total - q) << "; as shipped " << Fixed(bytes / kGiB, 2) << " GiB\n";
  if (!m.quant.skip.empty()) {
    std::vector<std::string> shown(m.quant.skip.begin(), m.quant.skip.begin() + std::min<size_t>(6, m.quant.skip.size()));
    std::cout << "not converted: " << Join(shown) << (m.quant.skip.size() > shown.size() ? ", ... (" + std::to_string(m.quant.skip.size()) + " entries)" : "") << "\n";
  }
}

struct InspectFlags {
  std::string model;
  bool json = false;
};

Registrar reg(10, [](CLI::App& app) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand("inspect", "exact parameter counts and weight bytes of a model");
  cmd->add_option("--model,-m,model", flags->model, kModelHelp)->required();
  cmd->add_flag("--json", flags->json, "print JSON on stdout");
  cmd->callback([flags] {
    auto m = LoadModel(flags->model);
    if (!m.ok()) return (void)Fail(m.status());
    ParamCounts c = CountParams(*m);
    if (flags->json) std::cout << ToJson(*m, c).dump(2) << "\n";
    else PrintText(*m, c);
  });
});

}  // namespace
}  // namespace shardplan::cli
