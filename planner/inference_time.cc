// Inference time: prefill once, then one decode step per generated token, each pipeline
// stage bound by reading its weights and KV cache, or by compute at large batch.
#include <algorithm>
#include <cmath>

#include "planner/collectives.h"
#include "planner/compute_cost.h"
#include "planner/memory_terms.h"
#include "planner/quantization.h"
#include "planner/time_model.h"

namespace shardplan {
namespace {

int AtLeast1(int v) { return v > 0 ? v : 1; }

struct Replica {
  double weights = 0, experts = 0;  // bytes per GPU (routed experts included in weights)
  double kv_per_token = 0;          // bytes per GPU
  double state_per_sequence = 0;    // a hybrid's Mamba state, bytes per GPU
  double layers = 0;                // per stage
  double attention_layers = 0;      // per stage, the layers holding KV (all but a hybrid's others)
  double tp_collectives = 0;        // all-reduces per stage and forward
};

Replica ReplicaBytes(const ModelSpec& m, Dtype weights, Dtype kv, int tp, int pp) {
  Replica r;
  double experts = 0, layer_params = FinalNormParams(m);
  for (int64_t l = 0; l < m.layers; ++l) {
    const double e = static_cast<double>(LayerExpertParams(m, l));
    experts += e;
    layer_params += static_cast<double>(LayerParams(m, l)) - e;
  }
  const double outside = static_cast<double>(m.vocab) * Width(m) * (m.tied_embeddings ? 1 : 2);
  const double split = static_cast<double>(tp) * pp;
  // Quantized checkpoints keep the embedding and LM head in 16-bit (vLLM, TensorRT-LLM), and
  // the modules their skip list names.
  const KeptParams kept = KeptLinearParams(m, weights, 0, m.layers);
  r.experts = ServedWeightBytes(m, weights, experts, static_cast<double>(kept.expert), 0) / split;
  r.weights = ServedWeightBytes(m, weights, layer_params, static_cast<double>(kept.dense), outside) / split + r.experts;
  r.layers = static_cast<double>(m.layers) / pp;
  const double per_layer = m.attention == AttentionKind::kMla
                               ? static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim)
                               : 2 * std::max(static_cast<double>(m.kv_width()) / tp, static_cast<double>(m.head_dim));
  r.attention_layers = static_cast<double>(m.attention_layer_count()) / pp;
  r.kv_per_token = r.attention_layers * per_layer * DtypeBytes(kv);
  for (int64_t l = 0; l < m.layers; ++l) r.tp_collectives += m.sub_blocks(l);
  r.tp_collectives /= pp;
  StageShape whole;
  whole.layers = static_cast<int>(m.layers);
  r.state_per_sequence = static_cast<double>(RecurrentStateBytesPerSequence(m, whole, tp)) / pp;
  return r;
}

}  // namespace

TimeEstimate EstimateInferenceTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c,
                                   const TimeOptions& opt) {
  TimeEstimate out;
  const InferenceSpec& in = w.inference;
  const Dtype wt = ServedFormat(m, (l.fixed & kKeyWeights) ? l.weights : in.weights);
  const Dtype kv = (l.fixed & kKeyKvCache) ? l.kv_cache : in.kv_cache;
  const int tp = AtLeast1(l.tp), pp = AtLeast1(l.pp);
  const double batch = static_cast<double>(l.batch > 0 ? l.batch : std::max<int64_t>(1, in.batch));
  const double prompt = static_cast<double>(std::max<int64_t>(1, in.prompt_len));
  const double gen = static_cast<double>(std::max<int64_t>(1, in.gen_len));
  if (m.layers <= 0 || m.hidden <= 0) return out;
  // Weight-only int8/int4 dequantize into 16-bit GEMMs; fp8 weights run fp8 GEMMs.
  const Hw hw = HardwareFor(c.gpu, wt == Dtype::kFp8 ? Dtype::kFp8 : w.precision, m.attention_impl);
  if (!StepTimeKnown(c.gpu)) return out;
  const Replica r = ReplicaBytes(m, wt, kv, tp, pp);
  const double n_active = MatmulParamsPerToken(m) / (static_cast<double>(tp) * pp);
  const double heads = static_cast<double>(m.heads) / tp, dims = QkDim(m) + VDim(m);
  const Tier tier = GroupTier(c, SpanOf(l, GroupKind::kTp));
  const double link = l.offload_params == Offload::kNone ? 0
                      : l.offload_params == Offload::kNvme ? NvmeBandwidthPerGpu(c) : HostLinkBandwidth(c);
  const double stream = link > 0 ? r.weights / link : 0;  // weights fetched every forward
  auto tp_comm = [&](double tokens) {
    return r.tp_collectives * CollectiveSeconds(Collective::kAllReduce, tokens * m.hidden * 2, tp, tier);
  };
  // Decode at the mean context: memory-bound on weights (only the experts the batch routes
  // to) and KV, or compute-bound at large batch.
  const double ctx = prompt + gen / 2;
  const double touched =
      m.is_moe() ? 1 - std::pow(1 - static_cast<double>(m.experts_per_token) / m.experts, batch) : 1;
  // A hybrid's Mamba blocks read and write their state once per decoded token.
  const double mem = MemSeconds(hw, r.weights - r.experts * (1 - touched) + batch * ctx * r.kv_per_token +
                                        2 * batch * r.state_per_sequence);
  const double compute = 2 * n_active * batch / (hw.peak * hw.ceiling) +
                         2 * batch * ctx * heads * dims * r.attention_layers / (hw.peak16 * hw.attention);
  const double stage = std::max(std::max(mem, compute), stream) + tp_comm(batch);
  const double decode = pp * stage;
  // Prefill: compute-bound GEMMs over batch * prompt tokens, causal attention.
  const double tokens = batch * prompt;
  const double prefill_stage = std::max(2 * n_active * tokens / (hw.peak * hw.ceiling) +
                                            tokens * prompt * heads * dims * r.attention_layers / (hw.peak16 * hw.attention),
                                        stream) + tp_comm(tokens);
  const double prefill = pp * prefill_stage;
  const double total = prefill + (gen - 1) * decode;
  out.step_seconds = decode;
  out.tokens_per_second_per_gpu = batch * gen / (total * tp * pp);
  const double replicas = AtLeast1(l.dp);
  out.model_flops_per_step = ModelFlopsPerToken(m, w) * batch * replicas;
  out.mfu = ModelFlopsPerToken(m, w) * out.tokens_per_second_per_gpu / hw.peak;
  if (opt.with_terms) {
    out.terms.reserve(5);
    const double bound = std::max(mem, compute);
    out.AddTerm("decode_memory", pp * (mem >= compute && mem >= stream ? mem : 0), pp * mem);
    out.AddTerm("decode_compute", pp * (compute > mem && compute >= stream ? compute : 0), pp * compute);
    out.AddTerm("offload", pp * std::max(0.0, stream - bound), pp * stream);
    out.AddTerm("tp_comm", pp * tp_comm(batch), pp * tp_comm(batch));
    out.AddTerm("prefill", 0, prefill);  // once per request batch, not per decode step
  }
  return out;
}

}  // namespace shardplan
