// Document: a YAML or JSON file loaded with positions, so every error names the file,
// line and column (STYLE.md 8). JSON is read through yaml-cpp (JSON is YAML's flow style)
// after nlohmann::json has checked its syntax, so both formats share one located reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "planner/status.h"
#include "planner/strings.h"  // Suggest, for the readers' did-you-mean

namespace shardplan {

class Document {
 public:
  // Reads `path` from disk. Rejects a missing file, a directory, an empty file and invalid
  // UTF-8 with the position of the first bad byte.
  static StatusOr<Document> Load(const std::string& path);
  // Parses `text` as if read from `name` (built-in configs, tests).
  static StatusOr<Document> Parse(std::string name, std::string_view text);

  const YAML::Node& root() const { return root_; }
  const std::string& name() const { return name_; }

  // "file:line:col: message" at `node` (or at the file when the node has no mark).
  Status ErrorAt(const YAML::Node& node, const std::string& message) const;

  // Typed getters. A missing key returns nullopt; a key of the wrong type or out of range
  // is an error that says what was expected and what was found.
  StatusOr<std::optional<int64_t>> Int(const YAML::Node& map, const char* key, int64_t min = 1,
                                       int64_t max = int64_t{1} << 40) const;
  StatusOr<std::optional<double>> Number(const YAML::Node& map, const char* key, double min = 0,
                                         double max = 1e30) const;
  StatusOr<std::optional<bool>> Bool(const YAML::Node& map, const char* key) const;
  StatusOr<std::optional<std::string>> String(const YAML::Node& map, const char* key) const;
  // Quantities with units (planner/units.h).
  StatusOr<std::optional<int64_t>> Bytes(const YAML::Node& map, const char* key) const;
  StatusOr<std::optional<double>> Bandwidth(const YAML::Node& map, const char* key) const;
  StatusOr<std::optional<double>> Duration(const YAML::Node& map, const char* key) const;
  StatusOr<std::optional<double>> Power(const YAML::Node& map, const char* key) const;

  // Our own files: every key of `map` must be in `allowed`; an unknown one is an error with
  // a did-you-mean suggestion.
  // `synonyms` ({theirs, ours}: the names other tools give our keys) are accepted too but
  // never suggested for a misspelling.
  using Synonyms = std::vector<std::pair<std::string, std::string>>;
  // `read_past`: other tools' keys accepted and left unread (a trainer's learning rate in a
  // pasted file), neither suggested nor listed as expected.
  Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed, const Synonyms& synonyms = {},
                   const std::vector<std::string_view>& read_past = {}) const;
  // `map` with keys given under a synonym renamed to ours, in a fresh map whose values are
  // the file's nodes (their lines kept for errors); `map` itself when it names none. One key
  // given under two names is an error at the second.
  StatusOr<YAML::Node> WithOurNames(const YAML::Node& map, const Synonyms& synonyms) const;
  // Foreign files (HF configs carry many keys): an unknown key is an error only when it
  // looks like a misspelling of an allowed key that the file lacks.
  Status CheckMisspelledKeys(const YAML::Node& map, const std::vector<std::string>& known) const;
  // Requires `node` to be a mapping.
  Status ExpectMap(const YAML::Node& node, const std::string& what) const;

 private:
  std::string name_;
  YAML::Node root_;
};

// Runs `parse`, turning any yaml-cpp exception that escapes a reader into a located error,
// so malformed input never crashes (STYLE.md 7).
template <typename F>
auto Guarded(const Document& doc, F parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const YAML::Exception& e) {
    return Status::BadInput(doc.name() + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                            ": unexpected structure: " + e.msg);
  }
}


// `s` as a double-quoted YAML scalar that reads back as exactly `s` (quotes, backslashes and
// control characters escaped), for writers of names and other free text.
std::string YamlQuoted(std::string_view s);
// The shortest decimal that reads back as exactly `v` (std::to_chars), for writers.
std::string ShortestNumber(double v);

// Loads a named built-in (configs/<folder>/<name>.*) or a path. Names are tried first
// unless `ref` contains a '/' or an extension.
StatusOr<Document> LoadBuiltinOrFile(std::string_view folder, const std::string& ref);

}  // namespace shardplan
