// Workload: what the user runs -- training task, sequence, batch, precision, optimizer,
// LoRA, or inference serving. Plain struct; read by planner/io/workload_reader.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/dtype.h"

namespace shardplan {

enum class Task { kPretrain, kFinetune, kLora, kQlora, kInference };
enum class Optimizer { kAdamW, kAdam, kAdamW8bit, kSgd, kSgdMomentum, kAdafactor, kLion };

struct LoraSpec {
  int64_t rank = 16;                         // r
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj",
                                      "gate_proj", "up_proj", "down_proj"};
};

struct InferenceSpec {
  int64_t batch = 1;                         // concurrent sequences the user wants
  int64_t prompt_len = 1024;                 // tokens
  int64_t gen_len = 1024;                    // tokens
  Dtype weights = Dtype::kBf16;
  Dtype kv_cache = Dtype::kBf16;
  double gpu_memory_utilization = 0.9;       // vLLM's default budget fraction
};

struct Workload {
  std::string name = "pretrain";
  Task task = Task::kPretrain;
  int64_t seq_len = 4096;                    // tokens per sequence (training)
  int64_t global_batch = 256;                // sequences per optimizer step
  Dtype precision = Dtype::kBf16;            // compute / working-weight dtype
  Optimizer optimizer = Optimizer::kAdamW;
  LoraSpec lora;                             // used for kLora / kQlora
  InferenceSpec inference;                   // used for kInference

  bool training() const { return task != Task::kInference; }
  bool lora_like() const { return task == Task::kLora || task == Task::kQlora; }
  int64_t context_len() const {              // tokens a sequence holds at its longest
    return training() ? seq_len : inference.prompt_len + inference.gen_len;
  }
};

std::string_view TaskName(Task t);
std::string_view OptimizerName(Optimizer o);
bool ParseTask(std::string_view s, Task* out);
bool ParseOptimizer(std::string_view s, Optimizer* out);

}  // namespace shardplan
