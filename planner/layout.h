// Layout: one point of the search space -- how a model is spread over the GPUs.
// Parsed from `--layout key=value,...` (DESIGN.md); unset keys take defaults or are derived
// by ResolveLayout, which also enforces the rules real frameworks enforce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/dtype.h"
#include "planner/model_spec.h"
#include "planner/status.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan {

enum class Framework { kDeepSpeed, kFsdp, kMegatron, kTorchtitan };
// The library a user names with framework= when it trains on another's engine: torchtune and
// HF Trainer (with PEFT/TRL) run FSDP2/FSDP or plain DDP, Unsloth is HF on one GPU with its
// own kernels. Each brings recipe defaults (planner/recipe.h); the engine does the sharding.
// kNemo: NeMo / Megatron-Bridge recipes on Megatron-core (their performance defaults differ
// from bare Megatron-LM: TP communication overlap on, sequence parallel on with TP).
// kAutomodel: NeMo AutoModel, FSDP2 with PP/EP/CP as torchtitan composes them, on a model
// built in the checkpoint's dtype (no fp32 master copy).
// kMegatronDeepSpeed: Megatron-LM's model code (vocab-parallel head and loss, fused kernels)
// trained by DeepSpeed's engine (ZeRO, pipeline engine, BF16_Optimizer).
// kLlmFoundry: MosaicML llm-foundry on Composer's FSDP, with its model code's defaults.
// kFmsFsdp: IBM's fms-fsdp, FSDP whose selective checkpointing recomputes whole blocks.
// kLitgpt: Lightning's LitGPT, its own model code on Fabric: one GPU plainly, several through
// FSDP (FULL_SHARD) with every block checkpointed.
enum class Stack { kNative, kTorchtune, kHf, kUnsloth, kNemo, kAutomodel, kMegatronDeepSpeed, kLlmFoundry, kFmsFsdp, kLitgpt };
enum class Recompute { kNone, kSelective, kFull };
enum class Offload { kNone, kCpu, kNvme };
// Pipeline schedule. k1f1b is 1F1B, interleaved when vpp > 1. The zero-bubble schedules
// (Qi et al. 2023, "Zero Bubble Pipeline Parallelism") split backward into the input
// gradient (B) and the weight gradient (W) and fill the bubble with W: kZeroBubble is
// ZB-H1 (1F1B's activation memory, bubble (p-1)(F+B-W) for 1F1B's (p-1)(F+B+W);
// torchtitan InterleavedZeroBubble), kZbv the V-shaped schedule of two chunks per rank
// (1F1B's memory, bubble (p-1)(F+B-2W); torchtitan ZBVZeroBubble).
enum class PpSchedule { k1f1b, kZeroBubble, kZbv };
// How MoE tokens reach their experts across the expert-parallel group (Megatron's
// --moe-token-dispatcher-type). kAllToAll: one NCCL all-to-all of every token's copy per
// routed expert (Megatron's alltoall, torchtitan's all_to_all_single). kAllGather: every rank
// gathers the group's tokens and reduce-scatters the outputs back (Megatron's own default).
// kFlex: DeepEP or HybridEP, which send one copy of a token per destination GPU inside an
// NVLink domain and one per destination domain across the network, forwarding on NVLink.
enum class EpDispatch { kAllToAll, kAllGather, kFlex };

// Bits of Layout::fixed: which keys the user set (the search holds these).
enum LayoutKey : uint32_t {
  kKeyFramework = 1u << 0, kKeyDp = 1u << 1, kKeyTp = 1u << 2, kKeyPp = 1u << 3,
  kKeyVpp = 1u << 4, kKeyCp = 1u << 5, kKeyEp = 1u << 6, kKeySp = 1u << 7,
  kKeyZero = 1u << 8, kKeyShardGroup = 1u << 9, kKeyAc = 1u << 10,
  kKeyOffloadOptimizer = 1u << 11, kKeyOffloadParams = 1u << 12, kKeyMbs = 1u << 13,
  kKeyGradAccum = 1u << 14, kKeyWeights = 1u << 15, kKeyKvCache = 1u << 16,
  kKeyStages = 1u << 17, kKeyEtp = 1u << 18, kKeyReshard = 1u << 19, kKeyAcLayers = 1u << 20,
  kKeyBatch = 1u << 21, kKeyAcModules = 1u << 22, kKeyTpOverlap = 1u << 23, kKeyPpSchedule = 1u << 24,
  kKeyDispatcher = 1u << 25, kKeyEpOverlap = 1u << 26,
};

// Megatron's --recompute-modules under selective recomputation (transformer_config.py):
// which parts of a block drop their saved tensors and run again in backward.
enum AcModule : uint32_t {
  kAcCoreAttn = 1u << 0,      // core attention (the default; with flash attention, its LSE)
  kAcMoeAct = 1u << 1,        // the MoE experts' activation function
  kAcLayernorm = 1u << 2,     // input_layernorm and pre_mlp_layernorm outputs
  kAcMlaUpProj = 1u << 3,     // MLA up-projections and RoPE
  kAcMlp = 1u << 4,           // the dense MLP
  kAcMoe = 1u << 5,           // the whole MoE layer
  kAcSharedExperts = 1u << 6, // the shared experts
};

// FSDP's HYBRID_SHARD as a layout says it (sharding_strategy=HYBRID_SHARD): shard over the
// GPUs of one node, replicate across nodes; ResolveLayout turns it into a shard_group.
constexpr int kShardGroupNode = -1;

struct Layout {
  Framework framework = Framework::kFsdp;
  Stack stack = Stack::kNative;     // the library named, when not the engine itself
  int dp = 1;                       // data-parallel degree (replicas x shards)
  int tp = 1;                       // tensor parallel, inside a node
  int pp = 1;                       // pipeline stages
  int vpp = 1;                      // virtual stages per rank (interleaved 1F1B when > 1)
  int cp = 1;                       // context parallel
  int ep = 1;                       // expert parallel (carved out of dp x cp for experts)
  int etp = 1;                      // expert tensor parallel (Megatron ETP; 1 = experts not TP-split)
  bool sp = false;                  // sequence parallel (with tp > 1)
  int zero = 0;                     // 0 none, 1 optimizer, 2 + gradients, 3 + parameters
  int shard_group = 0;              // HSDP shard group / ZeRO++ hpZ size; 0 = all of dp;
                                    // kShardGroupNode until ResolveLayout reads the cluster
  Recompute ac = Recompute::kNone;  // activation recomputation
  int ac_layers = 0;                // layers per stage recomputed under kFull; 0 = all
  uint32_t ac_modules = kAcCoreAttn;  // AcModule bits recomputed under kSelective (Megatron)
  Offload offload_optimizer = Offload::kNone;
  Offload offload_params = Offload::kNone;
  int mbs = 1;                      // micro-batch size, sequences per GPU per forward
  int grad_accum = 1;               // micro-batches per optimizer step per DP rank
  bool reshard_after_forward = true;  // FSDP2: free gathered params after forward
  bool tp_overlap = false;            // TP collectives under the GEMMs (TE userbuffers, torchtitan async TP)
  bool ep_overlap = false;            // MoE dispatch/combine under another micro-batch's compute (Megatron)
  PpSchedule pp_schedule = PpSchedule::k1f1b;
  EpDispatch dispatcher = EpDispatch::kAllToAll;  // MoE token exchange, with ep > 1
  std::vector<int> stages;          // layers per pipeline stage; empty = balanced split
  Dtype weights = Dtype::kBf16;     // inference weight format
  Dtype kv_cache = Dtype::kBf16;    // inference KV cache format
  int batch = 0;                    // inference: concurrent sequences per replica (0 = workload's)
  uint32_t fixed = 0;               // LayoutKey bits the user set

  int world() const { return dp * tp * pp * cp; }
  bool operator==(const Layout&) const = default;
  // Size of the group that shards model states (ZeRO/FSDP); dp when no HSDP/hpZ group.
  int shard_degree() const { return shard_group > 0 ? shard_group : dp; }
};

// A process group of a layout and where its members sit in the global rank order
// (planner/rank_map.cc, the one place that order is written): `size` members, `stride`
// global ranks apart.
enum class GroupKind {
  kTp, kCp, kDp, kPp,
  kEp,           // experts over consecutive (dp, cp) positions
  kExpertData,   // the replicas of one expert shard: dp x cp / ep
  kDataContext,  // dp x cp: Megatron's distributed optimizer, torchtitan's FSDP mesh
  kShard,        // an HSDP / hpZ shard group inside dp
  kShardContext, // the shard group with CP folded in (torchtitan's dp_shard x cp mesh)
  kReplicate,    // the replicas of one HSDP shard
};
struct GroupSpan {
  int stride = 1;
  int size = 1;
};
GroupSpan SpanOf(const Layout& l, GroupKind g);

std::string_view FrameworkName(Framework f);
// What the user named: the stack (torchtune, hf, unsloth) or else the engine.
std::string_view FrameworkName(const Layout& l);
// Whether the model runs Megatron's own code (vocab-parallel head and loss, fused kernels):
// Megatron-core, or Megatron-DeepSpeed on DeepSpeed's engine.
bool MegatronModelCode(const Layout& l);
// Whether the model runs transformers' own modeling code: FSDP and DeepSpeed stacks (HF
// Trainer, accelerate, plain scripts) outside Megatron-DeepSpeed.
bool TransformersModelCode(const Layout& l);
// Whether the layers run transformers' modules (its RMSNorm's fp32 upcast, its MLP): the
// stacks above, and torchtitan for a model_type it does not build itself, which its
// transformers modeling backend trains as transformers' modules under torchtitan's
// parallelisms. Attention is another matter (FlashAttention in recipe.h).
bool TransformersModules(const ModelSpec& m, const Layout& l);
// Why the Megatron-LM arguments shardplan writes (pretrain_gpt.py, pretrain_mamba.py) cannot
// build `m`, or empty when they can: Gated DeltaNet layers, and hybrids other than Nemotron-H's
// one-mixer blocks.
std::string MegatronLmGap(const ModelSpec& m);
// Whether the run is torchtitan's own trainer (not AutoModel, which composes the same mesh):
// the layouts whose defaults follow torchtitan's releases.
bool TorchtitanItself(const Layout& l);
std::string_view RecomputeName(Recompute r);
std::string_view OffloadName(Offload o);
std::string_view DispatcherName(EpDispatch d);
// Whether the layout may recompute whole layers: Megatron's EP all-to-all overlap asserts it
// does not (transformer_config.py: recompute_granularity != 'full').
inline bool FullRecomputeAllowed(const Layout& l) { return !(l.ep_overlap && l.framework == Framework::kMegatron); }
// "core_attn/moe_act/..." in Megatron's names, in a fixed order.
std::string AcModulesName(uint32_t modules);

// Parses "framework=deepspeed,tp=8,zero=1"; unknown keys get a did-you-mean suggestion.
StatusOr<Layout> ParseLayout(std::string_view text);
// Writes every key back as `key=value,...` (round-trips through ParseLayout).
std::string FormatLayout(const Layout& l);

// The stack a run on `framework` uses when the user names no framework: a fine-tune on one
// GPU is an HF Trainer / PEFT / TRL run (the weights stay in the checkpoint's dtype);
// everything else is the engine itself.
Stack DefaultStack(Framework framework, const Workload& w, const ClusterSpec& c);

// Fills derived keys (dp from the world size, grad_accum from the global batch, stages) and
// checks the rules of the layout's framework; the error names the rule that broke.
StatusOr<Layout> ResolveLayout(const ModelSpec& m, const Workload& w, const ClusterSpec& c, Layout l);

// Whether ResolveLayout cut an unstated torchtitan micro-batch the way releases before
// 2025-04 did (each rank's batch over the pipeline stages) rather than the later default, 1.
bool TorchtitanStageSplit(const Layout& l);

// Whether a resolved layout is one the stack runs as its scripts set it up, for the search
// to offer: LitGPT's fine-tuning shards fully over several GPUs (FULL_SHARD) with every block
// checkpointed, its pretraining shards within a node without checkpointing, and one GPU runs
// plainly. Other stacks take any layout their engine does.
bool StackRunsLayout(const Layout& l, const Workload& w);

// Layers on each pipeline stage (per rank, its virtual stages together): `stages` when given,
// torchtitan's own split for torchtitan (the embeddings and the head weigh a layer each), else
// the balanced split, earlier stages taking the remainder.
std::vector<int> StageLayers(const ModelSpec& m, const Layout& l);

// The balanced split's stage `s` of `pp`: its layers, and the index of its first layer.
inline int BalancedStageLayers(int64_t layers, int pp, int s, int* first) {
  const int base = static_cast<int>(layers / pp), rem = static_cast<int>(layers % pp);
  *first = s * base + (s < rem ? s : rem);
  return base + (s < rem ? 1 : 0);
}

}  // namespace shardplan
