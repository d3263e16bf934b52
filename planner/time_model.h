// TimeModel: (ModelSpec, Workload, Layout, ClusterSpec) -> step time, tokens/s per GPU and
// MFU, term by term: compute from FLOPs, communication from an alpha-beta model per
// collective on the tier each group spans, the pipeline bubble, and offload traffic.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/layout.h"
#include "planner/model_spec.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan {

struct TimeTerm {
  std::string name;     // "compute", "tp_comm", "dp_comm", "pp_bubble", "offload", ...
  double seconds = 0;   // its contribution to the step after overlap
  double raw_seconds = 0;  // before overlap with compute
};

struct TimeEstimate {
  double step_seconds = 0;           // one optimizer step (training) or one decode step
  double tokens_per_second_per_gpu = 0;
  double mfu = 0;                    // model FLOPs (6*N*tokens + attention) / (step * peak)
  double model_flops_per_step = 0;   // whole job
  std::vector<TimeTerm> terms;

  void AddTerm(const char* name, double seconds, double raw);  // appends to `terms`
};

// A run-time switch that is not part of the Layout; kAuto takes the framework's default
// (time_model.cc, ResolveSwitches, says which and why).
enum class Switch { kAuto, kOff, kOn };

struct TimeOptions {
  Switch dp_overlap = Switch::kAuto;       // gradient reduction under the backward pass
  Switch param_gather_overlap = Switch::kAuto;  // ZeRO-1/2 parameter all-gather under the next forward
  Switch tp_overlap = Switch::kAuto;       // TP collectives under GEMMs (TE userbuffers, async TP)
  Switch ep_overlap = Switch::kAuto;       // MoE all-to-all under compute (Megatron a2a overlap)
  Switch fused_kernels = Switch::kAuto;    // fused elementwise kernels (torch.compile, Megatron/TE)
  Switch flash_attention = Switch::kAuto;  // fused attention; kOff = scores materialized (2021-era)
  bool with_terms = true;                  // fill TimeEstimate::terms (the search can skip them)
};

// Training: one optimizer step of a resolved layout (dp, grad_accum and stages as the run uses
// them: dp * mbs * grad_accum sequences per step); terms are "compute", "recompute",
// "tp_comm", "cp_comm", "ep_comm", "pp_bubble", "pp_p2p", "dp_comm", "optimizer", "offload"
// and add up to step_seconds. Inference: one decode step at the mean context of
// `l.batch` (or the workload's batch) sequences per replica; tokens/s counts generated tokens
// over prefill + decode; terms "decode_memory", "decode_compute", "offload", "tp_comm" and
// "prefill" (raw only: once per batch of requests). Allocation-free when with_terms is off;
// zeros when the model or the GPU's peak is missing.
TimeEstimate EstimateTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c);
TimeEstimate EstimateTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c,
                          const TimeOptions& opt);

// EstimateTime's inference half (inference_time.cc), callable on its own.
TimeEstimate EstimateInferenceTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c,
                                   const TimeOptions& opt);

// Model FLOPs per token for training (forward + backward, no recomputation): 6 * active
// params of the matmuls + attention's quadratic term.
double TrainingFlopsPerToken(const ModelSpec& m, int64_t seq_len);

// The FLOPs per token MFU counts for this workload: TrainingFlopsPerToken for full training;
// for LoRA/QLoRA the frozen weights skip their weight gradients, 4 * N + attention (NeMo's
// LoRA "model TFLOP/s" convention); for inference 2 * N + the forward attention term at the
// mean context.
double ModelFlopsPerToken(const ModelSpec& m, const Workload& w);

// Weight elements every token multiplies: attention projections, the dense MLP or top-k
// routed + shared experts and the router, and the LM head (which a tied embedding still is).
// Biases, norms and the embedding lookup are not matmuls.
double MatmulParamsPerToken(const ModelSpec& m);

// One MoE token exchange, a dispatch or a combine, of `tokens` tokens from one rank over the
// layout's expert-parallel group with its dispatcher (Layout::dispatcher), each token's row
// `bytes_per_element` wide per element of the experts' input width. The time model prices
// the busiest rank's (defaults::kMoeImbalance times the balanced share). `consecutive`: each
// token's experts are consecutive ones (MoeRouting::kDealt), not drawn at random.
double MoeTokenExchangeSeconds(const ModelSpec& m, const Layout& l, const ClusterSpec& c, double tokens,
                               double bytes_per_element, bool consecutive = false);

// Idle fraction of a pipeline of `stages` under 1F1B with `micro_batches` micro-batches and
// `virtual_stages` model chunks per rank (interleaved 1F1B): (p - 1) / (v * m), as a share
// of the busy time (Narayanan et al. 2021, sec. 2.2), when m >= p. With fewer micro-batches
// than stages each round of chunks also waits p - m chunk times for its first micro-batch to
// return: ((p - 1) / v + (1 - 1/v) (p - m)) / m, which is (p - 1) / m at m = 1.
double PipelineBubbleFraction(int stages, int virtual_stages, int64_t micro_batches);

// Seconds for one GEMM of m x k by k x n on `gpu` in `precision`, or for one grouped GEMM
// over `experts` such problems (routed experts, m rows each): the larger of the compute time
// at the size-dependent efficiency and the time to move its operands.
double GemmSeconds(const GpuSpec& gpu, Dtype precision, double m, double n, double k, double experts = 1);

// The fraction of the datasheet peak one GEMM of (m x k) by (k x n) reaches: the
// architecture's ceiling, tile and wave quantization of the m x n output over the SMs, and
// the reduction depth k; a grouped expert GEMM's also the rows in each group (compute_cost.cc
// documents each factor).
double GemmEfficiency(const GpuSpec& gpu, Dtype precision, double m, double n, double k, double experts = 1);

}  // namespace shardplan
