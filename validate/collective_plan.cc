#include "validate/collective_plan.h"

#include <algorithm>

#include "planner/deepspeed_buckets.h"
#include "planner/recipe.h"

namespace shardplan::validate {
namespace {

void Add(std::vector<CollectiveStep>* out, std::string name, std::string group,
         CollectiveKind kind, int64_t size, int elem, Phase phase, int64_t repeat,
         std::string why, int direction = 0) {
  if (size <= 0 || repeat <= 0) return;
  CollectiveStep c;
  c.name = std::move(name);
  c.group = std::move(group);
  c.kind = kind;
  c.size_bytes = size;
  c.elem_bytes = elem;
  c.phase = phase;
  c.repeat = repeat;
  c.direction = direction;
  c.why = std::move(why);
  out->push_back(std::move(c));
}

// Elements of the adapters' gradients on this rank, from the estimate's own term: LoRA
// adapters keep fp32 gradients (peft autocast_adapter_dtype), 4 B each.
int64_t AdapterGradientElements(const StageMemory& stage) {
  for (const MemoryTerm& t : stage.terms) {
    if (t.name == "adapter_gradients") return t.bytes / 4;
  }
  return 0;
}

void AddTensorParallel(const Plan& p, const CommShape& s, std::vector<CollectiveStep>* out) {
  if (p.layout.tp <= 1) return;
  const int64_t size = s.tokens * p.model.hidden * s.act_bytes;
  // After attention and after the MLP of every layer; a hybrid block's one mixer, once.
  const int64_t n = s.sub_blocks * s.micro;
  std::vector<Phase> phases = {Phase::kForward};
  if (s.training) phases.push_back(Phase::kBackward);
  for (Phase ph : phases) {
    const std::string suffix = ph == Phase::kForward ? "_fwd" : "_bwd";
    if (p.layout.sp) {
      Add(out, "tp_all_gather" + suffix, "tp", CollectiveKind::kAllGather, size, s.act_bytes, ph,
          n, "sequence-parallel all-gather of tokens x hidden before each TP block");
      Add(out, "tp_reduce_scatter" + suffix, "tp", CollectiveKind::kReduceScatter, size,
          s.act_bytes, ph, n, "sequence-parallel reduce-scatter of tokens x hidden after each TP block");
    } else {
      Add(out, "tp_all_reduce" + suffix, "tp", CollectiveKind::kAllReduce, size, s.act_bytes, ph, n,
          "all-reduce of tokens x hidden after each row-parallel projection");
    }
  }
}

void AddContextParallel(const Plan& p, const CommShape& s, std::vector<CollectiveStep>* out) {
  const ModelSpec& m = p.model;
  if (p.layout.cp <= 1) return;
  const int64_t kv_per_token =
      m.attention == AttentionKind::kMla
          ? m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
          : 2 * m.kv_width();
  const int64_t kv_local = std::max<int64_t>(kv_per_token / p.layout.tp, 2 * m.head_dim);
  const int64_t size = s.tokens * p.layout.cp * kv_local * s.act_bytes;  // the whole sequence
  const int64_t n = s.attention_layers * s.micro;
  if (n > 0) {
    Add(out, "cp_all_gather_kv", "cp", CollectiveKind::kAllGather, size, s.act_bytes, Phase::kForward,
        n, "all-gather of K and V over the sequence (Llama 3 context parallelism)");
    if (s.training)
      Add(out, "cp_reduce_scatter_dkv", "cp", CollectiveKind::kReduceScatter, size, s.act_bytes,
          Phase::kBackward, n, "reduce-scatter of the K and V gradients");
  }
  // A linear mixer trades its sequence shard for a head shard around the scan and back, the
  // time model's all-to-alls (Megatron-core's mamba_context_parallel.py).
  const int64_t mixers = s.linear_layers * s.micro;
  if (mixers == 0) return;
  const int64_t width = m.linear.cp_exchange() / p.layout.tp;
  const int64_t a2a = s.tokens * width * s.act_bytes;
  Add(out, "cp_all_to_all_mixer_fwd", "cp", CollectiveKind::kAllToAll, a2a, s.act_bytes, Phase::kForward, mixers,
      "linear mixers: in_proj's output to head shards and y back, tokens x (in_proj + inner) / TP");
  if (s.training)
    Add(out, "cp_all_to_all_mixer_bwd", "cp", CollectiveKind::kAllToAll, a2a, s.act_bytes, Phase::kBackward, mixers,
        "the same all-to-alls for the gradients");
}

void AddExpertParallel(const Plan& p, const CommShape& s, std::vector<CollectiveStep>* out) {
  if (p.layout.ep <= 1 || s.moe_layers == 0) return;
  const int64_t tokens = p.layout.sp && p.layout.tp > 1 ? s.tokens / p.layout.tp : s.tokens;
  const int64_t size = tokens * p.model.experts_per_token * p.model.hidden * s.act_bytes;
  const int64_t n = 2 * s.moe_layers * s.micro;  // dispatch and combine
  Add(out, "ep_all_to_all_fwd", "ep", CollectiveKind::kAllToAll, size, s.act_bytes, Phase::kForward,
      n, "token dispatch and combine: tokens x top-k x hidden per MoE layer");
  if (!s.training) return;
  Add(out, "ep_all_to_all_bwd", "ep", CollectiveKind::kAllToAll, size, s.act_bytes,
      Phase::kBackward, n, "gradients of dispatch and combine");
}

void AddPipeline(const Plan& p, const CommShape& s, std::vector<CollectiveStep>* out) {
  const Layout& l = p.layout;
  if (l.pp <= 1) return;
  const int64_t tokens = l.sp && l.tp > 1 ? s.tokens / l.tp : s.tokens;
  const int64_t size = tokens * p.model.hidden * s.act_bytes;
  const int64_t n = s.micro * l.vpp;  // every micro-batch crosses every (virtual) stage boundary
  Add(out, "pp_send_activations", "pp", CollectiveKind::kSendRecv, size, s.act_bytes,
      Phase::kForward, n, "activations of a micro-batch to the next stage", +1);
  if (!s.training) return;
  Add(out, "pp_send_gradients", "pp", CollectiveKind::kSendRecv, size, s.act_bytes,
      Phase::kBackward, n, "activation gradients to the previous stage", -1);
}

}  // namespace

CommShape MakeCommShape(const Plan& plan, const RankPlace& me) {
  const ModelSpec& m = plan.model;
  const Layout& l = plan.layout;
  const Workload w = WorkloadAsRun(plan.workload, l);  // the precision the memory model priced
  CommShape s;
  s.training = w.training();
  const int64_t seqs = s.training ? l.mbs : (l.batch > 0 ? l.batch : w.inference.batch);
  int64_t tokens = seqs * (s.training ? w.seq_len : w.inference.prompt_len);
  // A serving step forwards at most max_num_batched_tokens: the memory model's own profile
  // (planner/recipe.h), by release and flag.
  if (!s.training) tokens = std::min(tokens, ResolveServingProfile(w, plan.cluster.gpu).tokens);
  s.tokens = tokens / std::max(l.cp, 1);
  s.micro = s.training ? std::max(l.grad_accum, 1) : 1;
  s.act_bytes = s.param_bytes = w.precision == Dtype::kFp32 ? 4 : 2;
  const ZeroBuckets buckets = DeepSpeedBuckets(m, w, l);
  s.ds_reduce_bucket = buckets.reduce_bucket;
  s.ds_prefetch_bucket = buckets.prefetch_bucket;
  s.ds_allgather_bucket = buckets.allgather_bucket;
  // The stage's shape is the memory model's own (planner/memory_model.h), not recomputed.
  const auto& stages = plan.memory.stages;
  if (me.pp < static_cast<int>(stages.size())) {
    const StageMemory& st = stages[static_cast<size_t>(me.pp)];
    s.layers = st.layers;
    s.local_params = st.params;
    s.unit_params = st.unit_params;
    for (int64_t i = st.first_layer; i < st.first_layer + s.layers; ++i) {
      const bool moe = static_cast<size_t>(i) < m.moe_layer.size() ? m.moe_layer[static_cast<size_t>(i)]
                                                                   : m.is_moe();
      s.moe_layers += moe ? 1 : 0;
      s.attention_layers += m.has_attention(i) ? 1 : 0;
      s.linear_layers += m.has_linear_mixer(i) ? 1 : 0;
      s.sub_blocks += m.sub_blocks(i);
    }
  }
  s.grad_params = s.local_params;
  if (w.lora_like() && me.pp < static_cast<int>(stages.size())) {
    // Only adapters train, so only their gradients are synchronised.
    const int64_t sharded = l.zero >= 2 ? l.shard_degree() : 1;
    s.grad_params = AdapterGradientElements(stages[static_cast<size_t>(me.pp)]) * sharded;
  }
  return s;
}

std::vector<CollectiveStep> PlanCollectives(const Plan& plan, const RankPlace& me) {
  const CommShape s = MakeCommShape(plan, me);
  std::vector<CollectiveStep> out;
  AddTensorParallel(plan, s, &out);
  AddContextParallel(plan, s, &out);
  AddExpertParallel(plan, s, &out);
  AddPipeline(plan, s, &out);
  if (s.training) {
    for (CollectiveStep& c : DataParallelCollectives(plan.layout, s)) out.push_back(std::move(c));
  }
  // Stable by phase: a phase runs its collectives in the order added above.
  std::stable_sort(out.begin(), out.end(),
                   [](const CollectiveStep& a, const CollectiveStep& b) { return a.phase < b.phase; });
  return out;
}

}  // namespace shardplan::validate
