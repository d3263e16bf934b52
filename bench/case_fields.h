// Internal to bench/: reading the free-form fields of the public cases, shared by the
// case reader (model, cluster, workload) and the layout mapping (bench/case_layout.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "bench/case_reader.h"
#include "planner/layout.h"

namespace shardplan::bench::detail {

std::string Lower(std::string s);
bool Mentions(const std::string& text, std::string_view lowercase_word);
YAML::Node Section(const YAML::Node& map, const char* key);
std::string Str(const YAML::Node& map, const char* key);
std::optional<int64_t> ParseInt(std::string_view s);
std::optional<int64_t> Int(const YAML::Node& map, const char* key);
std::optional<double> Number(const YAML::Node& map, const char* key);
std::optional<int64_t> FirstInt(const std::string& text);
std::optional<int64_t> IntAfter(const std::string& text, const std::string& key);
// Marks the case skipped with the reason; returns false so mappers can `return Skip(...)`.
bool Skip(PublicCase& pc, std::string why);

// Facts a case states only in prose (its notes and id), kept beside the case id. The torchtune
// notes say "Cumulative ablation: each row adds the named technique to the previous one".
struct Override {
  const char* id;
  const char* ac;                      // recomputation the row inherits, or nullptr
  LossKind loss = LossKind::kAuto;     // the loss the row runs (before the chunked-CE row: standard)
  bool optimizer_in_backward = false;  // the row fuses the optimizer step into backward
};
const Override* FindOverride(const std::string& id);

struct Fields {
  YAML::Node model, cluster, layout, outcome;
  std::string category, repo;
  std::optional<int64_t> seq_override;  // a sequence length the outcome fixes (max-context tables)
};

// source.repo -> the training framework whose memory layout the run used.
extern const std::map<std::string, Framework> kFrameworks;

// The --layout text of a case, with the framework from its source (bench/case_layout.cc).
bool MapLayout(const Fields& f, PublicCase& pc);

}  // namespace shardplan::bench::detail
