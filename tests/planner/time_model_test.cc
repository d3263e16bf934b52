// Tests of the time model: FLOPs per token against the published formulas, the alpha-beta
// cost of each collective, the tier a group runs on, the pipeline bubble, and the
// invariants of EstimateTime. Expected values are written as the formula they come from.
#include "planner/time_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "planner/collectives.h"
#include "planner/compute_cost.h"
#include "planner/framework_defaults.h"
#include "planner/io/model_reader.h"
#include "planner/io/workload_reader.h"
#include "planner/layout.h"
#include "planner/recipe.h"
#include "topology/gpu_catalog.h"

namespace shardplan {
namespace {

// Llama-2-7B, configs/models/llama-2-7b.json.
ModelSpec Llama2_7B() {
  ModelSpec m;
  m.name = "llama-2-7b";
  m.vocab = 32000;
  m.hidden = 4096;
  m.layers = 32;
  m.heads = 32;
  m.kv_heads = 32;
  m.head_dim = 128;
  m.intermediate = 11008;
  return m;
}

// Llama-3.1-70B: GQA with 8 KV heads.
ModelSpec Llama3_70B() {
  ModelSpec m = Llama2_7B();
  m.vocab = 128256;
  m.hidden = 8192;
  m.layers = 80;
  m.heads = 64;
  m.kv_heads = 8;
  m.intermediate = 28672;
  return m;
}

// Llama-3.1-8B: Llama-3.1-70B's shape at 4,096 wide, 32 layers and heads, 14,336 FFN.
ModelSpec Llama31_8B() {
  ModelSpec m = Llama3_70B();
  m.hidden = 4096;
  m.layers = 32;
  m.heads = 32;
  m.intermediate = 14336;
  return m;
}

// GPT-3 175B as Megatron benchmarks it (Narayanan et al. 2021): 4h GeLU MLP, vocab 51200.
ModelSpec Gpt3_175B() {
  ModelSpec m;
  m.vocab = 51200;
  m.hidden = 12288;
  m.layers = 96;
  m.heads = 96;
  m.kv_heads = 96;
  m.head_dim = 128;
  m.intermediate = 4 * 12288;
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayer;
  m.position = PositionKind::kLearned;
  m.max_positions = 2048;
  m.tied_embeddings = true;
  return m;
}

GpuSpec H100() {
  GpuSpec g;
  g.name = "h100-sxm-80gb";
  g.memory_bytes = 80LL << 30;
  g.bf16_flops = 989.4e12;
  g.fp16_flops = 989.4e12;
  g.fp8_flops = 1978.9e12;
  g.memory_bandwidth = 3.35e12;
  g.nvlink_bandwidth = 450e9;
  g.compute_capability = 90;
  return g;
}

// DGX H100 nodes: NVLink 450 GB/s per GPU, 8 x 400 Gb/s NICs.
ClusterSpec DgxH100(int nodes) {
  ClusterSpec c;
  c.name = "dgx-h100";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.gpu = H100();
  c.intra_node = {"nvlink", 450e9, 0, 0};
  c.inter_node = {"infiniband", 50e9, 5e-6, 8};
  c.pcie_bandwidth = 64e9;
  c.nvme_bytes = 30'000'000'000'000LL;
  c.nvme_bandwidth = 25e9;
  return c;
}

Workload Pretrain(int64_t seq, int64_t batch) {
  Workload w;
  w.seq_len = seq;
  w.global_batch = batch;
  return w;
}

double TermSum(const TimeEstimate& t) {
  return std::accumulate(t.terms.begin(), t.terms.end(), 0.0,
                         [](double s, const TimeTerm& term) { return s + term.seconds; });
}

double Term(const TimeEstimate& t, std::string_view name) {
  for (const TimeTerm& term : t.terms)
    if (term.name == name) return term.seconds;
  ADD_FAILURE() << "no term " << name;
  return -1;
}

double RawTerm(const TimeEstimate& t, std::string_view name) {
  for (const TimeTerm& term : t.terms)
    if (term.name == name) return term.raw_seconds;
  ADD_FAILURE() << "no term " << name;
  return -1;
}

// The GEMM wave model runs on the card's SM count: the catalog's where it gives one (GeForce
// cards run FP32-accumulate tensor math at half rate, so their peak would halve an estimate:
// RTX 5090 170 SMs, RTX 4090 128), else the peak over the architecture's per-SM rate.
TEST(Hardware, SmCountFromTheCatalog) {
  auto rtx5090 = CatalogGpu("rtx-5090-32gb");
  ASSERT_TRUE(rtx5090.ok()) << rtx5090.status().message();
  EXPECT_DOUBLE_EQ(HardwareFor(*rtx5090, Dtype::kBf16).sms, 170);
  auto rtx4090 = CatalogGpu("rtx-4090-24gb");
  ASSERT_TRUE(rtx4090.ok());
  EXPECT_DOUBLE_EQ(HardwareFor(*rtx4090, Dtype::kBf16).sms, 128);
  GpuSpec h100 = H100();  // no count given: 989.4 TF over 7.5 TF per Hopper SM
  EXPECT_DOUBLE_EQ(HardwareFor(h100, Dtype::kBf16).sms, 132);
}

// ---- FLOPs per token ----

TEST(FlopsPerToken, Llama2_7BAt4096) {
  // Matmul weights: 32 * (4 h^2 + 3 h f) + V h = 6,607,077,376 (the embedding lookup is
  // not a matmul; the untied LM head is).
  EXPECT_DOUBLE_EQ(MatmulParamsPerToken(Llama2_7B()), 6'607'077'376.0);
  // PaLM app. B: 6 N + 12 L h s = 39,642,464,256 + 6,442,450,944.
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(Llama2_7B(), 4096), 46'084'915'200.0);
}

TEST(FlopsPerToken, MatchesMegatron2021FormulaForGpt3) {
  // Narayanan et al. 2021, appendix, without recomputation, per token:
  // 72 L h^2 (1 + s / (6h) + V / (12 L h)).
  const double L = 96, h = 12288, s = 2048, V = 51200;
  const double megatron = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  EXPECT_NEAR(TrainingFlopsPerToken(Gpt3_175B(), 2048), megatron, megatron * 1e-12);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(Gpt3_175B(), 2048), 1'076'442'955'776.0);
}

TEST(FlopsPerToken, MatchesMegatronCoreFormulaForGqa) {
  // megatron/training num_floating_point_operations: 12 L h^2 ((1 + g/a + s/h) * a d / h +
  // 1.5 f / h) + 6 V h per token, SwiGLU and grouped-query attention.
  const double L = 80, h = 8192, f = 28672, V = 128256, a = 64, g = 8, d = 128, s = 8192;
  const double core = 12 * L * h * h * ((1 + g / a + s / h) * (a * d / h) + 1.5 * f / h) + 6 * V * h;
  EXPECT_DOUBLE_EQ(core, 481'434'796'032.0);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(Llama3_70B(), 8192), core);
}

// Nemotron 3 Nano at 8,192 tokens, block by block: 6 attention blocks (q, o of 4,096 and k, v of
// 256 over h = 2,688), 23 MoE blocks (top-6 up/down experts of 1,856, a shared expert of 3,712
// and the router), 23 Mamba-2 blocks (in_proj to 10,304 and out_proj from 4,096) and the head:
// 3,226,804,224 matmul weights. Attention adds 2 x 6 x 8,192 x 32 x 256 and the SSD scan
// 23 x (2 x 128 x (128 x 8 + 4,096) + 4 x 128 x 4,096) per pass. Megatron-Bridge's own table
// (26.06, DGX-H100) reports 328 model TFLOP/s at 14,719 tokens/s: 22.28 GFLOP a token from its
// num_floating_point_operations, which takes Mamba's inner width as 2h; ours is 1.2% under it.
TEST(FlopsPerToken, HybridCountsEachBlockItsOwnMixer) {
  auto m = LoadModel("nemotron-3-nano-30b-a3b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_DOUBLE_EQ(MatmulParamsPerToken(*m), 3'226'804'224.0);
  EXPECT_DOUBLE_EQ(LinearMixerFlopsPerToken(*m), 3'407'872.0);
  const double expected = 6 * 3'226'804'224.0 + 3 * (2.0 * 6 * 8192 * 32 * 256 + 23 * 3'407'872.0);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(*m, 8192), expected);
  EXPECT_NEAR(TrainingFlopsPerToken(*m, 8192) / (328e12 / 14719), 1, 0.02);
}

// Qwen3-Next-80B-A3B at 4,096 tokens: 12 gated-attention layers (q_proj doubled by the gate),
// 48 MoE blocks (top-10 of 512 SwiGLU experts of 512, a shared expert of 512, the router), 36
// Gated DeltaNets (in_proj to 12,352, out_proj from 4,096) and the head: 3,562,274,816 matmul
// weights; per pass attention adds 2 x 12 x 4,096 x 16 x (256 + 256) and each DeltaNet's chunked rule
// 32 x (6 x 64 x 128 + 4 x 64 x 128) + 6 x 128 x 4,096.
TEST(FlopsPerToken, GatedDeltaNetHybrid) {
  auto doc = Document::Parse("next.json", R"({"architectures":["Qwen3NextForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":151643,"decoder_sparse_step":1,"eos_token_id":151645,"full_attention_interval":4,"head_dim":256,"hidden_act":"silu","hidden_size":2048,"initializer_range":0.02,"intermediate_size":5120,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_num_key_heads":16,"linear_num_value_heads":32,"linear_value_head_dim":128,"max_position_embeddings":262144,"mlp_only_layers":[],"model_type":"qwen3_next","moe_intermediate_size":512,"norm_topk_prob":true,"num_attention_heads":16,"num_experts":512,"num_experts_per_tok":10,"num_hidden_layers":48,"num_key_value_heads":2,"output_router_logits":false,"partial_rotary_factor":0.25,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":10000000,"router_aux_loss_coef":0.001,"shared_expert_intermediate_size":512,"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_cache":true,"use_sliding_window":false,"vocab_size":151936})");
  ASSERT_TRUE(doc.ok());
  auto m = ParseModel(*doc, "qwen3-next");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_DOUBLE_EQ(MatmulParamsPerToken(*m), 3'562'274'816.0);
  EXPECT_DOUBLE_EQ(LinearMixerFlopsPerToken(*m), 5'767'168.0);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(*m, 4096), 6 * 3'562'274'816.0 + 3 * (805'306'368.0 + 36 * 5'767'168.0));
}

TEST(FlopsPerToken, MoeCountsTopKExpertsAndTheRouter) {
  ModelSpec m = Llama2_7B();
  m.experts = 8;
  m.experts_per_token = 2;
  m.expert_intermediate = 14336;
  m.moe_layer.assign(32, true);
  const double h = 4096, attn = 4 * h * h, experts = 2 * 3 * h * 14336, router = 8 * h;
  EXPECT_DOUBLE_EQ(MatmulParamsPerToken(m), 32 * (attn + experts + router) + 32000 * h);
}

TEST(FlopsPerToken, SlidingWindowCapsTheAttendedKeys) {
  ModelSpec m = Llama2_7B();
  m.sliding_window = 1024;  // every layer
  const double n = MatmulParamsPerToken(m);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(m, 8192), 6 * n + 12.0 * 32 * 4096 * 1024);
}

// DSA: a query attends to the index_topk keys its indexer picks; over a causal 128k sequence
// that averages 2048 - 2048^2 / (2 x 131072) = 2032 keys, and every key while fewer exist.
TEST(FlopsPerToken, SparseAttentionCapsTheAttendedKeys) {
  ModelSpec m = Llama2_7B();
  m.index_topk = 2048;
  EXPECT_DOUBLE_EQ(AttendedKeys(m, 131072, true), 2032);
  EXPECT_DOUBLE_EQ(AttendedKeys(m, 4096, true), 2048 - 2048.0 * 2048 / (2 * 4096));
  EXPECT_DOUBLE_EQ(AttendedKeys(m, 2048, true), 1024);
  EXPECT_DOUBLE_EQ(AttendedKeys(m, 100000, false), 2048);  // decoding over a long context
  EXPECT_DOUBLE_EQ(AttendedKeys(m, 1000, false), 1000);
}

TEST(FlopsPerToken, LoraSkipsWeightGradients) {
  Workload w = Pretrain(4096, 8);
  w.task = Task::kLora;
  const double n = MatmulParamsPerToken(Llama2_7B());
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(Llama2_7B(), w), 4 * n + 12.0 * 32 * 4096 * 4096);
  w.task = Task::kPretrain;
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(Llama2_7B(), w), TrainingFlopsPerToken(Llama2_7B(), 4096));
}

// ---- Collectives ----

TEST(Collectives, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllToAll, 64), 63.0 / 64);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kSendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 1), 0.0);
}

TEST(Collectives, AlphaBetaPerCollective) {
  const Tier t{100e9, 2e-6, false};
  const double launch = 5e-6;  // collectives.cc kLaunchSeconds
  // Ring all-reduce of 1 GB on 8 ranks: 2(n-1) steps + 2(n-1)/n * S / busbw.
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllReduce, 1e9, 8, t), launch + 14 * 2e-6 + 1.75e9 / 100e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllGather, 1e9, 8, t), launch + 7 * 2e-6 + 0.875e9 / 100e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kReduceScatter, 1e9, 4, t), launch + 3 * 2e-6 + 0.75e9 / 100e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllToAll, 64e6, 64, t), launch + 63 * 2e-6 + 63e6 / 100e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kSendRecv, 1e8, 2, t), launch + 2e-6 + 1e8 / 100e9);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllReduce, 1e9, 1, t), 0.0);
}

TEST(Collectives, SmallAllReduceOnManyRanksTakesTheTree) {
  const Tier t{50e9, 5e-6, true};
  // 8 KB on 64 ranks: the ring pays 126 steps, the double binary tree 2 * log2(64) = 12 hops.
  EXPECT_DOUBLE_EQ(CollectiveSeconds(Collective::kAllReduce, 8192, 64, t), 5e-6 + 12 * 5e-6 + 2 * 8192 / 50e9);
}

TEST(Collectives, GroupTierFollowsTheRankOrder) {
  const ClusterSpec c = DgxH100(4);
  const Tier tp = GroupTier(c, 1, 8);  // TP=8 inside a node
  EXPECT_FALSE(tp.inter_node);
  EXPECT_DOUBLE_EQ(tp.bus_bandwidth, 450e9 * 0.80);
  const Tier dp = GroupTier(c, 8, 4);  // DP across nodes behind TP=8: one member per node
  EXPECT_TRUE(dp.inter_node);
  EXPECT_DOUBLE_EQ(dp.bus_bandwidth, 1 * 50e9 * 0.85);
  EXPECT_DOUBLE_EQ(dp.latency_s, 5e-6);
  const Tier dp2 = GroupTier(c, 4, 4);  // TP=4: two DP members per node, two NIC shares
  EXPECT_TRUE(dp2.inter_node);
  EXPECT_DOUBLE_EQ(dp2.bus_bandwidth, 2 * 50e9 * 0.85);
  const Tier fsdp = GroupTier(c, 1, 32);  // all 8 GPUs of each node: 8 rings on 8 NICs
  EXPECT_DOUBLE_EQ(fsdp.bus_bandwidth, std::min(450e9 * 0.80, 8 * 50e9 * 0.85));
  EXPECT_FALSE(GroupTier(DgxH100(1), 8, 4).inter_node);  // one node never leaves it
}

TEST(Collectives, NeighborExchangeAcrossNodesRunsOnOneNic) {
  const ClusterSpec c = DgxH100(4);
  // CP=16 behind TP=2: a ring over 4 nodes with 4 members on each. A collective's NCCL rings
  // spread over the 4 members' NICs; a ring-attention hop is one GPU sending to one GPU.
  EXPECT_DOUBLE_EQ(GroupTier(c, 2, 16).bus_bandwidth, 4 * 50e9 * 0.85);
  const Tier hop = NeighborTier(c, 2, 16);
  EXPECT_TRUE(hop.inter_node);
  EXPECT_DOUBLE_EQ(hop.bus_bandwidth, 50e9 * 0.85);
  EXPECT_DOUBLE_EQ(hop.latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(NeighborTier(c, 1, 8).bus_bandwidth, 450e9 * 0.80);  // inside a node: NVLink
  // 8 pipeline stages 2 ranks apart span two nodes: the hop between them sets the pace.
  EXPECT_TRUE(NeighborTier(c, 2, 8).inter_node);
  EXPECT_FALSE(GroupTier(c, 2, 2).inter_node);
}

// GB200 NVL72 joins 18 trays of 4 GPUs on one NVLink fabric: an EP64 all-to-all over 16
// trays stays on NVLink, where 4-GPU nodes on the network alone put it on one NIC share per
// member; a group wider than the domain crosses the network again.
TEST(Collectives, NvlinkDomainSpansNodes) {
  ClusterSpec trays = DgxH100(64);
  trays.gpus_per_node = 4;
  trays.intra_node = {"nvlink", 900e9, 0, 0};
  trays.inter_node = {"infiniband", 50e9, 5e-6, 4};
  ClusterSpec nvl72 = trays;
  nvl72.intra_node.domain = 72;
  EXPECT_EQ(nvl72.nvlink_domain_size(), 72);
  EXPECT_EQ(trays.nvlink_domain_size(), 4);
  const Tier in_domain = GroupTier(nvl72, 1, 64);
  EXPECT_FALSE(in_domain.inter_node);
  EXPECT_DOUBLE_EQ(in_domain.bus_bandwidth, 900e9 * 0.80);
  const Tier on_network = GroupTier(trays, 1, 64);
  EXPECT_TRUE(on_network.inter_node);
  EXPECT_DOUBLE_EQ(on_network.bus_bandwidth, 4 * 50e9 * 0.85);
  const Tier wider = GroupTier(nvl72, 1, 128);  // 72 members per domain, each on its own NIC
  EXPECT_TRUE(wider.inter_node);
  EXPECT_DOUBLE_EQ(wider.bus_bandwidth, std::min(900e9 * 0.80, 64 * 50e9 * 0.85));
  EXPECT_FALSE(NeighborTier(nvl72, 4, 16).inter_node);  // 16 stages 4 apart: inside the domain
  EXPECT_TRUE(NeighborTier(trays, 4, 16).inter_node);
}

// ---- Pipeline ----

TEST(Pipeline, BubbleFraction) {
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(8, 1, 64), 7.0 / 64);
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(8, 4, 64), 7.0 / 256);
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(16, 1, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(16, 4, 16), 15.0 / 64);
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(1, 1, 64), 0.0);
  // Fewer micro-batches than stages: each round of chunks waits p - m chunk times for its
  // first micro-batch to come around, so one micro-batch gains nothing from interleaving.
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(2, 8, 1), PipelineBubbleFraction(2, 1, 1));
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(8, 2, 4), (7.0 / 2 + (1 - 1.0 / 2) * 4) / 4);
}

TEST(Pipeline, BubbleTermFollowsTheScheduleOnBalancedStages) {
  ModelSpec m = Llama2_7B();
  m.vocab = 0;  // no LM head: every stage does the same work but the first's embedding
  Layout l;
  l.framework = Framework::kMegatron;
  l.dp = 1;
  l.pp = 4;
  l.grad_accum = 32;
  const ClusterSpec c = DgxH100(1);
  for (int micro : {32, 2}) {
    for (int vpp : {1, 2}) {
      l.vpp = vpp;
      l.grad_accum = micro;
      const TimeEstimate t = EstimateTime(m, Pretrain(4096, micro), l, c);
      const double busy = Term(t, "compute") + Term(t, "recompute") + Term(t, "tp_comm");
      const double expected = PipelineBubbleFraction(4, vpp, micro);  // within the embedding's share
      EXPECT_NEAR(Term(t, "pp_bubble") / busy, expected, std::max(1e-3, 5e-3 * expected))
          << "vpp " << vpp << ", micro-batches " << micro;
    }
  }
}

// ---- Compute efficiency ----

TEST(Gemm, EfficiencyFactors) {
  const GpuSpec g = H100();
  // 8192^3 on 132 SMs: 32 x 64 tiles of 256 x 128 in 16 waves (2048 of 2112 slots busy),
  // ceiling 0.70, reduction depth 8192 / (8192 + 64).
  EXPECT_DOUBLE_EQ(GemmEfficiency(g, Dtype::kBf16, 8192, 8192, 8192), 0.70 * (2048.0 / 2112) * (8192.0 / 8256));
  // A TP-sliced N = 512 output with M = 2048 tokens: 8 x 4 = 32 tiles leave most SMs idle;
  // 128 x 64 tiles fill 128 of 132 SMs at 80% speed.
  EXPECT_DOUBLE_EQ(GemmEfficiency(g, Dtype::kBf16, 2048, 512, 4096), 0.70 * 0.80 * (128.0 / 132) * (4096.0 / 4160));
  EXPECT_GT(GemmEfficiency(g, Dtype::kBf16, 8192, 8192, 8192), GemmEfficiency(g, Dtype::kBf16, 2048, 512, 4096));
}

// torch._grouped_mm on an H100 in bf16 (bench/data/gemm/h100-grouped-mm.json): forward plus
// backward measured, against three times the forward priced. Qwen3-30B-A3B's 128 experts at
// 256 and at 64 rows each took 1.501 ms and 1.208 ms; priced on tiles alone they were 37% and
// 57% short. Eight experts of 4,096 rows run as fast as one dense GEMM of their rows.
TEST(Gemm, GroupedGemmSlowsWithFewRowsPerGroup) {
  const GpuSpec g = H100();
  EXPECT_NEAR(3 * GemmSeconds(g, Dtype::kBf16, 256, 1536, 2048, 128) / 1.501e-3, 1.0, 0.15);
  EXPECT_NEAR(3 * GemmSeconds(g, Dtype::kBf16, 64, 1536, 2048, 128) / 1.208e-3, 1.0, 0.15);
  EXPECT_DOUBLE_EQ(GemmEfficiency(g, Dtype::kBf16, 256, 1536, 2048, 128),
                   GemmEfficiency(g, Dtype::kBf16, 256 * 128, 1536, 2048) * 256 / (256 + 96.0));
  EXPECT_GT(GemmEfficiency(g, Dtype::kBf16, 4096, 28672, 4096, 8),
            0.97 * GemmEfficiency(g, Dtype::kBf16, 8 * 4096, 28672, 4096));
  EXPECT_DOUBLE_EQ(GemmEfficiency(g, Dtype::kBf16, 4096, 4096, 4096, 1),
                   GemmEfficiency(g, Dtype::kBf16, 4096, 4096, 4096));
}

// A card capped at 500 W of a 700 W TDP (torchtitan's benchmark H100s) clocks its tensor
// cores down to (500 - 70) / (700 - 70) = 0.683 of full speed; memory-bound work keeps its
// rate.
TEST(Gemm, PowerLimitSlowsTensorCoresOnly) {
  GpuSpec full = H100();
  full.tdp_watts = 700;
  GpuSpec capped = full;
  capped.power_limit_watts = 500;
  const double clock = 430.0 / 630.0;
  EXPECT_NEAR(clock, 0.683, 1e-3);
  EXPECT_DOUBLE_EQ(GemmEfficiency(capped, Dtype::kBf16, 8192, 8192, 8192),
                   GemmEfficiency(full, Dtype::kBf16, 8192, 8192, 8192) * clock);
  EXPECT_DOUBLE_EQ(GemmSeconds(capped, Dtype::kBf16, 1, 8192, 8192), GemmSeconds(full, Dtype::kBf16, 1, 8192, 8192));
  capped.power_limit_watts = 700;  // at the TDP: no change
  EXPECT_DOUBLE_EQ(GemmEfficiency(capped, Dtype::kBf16, 8192, 8192, 8192),
                   GemmEfficiency(full, Dtype::kBf16, 8192, 8192, 8192));
}

TEST(Gemm, DecodeIsMemoryBound) {
  // One token through a 8192 x 8192 weight: 2 * 8192^2 FLOPs against 128 MiB of weights.
  const double t = GemmSeconds(H100(), Dtype::kBf16, 1, 8192, 8192);
  EXPECT_DOUBLE_EQ(t, (8192.0 + 8192.0 * 8192 + 8192) * 2 / (3.35e12 * 0.80));
}

// ---- EstimateTime ----

Layout FsdpLayout(int dp) {
  Layout l;
  l.framework = Framework::kFsdp;
  l.dp = dp;
  l.zero = 3;
  l.mbs = 2;
  l.grad_accum = 1;
  return l;
}

// DSA's step: attention over index_topk keys plus the indexer's FP8 scoring of every earlier
// key. Here the indexer's 64 x 128 scores are as wide as this model's 32 x (128 + 128)
// attention, at twice the rate, so at 128k tokens (attention most of the step) DSA runs
// between 1.5x and 2x as fast; at 4k, where top-2048 is most of the keys, the two are close.
TEST(StepTime, SparseAttentionPaysOffAtLongContext) {
  ModelSpec dense = Llama2_7B(), dsa = Llama2_7B();
  dsa.index_heads = 64;
  dsa.index_head_dim = 128;
  dsa.index_topk = 2048;
  auto tps = [](const ModelSpec& m, int64_t seq) {
    return EstimateTime(m, Pretrain(seq, 8), FsdpLayout(8), DgxH100(1)).tokens_per_second_per_gpu;
  };
  const double long_gain = tps(dsa, 131072) / tps(dense, 131072);
  EXPECT_GT(long_gain, 1.5);
  EXPECT_LT(long_gain, 2);
  EXPECT_NEAR(tps(dsa, 4096) / tps(dense, 4096), 1, 0.1);
}

// A hybrid's blocks each run their own mixer: with no attention block there is no ring
// attention, so under CP its only context traffic is the Mamba blocks' all-to-all to head
// shards and back (Megatron's mamba_context_parallel.py); a Mamba block is cheaper than the
// attention + MLP layer of the same width at long context; and only the pattern's letters
// matter, not their order, on one stage.
TEST(StepTime, HybridBlocksRunTheirOwnMixers) {
  auto doc = Document::Parse("h.json", R"({"model_type":"nemotron_h","hidden_size":4096,"intermediate_size":16384,
    "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"mamba_num_heads":128,"mamba_head_dim":64,
    "ssm_state_size":128,"n_groups":8,"vocab_size":131072,"hybrid_override_pattern":"M-M-M-M-"})");
  ASSERT_TRUE(doc.ok());
  auto m = ParseModel(*doc, "mamba-mlp");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Layout cp = FsdpLayout(4);
  cp.cp = 2;
  const TimeOptions terms;
  auto term = [](const TimeEstimate& t, const std::string& name) {
    for (const TimeTerm& x : t.terms)
      if (x.name == name) return x.raw_seconds;
    return -1.0;
  };
  EXPECT_GT(term(EstimateTime(*m, Pretrain(32768, 8), cp, DgxH100(1), terms), "cp_comm"), 0);
  EXPECT_EQ(term(EstimateTime(*m, Pretrain(32768, 8), FsdpLayout(8), DgxH100(1), terms), "cp_comm"), 0);
  ModelSpec reordered = *m;
  reordered.hybrid = "MMMM----";
  EXPECT_DOUBLE_EQ(EstimateTime(reordered, Pretrain(4096, 8), FsdpLayout(8), DgxH100(1)).step_seconds,
                   EstimateTime(*m, Pretrain(4096, 8), FsdpLayout(8), DgxH100(1)).step_seconds);
  ModelSpec attention = *m;
  attention.hybrid = "*-*-*-*-";
  attention.linear = {};
  EXPECT_LT(EstimateTime(*m, Pretrain(32768, 8), FsdpLayout(8), DgxH100(1)).step_seconds,
            EstimateTime(attention, Pretrain(32768, 8), FsdpLayout(8), DgxH100(1)).step_seconds);
}

// Falcon-H1 runs attention and Mamba-2 side by side: a parallel layer costs what its
// attention layer and its Mamba layer cost less the one MLP they would share, give or take the
// elementwise work of the second residual branch.
TEST(StepTime, ParallelHybridRunsBothMixers) {
  auto doc = Document::Parse("f.json", R"({"model_type":"falcon_h1","hidden_size":3072,"intermediate_size":12288,
    "num_hidden_layers":8,"num_attention_heads":12,"num_key_value_heads":2,"head_dim":128,"vocab_size":130049,
    "mamba_d_ssm":3072,"mamba_d_state":256,"mamba_d_head":128,"mamba_n_heads":24,"mamba_n_groups":1})");
  ASSERT_TRUE(doc.ok());
  auto m = ParseModel(*doc, "falcon-h1");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ModelSpec attention = *m, mamba = *m, mlp = *m;
  attention.hybrid = std::string(8, 'A');
  mamba.hybrid = std::string(8, 'G');
  mlp.hybrid = std::string(8, '-');
  auto step = [](const ModelSpec& x) { return EstimateTime(x, Pretrain(8192, 8), FsdpLayout(8), DgxH100(1)).step_seconds; };
  EXPECT_GT(step(*m), step(attention));
  EXPECT_GT(step(*m), step(mamba));
  EXPECT_NEAR(step(*m), step(attention) + step(mamba) - step(mlp), 0.03 * step(*m));
}

// NVFP4 training runs its linear GEMMs at Blackwell's FP4 rate (B200: 9 PF dense, twice FP8),
// at FP8's share of the peak, and pays a costlier cast (an amax pass, then both orientations
// written); the rest of the step does not speed up. Megatron-Bridge 26.04.01 measures Llama 3
// 70B at 1.31x MXFP8 on GB200 and 1.50x on GB300. Layouts that cannot run it are refused.
TEST(Precision, Nvfp4OnBlackwell) {
  StatusOr<GpuSpec> b200 = CatalogGpu("b200-180gb");
  ASSERT_TRUE(b200.ok());
  EXPECT_DOUBLE_EQ(b200->fp4_flops, 9000e12);
  EXPECT_DOUBLE_EQ(HardwareFor(*b200, Dtype::kFp4).peak, 9000e12);
  EXPECT_DOUBLE_EQ(HardwareFor(*b200, Dtype::kFp4).ceiling, HardwareFor(*b200, Dtype::kFp8).ceiling);
  ClusterSpec c = DgxH100(8);
  c.gpu = *b200;
  Layout l;
  l.framework = Framework::kMegatron;
  l.dp = 8, l.tp = 2, l.pp = 4, l.vpp = 5, l.mbs = 1, l.grad_accum = 32, l.zero = 1;
  Workload fp8 = Pretrain(8192, 256), fp4 = fp8;
  fp8.precision = Dtype::kFp8;
  fp4.precision = Dtype::kFp4;
  const double speedup = EstimateTime(Llama3_70B(), fp4, l, c).tokens_per_second_per_gpu /
                         EstimateTime(Llama3_70B(), fp8, l, c).tokens_per_second_per_gpu;
  EXPECT_GT(speedup, 1.15);
  EXPECT_LT(speedup, 1.8);
  Layout fsdp;
  fsdp.framework = Framework::kFsdp;
  fsdp.fixed = kKeyFramework;
  auto refused = ResolveLayout(Llama3_70B(), fp4, c, fsdp);
  EXPECT_NE(refused.status().message().find("precision nvfp4 is Transformer Engine's NVFP4 recipe"), std::string::npos)
      << refused.status().message();
  Layout megatron;
  megatron.framework = Framework::kMegatron;
  megatron.fixed = kKeyFramework;
  EXPECT_TRUE(ResolveLayout(Llama3_70B(), fp4, c, megatron).ok());
  auto h100 = ResolveLayout(Llama3_70B(), fp4, DgxH100(8), megatron);
  EXPECT_NE(h100.status().message().find("precision nvfp4 needs FP4 tensor cores"), std::string::npos) << h100.status().message();
}

// MPT-7B as llm-foundry's benchmark yamls build it (d_model 4096, 32 heads, 32 layers,
// expansion_ratio 4, vocab 50368), through the model reader's MPT family traits.
ModelSpec Mpt7B() {
  auto doc = Document::Parse("mpt-7b.json", R"({"model_type":"mpt","d_model":4096,"n_heads":32,"n_layers":32,"vocab_size":50368})");
  EXPECT_TRUE(doc.ok());
  return *ParseModel(*doc, "mpt-7b");
}

// An A100's compute: the 16-bit peak and the architecture the attention kernels depend on.
GpuSpec A100() {
  GpuSpec g = H100();
  g.bf16_flops = g.fp16_flops = 312e12;
  g.compute_capability = 80;
  return g;
}

// llm-foundry's Triton FlashAttention (attn_impl: triton) runs 1.4x below FlashAttention-2 on
// A100; on Hopper it gains only SMs x clock over A100: 0.357 x 312 TFLOP/s x 1.72 / 989.
TEST(Hardware, TritonAttentionRates) {
  EXPECT_DOUBLE_EQ(HardwareFor(A100(), Dtype::kBf16, AttentionImpl::kTriton).attention,
                   HardwareFor(A100(), Dtype::kBf16).attention / 1.4);
  EXPECT_NEAR(HardwareFor(H100(), Dtype::kBf16, AttentionImpl::kTriton).attention, 0.194, 0.001);
  EXPECT_DOUBLE_EQ(HardwareFor(H100(), Dtype::kBf16, AttentionImpl::kFlash).attention,
                   HardwareFor(H100(), Dtype::kBf16).attention);
}

// Transformer Engine's attention notebook (docs/examples/attention/attention.ipynb, H100 80GB
// HBM3) times Llama-3-8B's attention core, batch 2 x 8,192 tokens, causal, forward + backward:
// 11.8879 ms with flash-attn 2.4.2 and 7.4875 ms with cuDNN. The model's FlashAttention-2 and
// cuDNN rates give both within 3%.
TEST(Hardware, AttentionKernelsMatchTransformerEngineTimings) {
  ModelSpec m = Llama2_7B();
  m.kv_heads = 8;
  for (const auto& [impl, ms] : {std::pair{AttentionImpl::kUnstated, 11.8879}, std::pair{AttentionImpl::kCudnn, 7.4875}}) {
    const LayerShape x{m, HardwareFor(H100(), Dtype::kBf16, impl), 1, 1, 1, 1, 8192, 2 * 8192.0};
    const Forward f = LayerForward(x, 0);
    EXPECT_NEAR((f.attn + f.attn_bwd) * 1e3, ms, 0.03 * ms);
  }
  // A100: TE prefers flash-attn there, and the cuDNN rate is FlashAttention-2's.
  EXPECT_DOUBLE_EQ(HardwareFor(A100(), Dtype::kBf16, AttentionImpl::kCudnn).attention,
                   HardwareFor(A100(), Dtype::kBf16).attention);
}

// torchao's rowwise float8 casts each activation twice (row- and column-scaled, through a
// transposed bf16 copy: 6 B per element to tensorwise's 4 in torchao's own roofline, the 5 B
// of the column-scaled copy at half the bandwidth under torch.compile: 11 B) and
// rescales every backward GEMM output (slow-accumulation GEMMs run as cuBLAS tensorwise at
// unit scales, then output *= scales): 4 B per element of each input and weight gradient.
// One Llama 3.1 8B layer: wq, wk, wv, w1 and w3 each take the 4,096-wide hidden state, wo
// 4,096 and w2 14,336 wide: 38,912 input-gradient elements per token; 218,103,808 weights.
// torchao's float8 README (Llama3-8b, 8 H100s, FSDP2, batch 1 x 8,192, compile, per-op SAC)
// measured rowwise at 6,768 tokens/s against tensorwise's 7,689.5: 0.880.
TEST(EstimateTime, TorchaoRowwiseFloat8CastsTwiceAndRescalesBackward) {
  const ModelSpec m = Llama31_8B();
  const Hw hw = HardwareFor(H100(), Dtype::kFp8);
  LayerShape tensorwise{m, hw, 1, 1, 1, 1, 8192, 8192};
  tensorwise.fp8 = true;
  tensorwise.fused = true;
  LayerShape rowwise = tensorwise;
  rowwise.rowwise = true;
  const Forward t = LayerForward(tensorwise, 0), r = LayerForward(rowwise, 0);
  EXPECT_EQ(t.elem_bwd, 0);
  EXPECT_NEAR(r.elem_bwd, MemSeconds(hw, 4 * (8192.0 * 38912 + 218103808.0)), 1e-12);
  const double casts = 8192.0 * 3 * (2 * 4096 + 6144 + 14336);  // kFp8CastBytes on each GEMM input
  EXPECT_NEAR(r.elem - t.elem, MemSeconds(hw, (11.0 / 4 - 1) * casts), 1e-12);

  Layout l = FsdpLayout(8);
  l.framework = Framework::kTorchtitan;
  l.ac = Recompute::kSelective;
  l.mbs = 1;
  l.grad_accum = 1;
  Workload w = Pretrain(8192, 8);
  w.precision = Dtype::kFp8;
  w.compile = Setting::kOn;
  w.fp8_recipe = Fp8Recipe::kTensorwise;
  const double tensorwise_tps = EstimateTime(m, w, l, DgxH100(1)).tokens_per_second_per_gpu;
  w.fp8_recipe = Fp8Recipe::kRowwise;
  const double rowwise_tps = EstimateTime(m, w, l, DgxH100(1)).tokens_per_second_per_gpu;
  EXPECT_NEAR(rowwise_tps / tensorwise_tps, 6768 / 7689.5, 0.02);
}

// Megatron's --first-last-layers-bf16 prices the kept layers from a BF16 table: an fp8 run
// that keeps every layer in BF16 prices as the BF16 run, and one that keeps some lands between.
TEST(EstimateTime, Bf16LayersRunAtBf16Rates) {
  const ModelSpec m = Llama3_70B();
  Layout l;
  l.framework = Framework::kMegatron;
  l.tp = 8;
  l.pp = 2;
  l.sp = true;
  l.zero = 1;
  l.grad_accum = 8;
  Workload bf16 = Pretrain(4096, 8);
  Workload fp8 = bf16;
  fp8.precision = Dtype::kFp8;
  const ClusterSpec c = DgxH100(2);
  const double t_bf16 = Term(EstimateTime(m, bf16, l, c), "compute");
  const double t_fp8 = Term(EstimateTime(m, fp8, l, c), "compute");
  Workload all = fp8;
  all.bf16_layers_start = 80;
  all.bf16_layers_end = 0;
  EXPECT_NEAR(Term(EstimateTime(m, all, l, c), "compute"), t_bf16, 1e-9 * t_bf16);
  Workload tail = fp8;
  tail.bf16_layers_start = 0;
  tail.bf16_layers_end = 4;  // all on the last stage, which is then the slowest
  const double t_tail = Term(EstimateTime(m, tail, l, c), "compute");
  ASSERT_LT(t_fp8, t_bf16);
  EXPECT_NEAR(t_tail, t_fp8 + 4 * (t_bf16 - t_fp8) / 40, 1e-9 * t_tail);
}

// PyTorch's ring attention (context_parallel, torchtitan's context parallelism) merges each
// step's partial output in fp32 eager ops, splices half-query steps back with torch.cat, and
// accumulates the Q/K/V gradients in fp32; Transformer Engine's p2p ring merges in 16 bits.
// One rank of Llama 3.1 8B at 262,144 tokens over CP 8 (torchtitan's 2024-12 Table 2 run):
// 32,768 local tokens, 32 x 128 query and output elements and 2 x 8 x 128 K/V per token.
TEST(EstimateTime, TorchRingAttentionMergesInFp32) {
  ModelSpec m = Llama2_7B();
  m.kv_heads = 8;
  const Hw hw = HardwareFor(H100(), Dtype::kBf16);
  const LayerShape te{m, hw, 1, 8, 1, 1, 262144, 32768};
  LayerShape torch = te;
  torch.torch_ring = true;
  const Forward a = LayerForward(te, 0), b = LayerForward(torch, 0);
  const double q = 32768.0 * 32 * 128, kv = 32768.0 * 2 * 8 * 128, te_step = 0.75 * 6 * 8 * 32768.0;
  EXPECT_NEAR(b.attn - a.attn, MemSeconds(hw, q * (7 * 32.5 + 12) + kv * 8 * 4) - MemSeconds(hw, te_step * 32 * 128), 1e-9);
  EXPECT_NEAR(b.attn_bwd - a.attn_bwd,
              MemSeconds(hw, q * (8 * 11.5 + 6) + kv * (8 * 23.5 + 6)) - MemSeconds(hw, te_step * (32 * 128 + 2 * 8 * 128)),
              1e-9);
}

// NeMo AutoModel builds RMSNorm and RoPE from Transformer Engine's fused kernels and leaves
// the MLP's activation and the loss eager: its layer moves the fused kernels' bytes over the
// hidden state and the projections, and eager code's over the MLP's inner width (5 passes
// where fused code makes 3). One Llama 3.1 8B layer of 8,192 tokens: 2 x 14,336 bf16
// elements a token more than fused code, and less than eager code.
TEST(EstimateTime, AutomodelFusesNormsAndRope) {
  const ModelSpec m = Llama31_8B();
  const Hw hw = HardwareFor(H100(), Dtype::kBf16);
  LayerShape eager{m, hw, 1, 1, 1, 1, 8192, 8192};
  LayerShape te = eager, fused = eager;
  te.te_norms = true;
  fused.fused = true;
  const Forward e = LayerForward(eager, 0), t = LayerForward(te, 0), f = LayerForward(fused, 0);
  EXPECT_NEAR(t.elem - f.elem, MemSeconds(hw, 8192.0 * 2 * 14336 * 2), 1e-12);
  EXPECT_LT(t.elem, e.elem);
  EXPECT_DOUBLE_EQ(HeadSeconds(te), HeadSeconds(eager) - MemSeconds(hw, 3 * 8192.0 * 4096 * 2 * (30 - 6)));
}

// Megatron-core runs TE's cuDNN attention on Hopper unless a context-parallel ring carries it;
// other stacks, and a kernel the config names, keep theirs.
TEST(EstimateTime, AttentionKernelByStack) {
  const ModelSpec llama = Llama3_70B();
  Layout megatron;
  megatron.framework = Framework::kMegatron;
  EXPECT_EQ(TrainingAttention(llama, megatron, H100()), AttentionImpl::kCudnn);
  Layout ring = megatron;
  ring.cp = 2;
  EXPECT_EQ(TrainingAttention(llama, ring, H100()), AttentionImpl::kUnstated);
  EXPECT_EQ(TrainingAttention(llama, megatron, A100()), AttentionImpl::kUnstated);
  EXPECT_EQ(TrainingAttention(llama, FsdpLayout(8), H100()), AttentionImpl::kUnstated);
  ModelSpec mpt = Mpt7B();
  mpt.attention_impl = AttentionImpl::kTriton;
  EXPECT_EQ(TrainingAttention(mpt, megatron, H100()), AttentionImpl::kTriton);
  // NeMo AutoModel's model code attends through TE's DotProductAttention (its BackendConfig).
  Layout automodel = FsdpLayout(8);
  automodel.framework = Framework::kTorchtitan;
  automodel.stack = Stack::kAutomodel;
  EXPECT_EQ(TrainingAttention(llama, automodel, H100()), AttentionImpl::kCudnn);
  automodel.cp = 2;
  EXPECT_EQ(TrainingAttention(llama, automodel, H100()), AttentionImpl::kUnstated);
  // The kernel moves the step: the same Megatron layout runs slower at flash-attn's rate.
  Layout l = megatron;
  l.dp = 2;
  l.tp = 4;
  l.sp = true;
  l.zero = 1;
  l.grad_accum = 8;
  const Workload w = Pretrain(8192, 16);
  ModelSpec flash = llama;
  flash.attention_impl = AttentionImpl::kFlash;
  const TimeEstimate cudnn = EstimateTime(llama, w, l, DgxH100(1)), fa2 = EstimateTime(flash, w, l, DgxH100(1));
  EXPECT_LT(cudnn.step_seconds, 0.97 * fa2.step_seconds);
}

// llm-foundry's H100 table (scripts/train/benchmarking/README.md, "H100 80GB BF16"): MPT-7B at
// 65,536 tokens on 8 GPUs, FSDP FULL_SHARD, micro-batch 1, activation checkpointing, ran at
// 1,956 tokens/s per GPU with the sweep's attn_impl "triton". Attention is most of that step:
// the Triton kernel's rate lands near it, FlashAttention-2's would be a third faster.
TEST(EstimateTime, MptAttentionKernelAtLongSequence) {
  Layout l = FsdpLayout(8);
  l.stack = Stack::kLlmFoundry;
  l.mbs = 1;
  l.grad_accum = 2;
  l.ac = Recompute::kFull;
  const Workload w = Pretrain(65536, 16);
  ModelSpec m = Mpt7B();
  m.attention_impl = AttentionImpl::kTriton;
  const double triton = EstimateTime(m, w, l, DgxH100(1)).tokens_per_second_per_gpu;
  m.attention_impl = AttentionImpl::kFlash;
  const double flash = EstimateTime(m, w, l, DgxH100(1)).tokens_per_second_per_gpu;
  EXPECT_NEAR(triton, 1956, 0.08 * 1956);
  EXPECT_GT(flash, 1.3 * 1956);
  m.attention_impl = AttentionImpl::kEager;  // "torch": the scores are materialized
  EXPECT_LT(EstimateTime(m, w, l, DgxH100(1)).tokens_per_second_per_gpu, triton);
}

// Muon's Newton-Schulz step: 5 iterations of 4a^2 b + 2a^3 FLOPs on each a x b matrix
// (a <= b). Llama 3.1 8B: q and o 4096 x 4096, k and v 4096 x 1024, three 4096 x 14336 MLP
// matrices per layer average 95,409 FLOPs per parameter; the optimizer term carries them.
TEST(EstimateTime, MuonNewtonSchulzStep) {
  const ModelSpec m = Llama31_8B();
  EXPECT_NEAR(MuonFlopsPerParam(m), 95409.23, 0.01);
  Layout l;
  l.framework = Framework::kMegatron;
  l.dp = 8;
  l.zero = 1;
  l.ac = Recompute::kFull;
  const ClusterSpec c = DgxH100(1);
  Workload w = Pretrain(4096, 8);
  const double adamw = Term(EstimateTime(m, w, l, c), "optimizer");
  w.optimizer = Optimizer::kMuon;
  const double muon = Term(EstimateTime(m, w, l, c), "optimizer");
  // 1/8 of 6.98e9 matrix parameters x 95,409 FLOPs at most 989 TFLOP/s: over 84 ms more.
  EXPECT_GT(muon - adamw, 6979321856.0 / 8 * 95409.23 / 989.4e12);
  EXPECT_LT(muon - adamw, 0.5);
}

// torch's foreach AdamW runs one kernel per operation over every parameter: 20 passes of 4 B
// (params, grads, m, v and the sqrt it allocates) where the fused kernel reads and writes
// each once (7), 52 B more a parameter in fp32. On one H100 (bench/data/calibration/
// l1b-hf-amp-s2k-b4-full: 1.24 B fp32 params, AMP) the step between backward's end and the
// next step's start took 39.2 ms: foreach at the priced bandwidth is 37.8 ms, fused 13.8 ms.
TEST(EstimateTime, ForeachAdamWStepsByPasses) {
  const auto m = LoadModel(SHARDPLAN_SOURCE_DIR "/bench/data/calibration/l1b-hf-amp-s2k-b4-full/config.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Layout l;
  l.framework = Framework::kFsdp;
  l.zero = 0;
  l.ac = Recompute::kFull;
  l.mbs = 4;
  ClusterSpec c = DgxH100(1);
  c.gpus_per_node = 1;
  Workload w = Pretrain(2048, 4);
  w.optimizer_step = OptimizerStep::kForeach;
  const double foreach = Term(EstimateTime(*m, w, l, c), "optimizer");
  w.optimizer_step = OptimizerStep::kPerTensor;
  const double fused = Term(EstimateTime(*m, w, l, c), "optimizer");
  EXPECT_NEAR(foreach / fused, 82.0 / 30.0, 1e-9);
  EXPECT_NEAR(foreach, 0.0392, 0.10 * 0.0392);
  // DeepSpeed and Megatron step fused kernels whatever the workload says of torch's.
  w.optimizer_step = OptimizerStep::kForeach;
  l.framework = Framework::kMegatron;
  const double megatron_foreach = Term(EstimateTime(*m, w, l, c), "optimizer");
  w.optimizer_step = OptimizerStep::kPerTensor;
  EXPECT_EQ(megatron_foreach, Term(EstimateTime(*m, w, l, c), "optimizer"));
}

TEST(EstimateTime, TermsAddUpAndRatesFollowFromTheStep) {
  const ModelSpec m = Llama3_70B();
  Layout l;
  l.framework = Framework::kMegatron;
  l.dp = 2;
  l.tp = 8;
  l.pp = 4;
  l.vpp = 5;
  l.sp = true;
  l.zero = 1;
  l.ac = Recompute::kSelective;
  l.grad_accum = 64;
  const ClusterSpec c = DgxH100(8);
  const Workload w = Pretrain(8192, 128);
  const TimeEstimate t = EstimateTime(m, w, l, c);
  ASSERT_GT(t.step_seconds, 0);
  EXPECT_NEAR(TermSum(t), t.step_seconds, t.step_seconds * 1e-12);
  const double tokens = 2.0 * 64 * 8192;
  EXPECT_NEAR(t.tokens_per_second_per_gpu, tokens / (t.step_seconds * 64), 1e-9);
  EXPECT_NEAR(t.model_flops_per_step, TrainingFlopsPerToken(m, 8192) * tokens, 1);
  EXPECT_NEAR(t.mfu, t.model_flops_per_step / (t.step_seconds * 64 * 989.4e12), 1e-12);
  EXPECT_GT(t.mfu, 0.2);
  EXPECT_LT(t.mfu, 0.7);
  for (const TimeTerm& term : t.terms) EXPECT_GE(term.raw_seconds, term.seconds * (1 - 1e-12)) << term.name;
}

// A run that trains in fp32 (PyTorch's default matmul precision: no TF32, the CUDA cores'
// 1/16 of BF16) runs every GEMM, attention and the LM head included, at that rate: its MFU
// against the fp32 peak stays below 1, and the step is many times the bf16 one.
TEST(EstimateTime, Fp32TrainingRunsAtTheFp32Peak) {
  Workload w = Pretrain(2048, 16);
  const TimeEstimate bf16 = EstimateTime(Llama2_7B(), w, FsdpLayout(8), DgxH100(1));
  w.precision = Dtype::kFp32;
  const TimeEstimate fp32 = EstimateTime(Llama2_7B(), w, FsdpLayout(8), DgxH100(1));
  EXPECT_GT(fp32.mfu, 0.2);
  EXPECT_LT(fp32.mfu, 1.0);
  EXPECT_GT(fp32.step_seconds, 8 * bf16.step_seconds);
}

// Zero-bubble schedules change only the bubble: ZB-H1 keeps (F+B-W)/(F+B+W) of 1F1B's, at
// least a third (W is at most a third of a stage's work); ZB-V on two chunks keeps less than
// interleaved 1F1B on two chunks, and never a negative bubble.
TEST(Pipeline, ZeroBubbleSchedulesShrinkOnlyTheBubble) {
  Layout l;
  l.framework = Framework::kTorchtitan;
  l.dp = 2;
  l.tp = 4;
  l.pp = 4;
  l.sp = true;
  l.zero = 3;
  l.grad_accum = 8;
  // Stated stages: torchtitan's own split gives a V's ranks other layers than a loop's.
  l.stages = {20, 20, 20, 20};
  auto bubble = [&](const Layout& lay) {  // (the bubble, everything else in the step)
    const TimeEstimate t = EstimateTime(Llama3_70B(), Pretrain(4096, 16), lay, DgxH100(4));
    return std::make_pair(Term(t, "pp_bubble"), t.step_seconds - Term(t, "pp_bubble"));
  };
  const auto one = bubble(l);
  Layout zb = l;
  zb.pp_schedule = PpSchedule::kZeroBubble;
  const auto h1 = bubble(zb);
  ASSERT_GT(one.first, 0);
  EXPECT_LT(h1.first, one.first);
  EXPECT_GE(h1.first, one.first / 3 - 1e-9);
  EXPECT_NEAR(h1.second, one.second, 1e-9);  // everything but the bubble is unchanged
  Layout inter = l;
  inter.vpp = 2;
  Layout v = inter;
  v.pp_schedule = PpSchedule::kZbv;
  const auto two = bubble(inter), zbv = bubble(v);
  EXPECT_LT(zbv.first, two.first);
  EXPECT_GE(zbv.first, 0);
  EXPECT_NEAR(zbv.second, two.second, 1e-9);
}

TEST(EstimateTime, WithoutTermsGivesTheSameStep) {
  TimeOptions opt;
  opt.with_terms = false;
  const TimeEstimate a = EstimateTime(Llama2_7B(), Pretrain(4096, 16), FsdpLayout(8), DgxH100(1));
  const TimeEstimate b = EstimateTime(Llama2_7B(), Pretrain(4096, 16), FsdpLayout(8), DgxH100(1), opt);
  EXPECT_TRUE(b.terms.empty());
  EXPECT_DOUBLE_EQ(a.step_seconds, b.step_seconds);
}

TEST(EstimateTime, FullRecomputeAddsAForward) {
  Layout l = FsdpLayout(8);
  const TimeEstimate none = EstimateTime(Llama2_7B(), Pretrain(4096, 16), l, DgxH100(1));
  l.ac = Recompute::kFull;
  const TimeEstimate full = EstimateTime(Llama2_7B(), Pretrain(4096, 16), l, DgxH100(1));
  EXPECT_DOUBLE_EQ(Term(none, "recompute"), 0.0);
  // A forward is about a third of forward + backward.
  EXPECT_NEAR(Term(full, "recompute") / Term(full, "compute"), 1.0 / 3, 0.05);
  EXPECT_DOUBLE_EQ(Term(full, "compute"), Term(none, "compute"));
  l.ac = Recompute::kSelective;  // attention core only
  const TimeEstimate sel = EstimateTime(Llama2_7B(), Pretrain(4096, 16), l, DgxH100(1));
  EXPECT_GT(Term(sel, "recompute"), 0.0);
  EXPECT_LT(Term(sel, "recompute"), Term(full, "recompute") / 2);
}

TEST(EstimateTime, TensorParallelAcrossNodesIsSlower) {
  Layout l;
  l.framework = Framework::kMegatron;
  l.dp = 2;
  l.tp = 8;
  l.grad_accum = 8;
  const ClusterSpec inside = DgxH100(2);
  ClusterSpec split = DgxH100(4);
  split.gpus_per_node = 4;  // the same 16 GPUs, one NIC each: TP=8 now spans two nodes
  split.inter_node.nics_per_node = 4;
  const TimeEstimate a = EstimateTime(Llama3_70B(), Pretrain(4096, 16), l, inside);
  const TimeEstimate b = EstimateTime(Llama3_70B(), Pretrain(4096, 16), l, split);
  EXPECT_GT(Term(b, "tp_comm"), 1.8 * Term(a, "tp_comm"));
}

TEST(EstimateTime, ContextParallelChunksCostMoreThanDataParallel) {
  // Eight 8192-token sequences on 8 GPUs, one each (DP) or each split over CP=8 (1024 tokens
  // per rank): the same FLOPs per GPU, but ring attention runs short key ranges, merges a
  // partial result every step, and exchanges K/V.
  Layout dp;
  dp.framework = Framework::kMegatron;
  dp.dp = 8;
  dp.grad_accum = 1;
  Layout cp = dp;
  cp.dp = 1;
  cp.cp = 8;
  cp.grad_accum = 8;
  const TimeEstimate a = EstimateTime(Llama2_7B(), Pretrain(8192, 8), dp, DgxH100(1));
  const TimeEstimate b = EstimateTime(Llama2_7B(), Pretrain(8192, 8), cp, DgxH100(1));
  EXPECT_GT(Term(b, "compute"), 1.05 * Term(a, "compute"));
  EXPECT_GT(RawTerm(b, "cp_comm"), 0);
  EXPECT_LT(b.tokens_per_second_per_gpu, a.tokens_per_second_per_gpu);
}

// torchtitan's per-op selective checkpointing keeps reduce-scatter outputs, not all-gather
// ones: backward gathers each sub-block's input again, one all-gather (half an all-reduce's
// ring cost) per sub-block on top of forward and backward's two all-reduce equivalents. The
// whole-layer policies gather nothing extra beyond their recomputed forward.
TEST(EstimateTime, TorchtitanSelectiveCheckpointGathersAgain) {
  Layout l;
  l.framework = Framework::kTorchtitan;
  l.tp = 8;
  l.sp = true;
  l.grad_accum = 8;
  // Pure bf16: with fp32 master weights and no FSDP torchtitan would run TP in fp32.
  Workload w = Pretrain(4096, 8);
  w.master_weights = MasterWeights::kNone;
  const TimeEstimate none = EstimateTime(Llama3_70B(), w, l, DgxH100(1));
  l.ac = Recompute::kSelective;
  const TimeEstimate sel = EstimateTime(Llama3_70B(), w, l, DgxH100(1));
  l.ac = Recompute::kFull;
  const TimeEstimate full = EstimateTime(Llama3_70B(), w, l, DgxH100(1));
  ASSERT_GT(RawTerm(none, "tp_comm"), 0);
  EXPECT_NEAR(RawTerm(sel, "tp_comm"), 1.25 * RawTerm(none, "tp_comm"), 1e-9);
  EXPECT_NEAR(RawTerm(full, "tp_comm"), 1.5 * RawTerm(none, "tp_comm"), 1e-9);
  l.ac = Recompute::kSelective;
  l.framework = Framework::kMegatron;  // attention core recomputed: no collective inside it
  const TimeEstimate megatron = EstimateTime(Llama3_70B(), w, l, DgxH100(1));
  EXPECT_NEAR(RawTerm(megatron, "tp_comm"), RawTerm(none, "tp_comm"), 1e-9);
}

// torchao's float8 tensor parallelism, which torchtitan runs with tensorwise float8 linears,
// all-gathers each sub-block's input (and, backward, the row-parallel output's gradient) in
// float8 and reduce-scatters in bf16; rowwise float8 runs torchtitan's plain TP, all in bf16.
TEST(EstimateTime, TorchtitanTensorwiseFloat8GathersInFloat8) {
  Layout l;
  l.framework = Framework::kTorchtitan;
  l.tp = 8;
  l.sp = true;
  Workload w = Pretrain(4096, 8);
  w.precision = Dtype::kFp8;
  w.master_weights = MasterWeights::kNone;
  const ClusterSpec c = DgxH100(1);
  const TimeEstimate tensorwise = EstimateTime(Llama3_70B(), w, l, c);
  w.fp8_recipe = Fp8Recipe::kRowwise;
  const TimeEstimate rowwise = EstimateTime(Llama3_70B(), w, l, c);
  const double bytes = 4096.0 * 8192 * 2;  // one micro-batch's hidden states in bf16
  const Tier nvlink = GroupTier(c, SpanOf(l, GroupKind::kTp));
  const double rs = CollectiveSeconds(Collective::kReduceScatter, bytes, 8, nvlink);
  const double ag8 = CollectiveSeconds(Collective::kAllGather, bytes / 2, 8, nvlink);
  const double ar = CollectiveSeconds(Collective::kAllReduce, bytes, 8, nvlink);
  ASSERT_GT(RawTerm(rowwise, "tp_comm"), 0);
  EXPECT_NEAR(RawTerm(tensorwise, "tp_comm") / RawTerm(rowwise, "tp_comm"), (rs + ag8) / ar, 1e-9);
  EXPECT_LT(RawTerm(tensorwise, "tp_comm"), 0.8 * RawTerm(rowwise, "tp_comm"));
}

TEST(EstimateTime, TpOverlapHidesPartOfTheTraffic) {
  Layout l;
  l.framework = Framework::kMegatron;
  l.tp = 8;
  l.grad_accum = 8;
  TimeOptions on;
  on.tp_overlap = Switch::kOn;
  const TimeEstimate a = EstimateTime(Llama3_70B(), Pretrain(4096, 8), l, DgxH100(1));
  const TimeEstimate b = EstimateTime(Llama3_70B(), Pretrain(4096, 8), l, DgxH100(1), on);
  ASSERT_GT(Term(a, "tp_comm"), 0);
  EXPECT_NEAR(Term(b, "tp_comm"), 0.3 * Term(a, "tp_comm"), 1e-12);
}

// The layout's tp_overlap (async TP, TE userbuffers) and the workload's compile reach the
// time model without options: what a user states, or a recipe turns on, is what is priced.
TEST(EstimateTime, LayoutAndRecipeSwitches) {
  Layout l;
  l.framework = Framework::kMegatron;
  l.tp = 8;
  l.grad_accum = 8;
  const TimeEstimate off = EstimateTime(Llama3_70B(), Pretrain(4096, 8), l, DgxH100(1));
  l.tp_overlap = true;
  const TimeEstimate on = EstimateTime(Llama3_70B(), Pretrain(4096, 8), l, DgxH100(1));
  EXPECT_NEAR(Term(on, "tp_comm"), 0.3 * Term(off, "tp_comm"), 1e-12);
  Layout f;
  f.framework = Framework::kFsdp;
  f.dp = 8;
  Workload w = Pretrain(4096, 8);
  const TimeEstimate eager = EstimateTime(Llama2_7B(), w, f, DgxH100(1));
  w.compile = Setting::kOn;
  const TimeEstimate compiled = EstimateTime(Llama2_7B(), w, f, DgxH100(1));
  EXPECT_LT(compiled.step_seconds, eager.step_seconds);
}

// torchtitan's 2D layout over four DGX H100s: FSDP 4 x TP 8 with sequence parallelism.
Layout TorchtitanFsdp4Tp8() {
  Layout l;
  l.framework = Framework::kTorchtitan;
  l.dp = 4;
  l.tp = 8;
  l.sp = true;
  l.zero = 3;
  return l;
}

// torchtitan's async TP hides less of the TP traffic than TE's userbuffers overlap: its own
// A/B runs (Llama 3.1 8B and 70B, FSDP x TP 8, with and without it) saved 21-56% of it.
TEST(EstimateTime, TorchtitanAsyncTpLeavesMoreExposed) {
  Layout l = TorchtitanFsdp4Tp8();
  const Workload w = Pretrain(8192, 16);
  const TimeEstimate off = EstimateTime(Llama3_70B(), w, l, DgxH100(4));
  l.tp_overlap = true;
  const TimeEstimate on = EstimateTime(Llama3_70B(), w, l, DgxH100(4));
  ASSERT_GT(Term(off, "tp_comm"), 0);
  EXPECT_NEAR(Term(on, "tp_comm"), 0.6 * Term(off, "tp_comm"), 1e-9);
  l.framework = Framework::kMegatron;
  l.zero = 1;
  const TimeEstimate te = EstimateTime(Llama3_70B(), w, l, DgxH100(4));
  l.tp_overlap = false;
  EXPECT_NEAR(Term(te, "tp_comm"), 0.3 * Term(EstimateTime(Llama3_70B(), w, l, DgxH100(4)), "tp_comm"), 1e-9);
}

// With torchao's rowwise scales, async TP fuses only the matmul-reduce-scatters
// (pytorch/pytorch#149990): the all-gathers stay exposed. Full recomputation: per layer, three
// passes of two sub-blocks, each pass an all-gather and a reduce-scatter of the same size.
TEST(EstimateTime, TorchtitanAsyncTpLeavesRowwiseGathersExposed) {
  Layout l = TorchtitanFsdp4Tp8();
  l.ac = Recompute::kFull;
  Workload w = Pretrain(8192, 16);
  w.precision = Dtype::kFp8;
  w.fp8_recipe = Fp8Recipe::kRowwise;
  const TimeEstimate off = EstimateTime(Llama3_70B(), w, l, DgxH100(4));
  l.tp_overlap = true;
  const TimeEstimate on = EstimateTime(Llama3_70B(), w, l, DgxH100(4));
  ASSERT_GT(Term(off, "tp_comm"), 0);
  EXPECT_NEAR(RawTerm(on, "tp_comm"), Term(off, "tp_comm"), 1e-12);
  EXPECT_NEAR(Term(on, "tp_comm"), (0.5 + 0.5 * 0.6) * Term(off, "tp_comm"), 1e-9);
  w.fp8_recipe = Fp8Recipe::kTensorwise;  // float8 all-gathers, fused: 0.6 of the whole
  const TimeEstimate tensorwise = EstimateTime(Llama3_70B(), w, l, DgxH100(4));
  l.tp_overlap = false;
  EXPECT_NEAR(Term(tensorwise, "tp_comm"), 0.6 * Term(EstimateTime(Llama3_70B(), w, l, DgxH100(4)), "tp_comm"), 1e-9);
}

// One GPU of a framework's single-GPU recipe (FSDP's layout, no sharding) with every layer
// recomputed.
Layout OneGpuFullRecompute(Stack stack, int mbs) {
  Layout l;
  l.framework = Framework::kFsdp;
  l.stack = stack;
  l.mbs = mbs;
  l.ac = Recompute::kFull;
  return l;
}

// bitsandbytes' paged states that do not fit beside the caching allocator's reserve cross
// PCIe in and out every step: Llama-2-7B full fine-tune with 32-bit PagedAdamW on one 24 GB
// RTX 4090 (torchtune's README at 0217d44: 702 tokens/s) moves its 2 x 4 x 6.74e9 B of states
// twice; on a 48 GB card the 8-bit states of the same run stay on the GPU.
TEST(EstimateTime, PagedOptimizerStatesCrossPcieOnceTheyDoNotFit) {
  ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 1;
  c.gpu = *CatalogGpu("rtx-4090-24gb");
  c.pcie_bandwidth = 25e9;
  const Layout l = OneGpuFullRecompute(Stack::kTorchtune, 4);
  Workload w = Pretrain(2048, 4);
  w.task = Task::kFinetune;
  w.optimizer = Optimizer::kAdamW;
  w.paged_optimizer = true;
  w.optimizer_in_backward = Setting::kOn;
  const ModelSpec m = Llama2_7B();
  const double states = 2.0 * 4 * static_cast<double>(CountParams(m).total);
  const TimeEstimate paged = EstimateTime(m, w, l, c);
  EXPECT_NEAR(Term(paged, "offload"), 2 * states / (25e9 * 0.8), 1e-6 * states / 25e9);
  EXPECT_NEAR(paged.tokens_per_second_per_gpu, 702, 0.25 * 702);
  w.optimizer = Optimizer::kAdamW8bit;
  c.gpu = *CatalogGpu("rtx-a6000-48gb");
  EXPECT_EQ(Term(EstimateTime(m, w, l, c), "offload"), 0);
}

// Eager LoRA adapters pass over every adapted Linear's input and output, and QLoRA through
// peft's preparation casts around every Linear of an fp32 residual stream. Measured on one
// H100 (bench/data/calibration, the third step under the fake process group): Llama-3.1-8B
// QLoRA r16 on every linear, 8,192 tokens with full recomputation, 1.448 s a step
// (l8b-hf-qlora-s2k-b4-full), 1.089 s without peft's preparation
// (l8b-hf-qlora-noprep-s4k-b2-full); priced without these passes, 0.83 and 0.89 s.
TEST(EstimateTime, EagerLoraAdaptersPassOverEachAdaptedLinear) {
  ClusterSpec c = DgxH100(1);
  c.gpus_per_node = 1;
  const Layout l = OneGpuFullRecompute(Stack::kHf, 4);
  Workload w = Pretrain(2048, 4);
  w.task = Task::kQlora;
  w.lora.rank = 16;
  w.lora.targets = {"all-linear"};
  w.optimizer = Optimizer::kAdamW;
  const ModelSpec m = Llama31_8B();
  auto step = [&](const Workload& run, const Layout& lay) {
    const TimeEstimate t = EstimateTime(m, run, lay, c);
    return Term(t, "compute") + Term(t, "recompute") + Term(t, "optimizer");
  };
  EXPECT_NEAR(step(w, l) / 1.448, 1.0, 0.12);
  Workload plain = w;
  plain.kbit_prepare = Setting::kOff;
  plain.seq_len = 4096;
  Layout two = l;
  two.mbs = 2;
  EXPECT_NEAR(step(plain, two) / 1.089, 1.0, 0.10);
  // Gemma's norms cast back to the bf16 stream's dtype: peft's preparation leaves nothing to
  // cast, so it prices as the run without it.
  auto gemma = LoadModel("gemma-2-9b");
  ASSERT_TRUE(gemma.ok());
  auto gemma_step = [&](const Workload& run) {
    const TimeEstimate t = EstimateTime(*gemma, run, l, c);
    return Term(t, "compute") + Term(t, "recompute");
  };
  Workload gemma_plain = w;
  gemma_plain.kbit_prepare = Setting::kOff;
  EXPECT_DOUBLE_EQ(gemma_step(w), gemma_step(gemma_plain));
  Workload bare = w;
  bare.kbit_prepare = Setting::kOff;
  EXPECT_GT(step(w, l), 1.2 * step(bare, l));  // Llama's fp32 stream: the casts cost
  // Compiled, Inductor fuses the scale and the add: only the GEMMs and the dequantization stay.
  Workload compiled = plain;
  compiled.compile = Setting::kOn;
  EXPECT_LT(step(compiled, two), 0.9 * step(plain, two));
}

// NeMo's and Megatron-Bridge's performance recipes reduce bf16 main grads
// (grad_reduce_in_fp32 = False): data parallelism moves half of bare Megatron's fp32 bytes.
TEST(EstimateTime, NemoReducesBf16Grads) {
  Layout l;
  l.framework = Framework::kMegatron;
  l.dp = 8;
  l.tp = 8;
  l.grad_accum = 1;
  const Workload w = Pretrain(4096, 8);
  const TimeEstimate bare = EstimateTime(Llama3_70B(), w, l, DgxH100(8));
  l.stack = Stack::kNemo;
  const TimeEstimate nemo = EstimateTime(Llama3_70B(), w, l, DgxH100(8));
  Workload stated = w;
  stated.grad_reduce_fp32 = Setting::kOn;
  const TimeEstimate fp32 = EstimateTime(Llama3_70B(), stated, l, DgxH100(8));
  ASSERT_GT(RawTerm(bare, "dp_comm"), 0);
  EXPECT_NEAR(RawTerm(nemo, "dp_comm") / RawTerm(bare, "dp_comm"), 0.5, 0.01);
  EXPECT_DOUBLE_EQ(RawTerm(fp32, "dp_comm"), RawTerm(bare, "dp_comm"));
}

// DeepSpeed reduces under backward only with overlap_comm: assumed at ZeRO-2 (the usual
// configs set it), stated off it is exposed; ZeRO-0 all-reduces after backward either way.
TEST(EstimateTime, DeepSpeedOverlapsTheReductionWithOverlapComm) {
  Layout l;
  l.framework = Framework::kDeepSpeed;
  l.dp = 16;
  l.zero = 2;
  Workload w = Pretrain(4096, 16);
  const TimeEstimate dflt = EstimateTime(Llama2_7B(), w, l, DgxH100(2));
  w.overlap_comm = Setting::kOff;
  const TimeEstimate off = EstimateTime(Llama2_7B(), w, l, DgxH100(2));
  ASSERT_GT(RawTerm(off, "dp_comm"), 0);
  EXPECT_DOUBLE_EQ(RawTerm(dflt, "dp_comm"), RawTerm(off, "dp_comm"));
  EXPECT_DOUBLE_EQ(Term(off, "dp_comm"), RawTerm(off, "dp_comm"));
  EXPECT_LT(Term(dflt, "dp_comm"), Term(off, "dp_comm"));
  l.zero = 0;
  w.overlap_comm = Setting::kOn;
  const TimeEstimate z0 = EstimateTime(Llama2_7B(), w, l, DgxH100(2));
  EXPECT_DOUBLE_EQ(Term(z0, "dp_comm"), RawTerm(z0, "dp_comm"));
}

TEST(EstimateTime, FsdpGathersOncePerMicroBatchWithoutReshard) {
  const ModelSpec m = Llama2_7B();
  const ClusterSpec c = DgxH100(2);
  Layout l = FsdpLayout(16);
  l.grad_accum = 4;
  const TimeEstimate resharded = EstimateTime(m, Pretrain(4096, 128), l, c);
  l.reshard_after_forward = false;
  const TimeEstimate kept = EstimateTime(m, Pretrain(4096, 128), l, c);
  // The backward all-gather of every micro-batch is what resharding costs: 16 ranks, two
  // nodes, bf16 parameters.
  const double params = 32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096) + 4096 + 2 * 32000.0 * 4096;
  const double gather = CollectiveSeconds(Collective::kAllGather, 2 * params, 16, GroupTier(c, 1, 16));
  EXPECT_NEAR(RawTerm(resharded, "dp_comm") - RawTerm(kept, "dp_comm"), 4 * gather, 1e-9);
  // FSDP2 copies every gathered unit out of the all-gather buffer into its parameters on the
  // compute stream (foreach_all_gather_copy_out), reading and writing the layer's bf16
  // parameters: the backward gather adds one copy-out per layer and micro-batch. FSDP1
  // (llm-foundry's Composer FSDP) gathers into the flat parameter itself and has none.
  const double layer = 4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096;
  const double copy_out = 2 * layer * 2 / (3.35e12 * 0.80);  // read + write, bf16, at 80% of HBM
  EXPECT_NEAR(Term(resharded, "compute") - Term(kept, "compute"), 4 * 32 * copy_out, 1e-9);
  l.stack = Stack::kLlmFoundry;
  const TimeEstimate fsdp1_kept = EstimateTime(m, Pretrain(4096, 128), l, c);
  l.reshard_after_forward = true;
  EXPECT_DOUBLE_EQ(Term(EstimateTime(m, Pretrain(4096, 128), l, c), "compute"), Term(fsdp1_kept, "compute"));
}

// One MoE dispatch against arXiv 2603.07685 (Megatron Core MoE, Table 7): DeepSeek-V3's
// routing (256 experts, top 8, 4 of 8 groups open to a token), hidden 7168 in bf16, 4,096
// tokens per rank, on DGX H100 nodes (8 GPUs on NVLink, 8 x 400 Gb/s). The all-to-all sends a
// copy per routed expert and its off-node share goes through each GPU's own NIC, so EP 16 costs
// four times EP 8; HybridEP sends one copy per destination GPU and per destination node.
TEST(MoeExchange, DispatchTimesOfMegatronCoreTable7) {
  auto m = LoadModel("deepseek-v3");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->expert_groups, 8);
  ASSERT_EQ(m->groups_per_token, 4);
  const ClusterSpec c = DgxH100(8);
  const struct {
    int ep;
    double alltoall_us, hybridep_us;
  } table7[] = {{8, 1265, 661}, {16, 5774, 1485}, {32, 8059, 3064}, {64, 9164, 4626}};
  for (const auto& row : table7) {
    Layout l;
    l.framework = Framework::kMegatron;
    l.dp = l.ep = row.ep;
    l.dispatcher = EpDispatch::kAllToAll;
    const double alltoall = MoeTokenExchangeSeconds(*m, l, c, 4096, 2) * 1e6;
    l.dispatcher = EpDispatch::kFlex;
    const double hybridep = MoeTokenExchangeSeconds(*m, l, c, 4096, 2) * 1e6;
    EXPECT_NEAR(alltoall / row.alltoall_us, 1, 0.15) << "EP " << row.ep << ": " << alltoall << " us";
    EXPECT_NEAR(hybridep / row.hybridep_us, 1, 0.15) << "EP " << row.ep << ": " << hybridep << " us";
  }
  // Inside one node the all-to-all is NVLink's: 4,096 x 8 copies x 7,168 x 2 B, 7/8 of them
  // to the other GPUs, at 80% of 450 GB/s, plus one launch and seven ring steps.
  Layout l;
  l.framework = Framework::kMegatron;
  l.dp = l.ep = 8;
  EXPECT_NEAR(MoeTokenExchangeSeconds(*m, l, c, 4096, 2), 5e-6 + 7 * 1e-6 + 4096.0 * 8 * 7168 * 2 * 7 / 8 / 360e9, 1e-9);
  // Megatron's allgather dispatcher gathers the group's tokens: (n - 1) / n of them arrive.
  l.dispatcher = EpDispatch::kAllGather;
  EXPECT_NEAR(MoeTokenExchangeSeconds(*m, l, c, 4096, 2), 5e-6 + 7 * 1e-6 + 4096.0 * 7168 * 2 * 8 * 7 / 8 / 360e9, 1e-9);
}

// AutoModel's FakeBalancedGate deals token t of each rank experts t*k .. t*k+k-1: for
// DeepSeek-V3 (256 experts, top 8) over EP 8 on one node each token's 8 consecutive experts
// sit on one GPU of the 32 experts each holds, so DeepEP sends one row where random routing
// under its group limit sends one per distinct GPU, more than three on average.
// Over EP 64 on 8 nodes (4 experts a GPU, 32 a node) the 8 experts span 2 GPUs of one node.
TEST(MoeExchange, FakeBalancedGateSendsConsecutiveExperts) {
  auto m = LoadModel("deepseek-v3");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ClusterSpec c = DgxH100(8);
  Layout l;
  l.framework = Framework::kTorchtitan;
  l.dp = l.ep = 8;
  l.dispatcher = EpDispatch::kFlex;
  const double one_gpu = MoeTokenExchangeSeconds(*m, l, c, 4096, 2, true);
  EXPECT_NEAR(one_gpu, 5e-6 + 7 * 1e-6 + 4096.0 * 7168 * 2 * 7 / 8 / 360e9, 1e-9);
  EXPECT_GT(MoeTokenExchangeSeconds(*m, l, c, 4096, 2), 3 * one_gpu);
  l.dp = l.ep = 64;
  const double spread = MoeTokenExchangeSeconds(*m, l, c, 4096, 2), dealt = MoeTokenExchangeSeconds(*m, l, c, 4096, 2, true);
  EXPECT_LT(dealt, spread / 2);
  // Dense workload, no effect; the gate reads from the workload and writes back.
  auto doc = Document::Parse("w.yaml", "task: pretrain\nseq_len: 4096\nglobal_batch: 8\nfake_balanced_gate: true\n");
  ASSERT_TRUE(doc.ok());
  auto w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->moe_routing, MoeRouting::kDealt);
  EXPECT_NE(WorkloadToYaml(*w, 0).find("fake_balanced_gate: true"), std::string::npos);
}

// Megatron's --moe-router-force-load-balancing routes by random logits: each of ep ranks
// receives Binomial(ep T k, 1/ep) (token, expert) pairs, and the busiest sits sqrt(2 ln ep)
// deviations above T k. 4,096 tokens of top-8 routing over EP 8: 1 + sqrt(2 ln 8 x 7/8 /
// 32,768) = 1.0105; a learned router keeps 1.1, a dealing gate 1, one rank 1.
TEST(MoeExchange, RoutingImbalanceByRouter) {
  EXPECT_NEAR(defaults::MoeImbalance(8, MoeRouting::kRandom, 4096.0 * 8), 1 + std::sqrt(2 * std::log(8.0) * 7 / 8 / 32768), 1e-12);
  EXPECT_NEAR(defaults::MoeImbalance(8, MoeRouting::kRandom, 4096.0 * 8), 1.0105, 1e-4);
  EXPECT_DOUBLE_EQ(defaults::MoeImbalance(8, MoeRouting::kLearned, 4096.0 * 8), defaults::kMoeImbalance);
  EXPECT_DOUBLE_EQ(defaults::MoeImbalance(8, MoeRouting::kDealt, 4096.0 * 8), 1.0);
  EXPECT_DOUBLE_EQ(defaults::MoeImbalance(1, MoeRouting::kLearned, 4096.0 * 8), 1.0);
  // Read under Megatron's own name, and not beside the other stand-in router.
  auto doc = Document::Parse("w.yaml", "task: pretrain\nmoe_router_force_load_balancing: true\n");
  ASSERT_TRUE(doc.ok());
  auto w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->moe_routing, MoeRouting::kRandom);
  EXPECT_NE(WorkloadToYaml(*w, 0).find("force_load_balancing: true"), std::string::npos);
  doc = Document::Parse("w.yaml", "task: pretrain\nforce_load_balancing: true\nfake_balanced_gate: true\n");
  EXPECT_NE(ParseWorkload(*doc).status().message().find("are two routers; give one"), std::string::npos);
}

// Megatron-core's dropless MoE layer waits on the host once its token counts reach the CPU:
// 2 ms of router, permutation and dispatch per layer and micro-batch, and 20 us per cuBLAS
// call of TE's per-expert grouped GEMM (six per local expert: fc1 and fc2 forward, dgrad and
// wgrad). Megatron-Bridge's Blackwell FP8 recipes from 26.06 capture the iteration in one
// graph, sync-free, and pay none of it.
TEST(EstimateTime, MegatronMoeWaitsOnTheHostUnlessSyncFree) {
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ClusterSpec c = DgxH100(1);
  c.gpu = *CatalogGpu("b200-180gb");
  Workload w = Pretrain(4096, 64);
  w.precision = Dtype::kFp8;
  w.release = 20260400;
  auto l = ParseLayout("framework=megatron-bridge,dp=8,ep=8,mbs=1");
  ASSERT_TRUE(l.ok());
  auto resolved = ResolveLayout(*m, w, c, *l);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  const TimeEstimate waits = EstimateTime(*m, w, *resolved, c);
  w.release = 20260600;
  const TimeEstimate graphed = EstimateTime(*m, w, *resolved, c);
  const double micro = static_cast<double>(resolved->grad_accum), layers = 48, local = 128 / 8;
  EXPECT_NEAR(Term(waits, "compute") - Term(graphed, "compute"), micro * layers * (2e-3 + 6 * local * 20e-6), 1e-9);
  // torchtitan's grouped GEMM is one kernel, and its layer is not priced this way.
  auto titan = ResolveLayout(*m, w, c, *ParseLayout("framework=torchtitan,dp=8,ep=8,mbs=1"));
  ASSERT_TRUE(titan.ok());
  w.fp8_recipe = Fp8Recipe::kTensorwise;  // torchtitan's releases from 2026-04-27 default to rowwise
  w.release = 20260400;
  const TimeEstimate t1 = EstimateTime(*m, w, *titan, c);
  w.release = 20260600;
  EXPECT_DOUBLE_EQ(Term(t1, "compute"), Term(EstimateTime(*m, w, *titan, c), "compute"));
}

// Megatron's 1F1B all-to-all overlap (ep_overlap=on, Megatron-Bridge's moe_a2a_overlap)
// runs each micro-batch's dispatch and combine under another's compute: 30% of the exchange
// stays on the critical path (kEpOverlapExposed), the rest hides.
TEST(EstimateTime, EpOverlapHidesMostOfTheExchange) {
  auto m = LoadModel("qwen3-30b-a3b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ClusterSpec c = DgxH100(2);
  auto l = ResolveLayout(*m, Pretrain(4096, 64), c, *ParseLayout("framework=megatron,dp=16,ep=16,mbs=1"));
  ASSERT_TRUE(l.ok()) << l.status().message();
  const TimeEstimate plain = EstimateTime(*m, Pretrain(4096, 64), *l, c);
  l->ep_overlap = true;
  const TimeEstimate hidden = EstimateTime(*m, Pretrain(4096, 64), *l, c);
  ASSERT_GT(RawTerm(plain, "ep_comm"), 0);
  EXPECT_DOUBLE_EQ(Term(plain, "ep_comm"), RawTerm(plain, "ep_comm"));
  EXPECT_NEAR(Term(hidden, "ep_comm"), 0.3 * RawTerm(hidden, "ep_comm"), 1e-12);
  EXPECT_DOUBLE_EQ(RawTerm(hidden, "ep_comm"), RawTerm(plain, "ep_comm"));
}

TEST(EstimateTime, Fp8IsFasterOnHopper) {
  Workload w = Pretrain(8192, 64);
  const TimeEstimate bf16 = EstimateTime(Llama3_70B(), w, FsdpLayout(64), DgxH100(8));
  w.precision = Dtype::kFp8;
  const TimeEstimate fp8 = EstimateTime(Llama3_70B(), w, FsdpLayout(64), DgxH100(8));
  EXPECT_LT(fp8.step_seconds, bf16.step_seconds);
}

TEST(EstimateTime, CpuOffloadPaysPcieAndCpuAdam) {
  Layout l;
  l.framework = Framework::kDeepSpeed;
  l.dp = 8;
  l.zero = 2;
  l.offload_optimizer = Offload::kCpu;
  const TimeEstimate t = EstimateTime(Llama2_7B(), Pretrain(4096, 8), l, DgxH100(1));
  // Each GPU holds 1/8 of the parameters: grads down + bf16 params up over PCIe at 80%.
  const double local = (32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096) + 4096 + 2 * 32000.0 * 4096) / 8;
  EXPECT_NEAR(Term(t, "offload"), local * 4 / (64e9 * 0.80), 1e-9);
  EXPECT_NEAR(Term(t, "optimizer"), local * 8 / 2e9, 1e-9);  // 8 GPUs share the node's CPU Adam
}

TEST(EstimateTime, DecodeIsBoundByReadingWeights) {
  Workload w;
  w.task = Task::kInference;
  w.inference.batch = 1;
  w.inference.prompt_len = 128;
  w.inference.gen_len = 128;
  Layout l;
  const TimeEstimate t = EstimateTime(Llama2_7B(), w, l, DgxH100(1));
  // Batch 1: 2 bytes per weight read once per token; KV adds 192 positions x 0.5 MiB.
  const double weights = 2.0 * (32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096) + 4096 + 2 * 32000.0 * 4096);
  const double kv = 192.0 * 32 * 2 * 4096 * 2;
  EXPECT_NEAR(t.step_seconds, (weights + kv) / (3.35e12 * 0.80), 1e-9);
  EXPECT_NEAR(t.tokens_per_second_per_gpu, 1 / t.step_seconds, 0.02 / t.step_seconds);
  // TP=4 splits the weights and adds two all-reduces per layer.
  l.tp = 4;
  const TimeEstimate tp4 = EstimateTime(Llama2_7B(), w, l, DgxH100(1));
  EXPECT_LT(tp4.step_seconds, t.step_seconds / 2);
  EXPECT_GT(Term(tp4, "tp_comm"), 0);
}

TEST(EstimateTime, DegenerateInputsGiveZeros) {
  const TimeEstimate t = EstimateTime(ModelSpec{}, Pretrain(4096, 8), FsdpLayout(8), DgxH100(1));
  EXPECT_EQ(t.step_seconds, 0);
  EXPECT_EQ(t.tokens_per_second_per_gpu, 0);
}

}  // namespace
}  // namespace shardplan
