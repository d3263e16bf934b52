#include "planner/workload.h"

#include <array>
#include <utility>

namespace shardplan {
namespace {

constexpr std::array<std::pair<Task, std::string_view>, 5> kTasks = {{
    {Task::kPretrain, "pretrain"}, {Task::kFinetune, "finetune"}, {Task::kLora, "lora"},
    {Task::kQlora, "qlora"}, {Task::kInference, "inference"}}};

constexpr std::array<std::pair<Optimizer, std::string_view>, 7> kOptimizers = {{
    {Optimizer::kAdamW, "adamw"}, {Optimizer::kAdam, "adam"}, {Optimizer::kAdamW8bit, "adamw-8bit"},
    {Optimizer::kSgd, "sgd"}, {Optimizer::kSgdMomentum, "sgd-momentum"},
    {Optimizer::kAdafactor, "adafactor"}, {Optimizer::kLion, "lion"}}};

template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [k, v] : table)
    if (k == e) return v;
  return "?";
}

template <typename E, size_t N>
bool Parse(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s, E* out) {
  for (const auto& [k, v] : table)
    if (v == s) {
      *out = k;
      return true;
    }
  return false;
}

}  // namespace

std::string_view TaskName(Task t) { return NameOf(kTasks, t); }
std::string_view OptimizerName(Optimizer o) { return NameOf(kOptimizers, o); }
bool ParseTask(std::string_view s, Task* out) { return Parse(kTasks, s, out); }
bool ParseOptimizer(std::string_view s, Optimizer* out) { return Parse(kOptimizers, s, out); }

}  // namespace shardplan
