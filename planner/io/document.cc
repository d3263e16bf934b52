#include "planner/io/document.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "configs/builtin.h"
#include "planner/strings.h"
#include "planner/units.h"

namespace shardplan {
namespace {

std::string Found(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  return "\"" + node.Scalar() + "\"";
}

// Line and column (1-based) of byte `offset` in `text`.
std::pair<int, int> LineCol(std::string_view text, size_t offset) {
  int line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// Offset of the first byte that breaks UTF-8, or npos.
size_t FirstInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || c == 0xC0 || c == 0xC1 || c > 0xF4) return i;
    for (int k = 1; k <= extra; ++k)
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return i;
    i += static_cast<size_t>(extra) + 1;
  }
  return std::string_view::npos;
}

std::string Hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02X", c);
  return buf;
}

bool NamedJson(std::string_view name) { return name.size() >= 5 && name.substr(name.size() - 5) == ".json"; }

// Whether `text` is a JSON object. A .json file must be one; otherwise text that opens with
// '{' may still be YAML in flow style (`{task: lora, seq_len: 4096}`), which is YAML whatever
// its first character, so only strict JSON is treated as JSON.
bool StrictJsonObject(const std::string& text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string::npos && text[i] == '{' && nlohmann::json::accept(text);
}

}  // namespace

StatusOr<Document> Document::Parse(std::string name, std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return Status::BadInput(name + ":1:1: the file is empty; expected a mapping of keys");
  if (size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    auto [line, col] = LineCol(text, bad);
    return Status::BadInput(name + ":" + std::to_string(line) + ":" + std::to_string(col) +
                            ": invalid UTF-8 (byte 0x" +
                            Hex(static_cast<unsigned char>(text[bad])) + ")");
  }
  // A NUL byte is no text a config holds (a binary or a truncated copy); yaml-cpp would keep
  // it inside a scalar that no writer can give back.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    auto [line, col] = LineCol(text, nul);
    return Status::BadInput(name + ":" + std::to_string(line) + ":" + std::to_string(col) +
                            ": a NUL byte; expected text (is this a binary file?)");
  }
  std::string body(text);
  if (NamedJson(name) || StrictJsonObject(body)) {
    try {
      [[maybe_unused]] const auto checked = nlohmann::json::parse(body);  // throws with the byte offset
    } catch (const nlohmann::json::parse_error& e) {
      auto [line, col] = LineCol(text, e.byte > 0 ? e.byte - 1 : 0);
      std::string what = e.what();
      size_t cut = what.find("syntax error");
      return Status::BadInput(name + ":" + std::to_string(line) + ":" + std::to_string(col) +
                              ": invalid JSON: " + (cut == std::string::npos ? what : what.substr(cut)));
    } catch (const nlohmann::json::exception& e) {
      // A number too large for a double (1e999) is out_of_range, thrown without a position.
      return Status::BadInput(name + ":1:1: invalid JSON: " + std::string(e.what()) +
                              " (a number too large to represent?)");
    }
    // JSON allows tabs as white space where YAML's flow style may not; outside strings
    // they are only white space, and valid JSON has none inside strings.
    std::replace(body.begin(), body.end(), '\t', ' ');
  }
  Document doc;
  doc.name_ = std::move(name);
  try {
    doc.root_ = YAML::Load(body);
  } catch (const YAML::Exception& e) {
    // yaml-cpp can mark an error at the end of a scalar past its line (an unterminated
    // quote, a bad escape): clamp the position into the text so the message points at it.
    std::vector<size_t> widths = {0};
    for (char ch : body) {
      if (ch == '\n') widths.push_back(0);
      else ++widths.back();
    }
    const size_t line = std::min<size_t>(static_cast<size_t>(std::max(e.mark.line, 0)), widths.size() - 1);
    const size_t col = std::min<size_t>(static_cast<size_t>(std::max(e.mark.column, 0)), widths[line]);
    return Status::BadInput(doc.name_ + ":" + std::to_string(line + 1) + ":" + std::to_string(col + 1) +
                            ": invalid YAML: " + e.msg);
  }
  if (!doc.root_.IsMap())
    return Status::BadInput(doc.name_ + ":1:1: expected a mapping of keys at the top, got " + Found(doc.root_));
  return doc;
}

StatusOr<Document> Document::Load(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::BadInput(path + ": is a directory; expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::BadInput(path + ": cannot open the file (does it exist?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return Parse(path, ss.str());
}

Status Document::ErrorAt(const YAML::Node& node, const std::string& message) const {
  YAML::Mark m = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  if (m.is_null()) return Status::BadInput(name_ + ": " + message);
  return Status::BadInput(name_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " +
                          message);
}

Status Document::ExpectMap(const YAML::Node& node, const std::string& what) const {
  if (node.IsDefined() && node.IsMap()) return Status::Ok();
  return ErrorAt(node, what + ": expected a mapping, got " + Found(node));
}

StatusOr<std::optional<int64_t>> Document::Int(const YAML::Node& map, const char* key, int64_t min,
                                               int64_t max) const {
  YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) return std::optional<int64_t>();
  std::string what = std::string(key) + ": expected an integer from " + std::to_string(min) + " to " +
                     std::to_string(max);
  if (!n.IsScalar()) return ErrorAt(n, what + ", got " + Found(n));
  const std::string& s = n.Scalar();
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range)
    return ErrorAt(n, std::string(key) + ": the number " + s + " is past the 64-bit integer range");
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    // Accept integral floats written as 4096.0 or 1e5 (JSON writers do this).
    double d = 0;
    auto [p2, e2] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (e2 != std::errc() || p2 != s.data() + s.size() || std::floor(d) != d || std::fabs(d) > 9.2e18)
      return ErrorAt(n, what + ", got " + Found(n));
    v = static_cast<int64_t>(d);
  }
  if (v < min || v > max) return ErrorAt(n, what + ", got " + s);
  return std::optional<int64_t>(v);
}

StatusOr<std::optional<double>> Document::Number(const YAML::Node& map, const char* key, double min,
                                                 double max) const {
  YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) return std::optional<double>();
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!n.IsScalar() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v))
    return ErrorAt(n, std::string(key) + ": expected a number, got " + Found(n));
  if (v < min || v > max)
    return ErrorAt(n, std::string(key) + ": expected a number from " + std::to_string(min) + " to " +
                          std::to_string(max) + ", got " + s);
  return std::optional<double>(v);
}

StatusOr<std::optional<bool>> Document::Bool(const YAML::Node& map, const char* key) const {
  YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) return std::optional<bool>();
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True") return std::optional<bool>(true);
    if (s == "false" || s == "False") return std::optional<bool>(false);
  }
  return ErrorAt(n, std::string(key) + ": expected true or false, got " + Found(n));
}

StatusOr<std::optional<std::string>> Document::String(const YAML::Node& map, const char* key) const {
  YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) return std::optional<std::string>();
  if (!n.IsScalar()) return ErrorAt(n, std::string(key) + ": expected a string, got " + Found(n));
  return std::optional<std::string>(n.Scalar());
}

namespace {
template <typename T, typename F>
StatusOr<std::optional<T>> Quantity(const Document& d, const YAML::Node& map, const char* key, F parse) {
  YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) return std::optional<T>();
  if (!n.IsScalar()) return d.ErrorAt(n, std::string(key) + ": expected a quantity with a unit, got " + Found(n));
  auto v = parse(n.Scalar());
  if (!v.ok()) return d.ErrorAt(n, std::string(key) + ": " + v.status().message());
  return std::optional<T>(*v);
}
}  // namespace

StatusOr<std::optional<int64_t>> Document::Bytes(const YAML::Node& map, const char* key) const {
  return Quantity<int64_t>(*this, map, key, ParseBytes);
}
StatusOr<std::optional<double>> Document::Bandwidth(const YAML::Node& map, const char* key) const {
  return Quantity<double>(*this, map, key, ParseBandwidth);
}
StatusOr<std::optional<double>> Document::Duration(const YAML::Node& map, const char* key) const {
  return Quantity<double>(*this, map, key, ParseDuration);
}
StatusOr<std::optional<double>> Document::Power(const YAML::Node& map, const char* key) const {
  return Quantity<double>(*this, map, key, ParsePower);
}

Status Document::CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed,
                           const Synonyms& synonyms, const std::vector<std::string_view>& read_past) const {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    if (std::find(read_past.begin(), read_past.end(), key) != read_past.end()) continue;
    if (std::any_of(synonyms.begin(), synonyms.end(), [&](const auto& s) { return s.first == key; })) continue;
    std::vector<std::string> candidates = allowed;  // a misspelt learning rate is one too
    candidates.insert(candidates.end(), read_past.begin(), read_past.end());
    std::string hint = Suggest(key, candidates);
    std::string msg = "unknown key '" + key + "'";
    msg += hint.empty() ? "; expected one of: " + Join(allowed) : ", did you mean '" + hint + "'?";
    return ErrorAt(it->first, msg);
  }
  return Status::Ok();
}

StatusOr<YAML::Node> Document::WithOurNames(const YAML::Node& map, const Synonyms& synonyms) const {
  if (!map.IsMap() || std::none_of(synonyms.begin(), synonyms.end(), [&](const auto& s) { return map[s.first].IsDefined(); }))
    return map;
  // A fresh map: assigning to a yaml-cpp node that shares the file's would rewrite the file's.
  YAML::Node ours(YAML::NodeType::Map);
  std::vector<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string key = it->first.Scalar();
    for (const auto& [theirs, name] : synonyms)
      if (key == theirs) key = name;
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return ErrorAt(it->first, "'" + it->first.Scalar() + "' repeats " + key + ", which the file already gives");
    seen.push_back(key);
    ours[key] = it->second;
  }
  return ours;
}

Status Document::CheckMisspelledKeys(const YAML::Node& map, const std::vector<std::string>& known) const {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    // transformers writes private attributes with a leading underscore (_name_or_path,
    // transformers 5's _sliding_window_pattern beside layer_types): never a misspelling.
    if (!key.empty() && key[0] == '_') continue;
    std::string hint = Suggest(key, known);
    if (!hint.empty() && !map[hint].IsDefined())
      return ErrorAt(it->first, "unknown key '" + key + "', did you mean '" + hint + "'?");
  }
  return Status::Ok();
}

std::string YamlQuoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      out += "\\x" + Hex(u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ShortestNumber(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

StatusOr<Document> LoadBuiltinOrFile(std::string_view folder, const std::string& ref) {
  bool looks_like_path = ref.find('/') != std::string::npos || ref.find(".json") != std::string::npos ||
                         ref.find(".yaml") != std::string::npos || ref.find(".yml") != std::string::npos;
  if (!looks_like_path) {
    if (auto f = FindBuiltin(folder, ref)) return Document::Parse("builtin:" + std::string(f->path), f->content);
    std::error_code ec;
    if (!std::filesystem::exists(ref, ec)) {
      std::vector<std::string> names = BuiltinNames(folder);
      std::string hint = Suggest(ref, names);
      return Status::BadInput("no built-in " + std::string(folder) + " named '" + ref + "'" +
                              (hint.empty() ? "" : ", did you mean '" + hint + "'?") + " (built-in: " +
                              Join(names) + "; or give a path)");
    }
  }
  return Document::Load(ref);
}

}  // namespace shardplan
