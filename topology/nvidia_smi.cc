#include "topology/nvidia_smi.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>

#include "planner/strings.h"
#include "planner/units.h"

namespace shardplan {
namespace {

constexpr const char* kTrailingColumns[] = {"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"};

struct Line {
  int number;  // 1-based, as an editor shows it
  std::string text;
};

// Splits `text` into lines without '\r' and without terminal colour codes (ESC [ ... m),
// which nvidia-smi prints around the header when its stdout is a terminal.
std::vector<Line> Lines(std::string_view text) {
  std::vector<Line> out;
  std::string cur;
  int number = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      out.push_back({number++, std::move(cur)});
      cur.clear();
    } else if (c == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    } else if (c != '\r') {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back({number, std::move(cur)});
  return out;
}

Status ErrorAt(const std::string& source, int line, const std::string& message) {
  return Status::BadInput(source + ":" + std::to_string(line) + ": " + message);
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  out += s.size() > 60 ? s.substr(0, 57) : s;
  out += s.size() > 60 ? "...\"" : "\"";
  return out;
}

std::optional<int> ParseInt(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The cells of one matrix line. Tab-separated output keeps empty cells (an affinity nvidia-smi
// could not tell); when the tabs became spaces, rows split on any run of spaces and the header
// on runs of two or more, because its names ("CPU Affinity") contain single spaces.
std::vector<std::string> SplitCells(const std::string& line, bool header) {
  std::vector<std::string> cells;
  if (line.find('\t') != std::string::npos) {
    for (const std::string& c : Split(line, '\t')) cells.push_back(Trim(c));
    return cells;
  }
  size_t i = 0, n = line.size();
  while (i < n) {
    while (i < n && line[i] == ' ') ++i;
    size_t start = i;
    while (i < n && !(line[i] == ' ' && (!header || i + 1 == n || line[i + 1] == ' '))) ++i;
    if (i > start) cells.push_back(line.substr(start, i - start));
  }
  return cells;
}

// Header cells without the leading empty one, with "mlx5_1 CPU Affinity" (a paste that lost a
// tab) split into the device and the known trailing names.
std::vector<std::string> HeaderCells(const std::string& line) {
  std::vector<std::string> out;
  for (std::string cell : SplitCells(line, true)) {
    while (!cell.empty()) {
      size_t best = std::string::npos, len = 0;
      for (const char* name : kTrailingColumns) {
        size_t p = cell.find(name);
        if (p < best) best = p, len = std::strlen(name);
      }
      if (best == std::string::npos) {
        out.push_back(cell);
        break;
      }
      if (best > 0) out.push_back(Trim(cell.substr(0, best)));
      out.push_back(cell.substr(best, len));
      cell = Trim(cell.substr(best + len));
    }
  }
  return out;
}

std::optional<TopoLink> ParseLink(std::string_view s) {
  if (s == "X") return TopoLink{LinkKind::kSelf, 0};
  if (s == "PIX") return TopoLink{LinkKind::kPix, 0};
  if (s == "PXB") return TopoLink{LinkKind::kPxb, 0};
  if (s == "PHB") return TopoLink{LinkKind::kPhb, 0};
  if (s == "NODE") return TopoLink{LinkKind::kNode, 0};
  if (s == "SYS" || s == "SOC") return TopoLink{LinkKind::kSys, 0};  // SOC: drivers before ~2017
  if (s.size() > 2 && s.substr(0, 2) == "NV") {
    std::optional<int> n = ParseInt(s.substr(2));
    if (n && *n > 0) return TopoLink{LinkKind::kNvLink, *n};
  }
  return std::nullopt;
}

// "GPU3" -> 3.
std::optional<int> GpuColumn(std::string_view name) {
  if (name.size() < 4 || name.substr(0, 3) != "GPU") return std::nullopt;
  std::optional<int> n = ParseInt(name.substr(3));
  if (n && *n < 0) return std::nullopt;  // "GPU-3" is no column (it indexed before the first)
  return n;
}

struct Header {
  int line = 0;
  int gpus = 0;
  std::vector<std::string> nics;
  int cpu_col = -1, numa_col = -1;  // index among the cells after the device columns
};

StatusOr<Header> ParseHeader(const Line& line, const std::string& source) {
  Header h;
  h.line = line.number;
  std::vector<std::string> cells = HeaderCells(line.text);
  size_t i = 0;
  for (; i < cells.size(); ++i) {
    const std::string& c = cells[i];
    if (std::find(std::begin(kTrailingColumns), std::end(kTrailingColumns), c) != std::end(kTrailingColumns)) break;
    if (std::optional<int> g = GpuColumn(c)) {
      if (*g != h.gpus || !h.nics.empty())
        return ErrorAt(source, line.number, "expected column GPU" + std::to_string(h.gpus) + ", got " + Quote(c));
      ++h.gpus;
    } else {
      h.nics.push_back(c);
    }
  }
  for (size_t k = i; k < cells.size(); ++k) {
    if (cells[k] == "CPU Affinity") h.cpu_col = static_cast<int>(k - i);
    if (cells[k] == "NUMA Affinity") h.numa_col = static_cast<int>(k - i);
  }
  return h;
}

Status ParseGpuRow(const Line& line, const std::vector<std::string>& cells, int gpu, const Header& h,
                   const std::string& source, TopoGpu& out) {
  const std::string row = "GPU" + std::to_string(gpu);
  size_t devices = static_cast<size_t>(h.gpus) + h.nics.size();
  if (cells.size() < 1 + devices)
    return ErrorAt(source, line.number, row + " has " + std::to_string(cells.size() - 1) + " of the " +
                                            std::to_string(devices) + " device columns the header names");
  for (size_t c = 0; c < devices; ++c) {
    const std::string& column = c < static_cast<size_t>(h.gpus) ? "GPU" + std::to_string(c) : h.nics[c - h.gpus];
    std::optional<TopoLink> link = ParseLink(cells[1 + c]);
    if (!link)
      return ErrorAt(source, line.number, row + ", column " + column + ": unknown link " + Quote(cells[1 + c]) +
                                              "; expected X, NV<n>, PIX, PXB, PHB, NODE or SYS");
    bool self = static_cast<int>(c) == gpu;
    if (self != (link->kind == LinkKind::kSelf))
      return ErrorAt(source, line.number, row + ", column " + column + ": " +
                                              (self ? "expected X where the row meets its own column, got " + Quote(cells[1 + c])
                                                    : std::string("X belongs only where the row meets its own column")));
    (c < static_cast<size_t>(h.gpus) ? out.to_gpu : out.to_nic).push_back(*link);
  }
  auto trailing = [&](int col) { return col >= 0 && 1 + devices + col < cells.size() ? cells[1 + devices + col] : ""; };
  out.cpu_affinity = trailing(h.cpu_col);
  out.numa_affinity = trailing(h.numa_col);
  out.numa_node = ParseInt(out.numa_affinity).value_or(-1);
  return Status::Ok();
}

// The NIC legend ("  NIC0: mlx5_0") after the matrix.
void ParseNicLegend(const std::vector<Line>& lines, size_t from, TopoMatrix& m) {
  bool in_legend = false;
  for (size_t i = from; i < lines.size(); ++i) {
    std::string t = Trim(lines[i].text);
    if (t == "NIC Legend:") {
      in_legend = true;
    } else if (in_legend && !t.empty()) {
      size_t colon = t.find(':');
      if (colon == std::string::npos) break;
      auto it = std::find(m.nics.begin(), m.nics.end(), Trim(t.substr(0, colon)));
      if (it != m.nics.end()) m.nic_devices[it - m.nics.begin()] = Trim(t.substr(colon + 1));
    }
  }
}

}  // namespace

std::string LinkName(const TopoLink& link) {
  switch (link.kind) {
    case LinkKind::kSelf: return "X";
    case LinkKind::kNvLink: return "NV" + std::to_string(link.nvlinks);
    case LinkKind::kPix: return "PIX";
    case LinkKind::kPxb: return "PXB";
    case LinkKind::kPhb: return "PHB";
    case LinkKind::kNode: return "NODE";
    case LinkKind::kSys: return "SYS";
  }
  return "?";
}

StatusOr<TopoMatrix> ParseTopoMatrix(std::string_view text, const std::string& source) {
  std::vector<Line> lines = Lines(text);
  size_t i = 0;
  while (i < lines.size() && Trim(lines[i].text).empty()) ++i;
  if (i == lines.size()) return Status::BadInput(source + ": empty; expected the output of `nvidia-smi topo -m`");
  std::vector<std::string> first = HeaderCells(lines[i].text);
  if (std::find(first.begin(), first.end(), "GPU0") == first.end())
    return ErrorAt(source, lines[i].number, "expected the header of `nvidia-smi topo -m` (GPU0, GPU1, ..., CPU Affinity), got " +
                                                Quote(Trim(lines[i].text)));
  SP_ASSIGN_OR_RETURN(Header h, ParseHeader(lines[i], source));
  if (h.gpus == 0)  // "GPU0" inside a run-together cell names no column
    return ErrorAt(source, lines[i].number, "the header names no GPU columns (GPU0, GPU1, ...), got " + Quote(Trim(lines[i].text)));
  TopoMatrix m;
  m.nics = h.nics;
  m.nic_devices = h.nics;
  m.gpus.resize(h.gpus);
  std::vector<bool> seen(h.gpus, false);
  for (++i; i < lines.size(); ++i) {
    std::string t = Trim(lines[i].text);
    if (t.empty() || t.rfind("Legend", 0) == 0) break;
    std::vector<std::string> cells = SplitCells(lines[i].text, false);
    const std::string& label = cells[0];
    if (std::optional<int> g = GpuColumn(label); g && *g < h.gpus) {
      if (seen[*g]) return ErrorAt(source, lines[i].number, "a second row for " + label);
      seen[*g] = true;
      SP_RETURN_IF_ERROR(ParseGpuRow(lines[i], cells, *g, h, source, m.gpus[*g]));
      continue;
    }
    // NIC rows repeat the GPU rows' NIC columns; only their label is checked.
    bool nic = std::any_of(h.nics.begin(), h.nics.end(), [&](const std::string& n) {
      return label == n || t.rfind(n + " ", 0) == 0;
    });
    if (!nic)
      return ErrorAt(source, lines[i].number, "expected a row for GPU0..GPU" + std::to_string(h.gpus - 1) +
                                                  " or a NIC column, got " + Quote(t));
  }
  for (int g = 0; g < h.gpus; ++g)
    if (!seen[g]) return ErrorAt(source, h.line, "the header names GPU" + std::to_string(g) + " but no row follows for it");
  ParseNicLegend(lines, i, m);
  return m;
}

const std::vector<std::string>& DefaultQueryColumns() {
  static const std::vector<std::string> kColumns = {"index", "name", "memory.total", "pci.bus_id"};
  return kColumns;
}

std::string NormalizeBusId(std::string_view bus_id) {
  std::string s = Trim(bus_id);
  // domain:bus:device.function, hex, at most 8:2:2.1 digits.
  // Explicit digit checks: every character must be a hex digit, at most max_digits of them.
  auto hex = [](std::string_view part, size_t max_digits) -> std::optional<unsigned> {
    if (part.empty() || part.size() > max_digits) return std::nullopt;
    unsigned v = 0;
    for (char ch : part) {
      int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    return v;
  };
  size_t c1 = s.find(':'), c2 = s.find(':', c1 + 1), dot = s.find('.', c2 + 1);
  if (c1 == std::string::npos || c2 == std::string::npos || dot == std::string::npos) return "";
  std::optional<unsigned> domain = hex(std::string_view(s).substr(0, c1), 8);
  std::optional<unsigned> bus = hex(std::string_view(s).substr(c1 + 1, c2 - c1 - 1), 2);
  std::optional<unsigned> device = hex(std::string_view(s).substr(c2 + 1, dot - c2 - 1), 2);
  std::optional<unsigned> function = hex(std::string_view(s).substr(dot + 1), 1);
  if (!domain || !bus || !device || !function || *device > 0x1f || *function > 7) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.%X", *domain, *bus, *device, *function);
  return buf;
}

namespace {

// Sets the field `column` of `gpu` from `value`; unknown columns are ignored.
Status SetQueryField(const std::string& column, const std::string& value, QueryGpu& gpu) {
  auto fail = [&](const char* expected) {
    return Status::BadInput(column + ": expected " + expected + ", got " + Quote(value));
  };
  bool na = value == "[N/A]" || value == "N/A" || value == "[Not Supported]";
  if (column == "index") {
    std::optional<int> v = ParseInt(value);
    if (!v || *v < 0) return fail("a GPU index");
    gpu.index = *v;
  } else if (column == "name") {
    if (value.empty()) return fail("the GPU's name");
    gpu.name = value;
  } else if (column == "memory.total") {
    std::string mib = value;
    if (mib.size() > 4 && mib.substr(mib.size() - 4) == " MiB") mib.resize(mib.size() - 4);
    std::optional<int> v = ParseInt(mib);
    if (!v || *v <= 0) return fail("the memory in MiB, such as 81559");
    gpu.memory_bytes = static_cast<int64_t>(*v) << 20;
  } else if (column == "pci.bus_id") {
    gpu.pci_bus_id = NormalizeBusId(value);
    if (gpu.pci_bus_id.empty()) return fail("a PCI address such as 00000000:1B:00.0");
  } else if (column == "compute_cap" && !na) {
    size_t dot = value.find('.');
    std::optional<int> major = ParseInt(value.substr(0, dot));
    std::optional<int> minor = dot == std::string::npos ? std::optional<int>(0) : ParseInt(value.substr(dot + 1));
    // The major version is bounded before the arithmetic (fuzzing found 315398887.0, whose
    // x10 overflowed int).
    if (!major || !minor || *minor > 9 || *major < 1 || *major > 99) return fail("a compute capability such as 9.0");
    gpu.compute_capability = *major * 10 + *minor;
  } else if (column == "power.limit" && !na) {
    // "500.00" with nounits, "500.00 W" without: the unit parser reads both as watts.
    std::string watts = Trim(value);
    if (watts.empty() || watts.back() != 'W') watts += " W";
    StatusOr<double> w = ParsePower(watts);
    if (!w.ok() || !(*w >= 1 && *w <= 1e5)) return fail("a power limit in watts, such as 500.00");
    gpu.power_limit_watts = *w;
  } else if (column == "driver_version") {
    gpu.driver_version = value;
  } else if ((column == "pcie.link.gen.max" || column == "pcie.link.width.max") && !na) {
    std::optional<int> v = ParseInt(value);
    if (!v || *v <= 0) return fail("a positive integer");
    (column == "pcie.link.gen.max" ? gpu.pcie_gen : gpu.pcie_width) = *v;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<QueryGpu>> ParseGpuQuery(std::string_view text, const std::string& source,
                                              const std::vector<std::string>& columns) {
  std::vector<std::string> cols = columns;
  std::vector<QueryGpu> gpus;
  std::vector<int> row_lines;
  bool header_allowed = true;
  for (const Line& line : Lines(text)) {
    std::string t = Trim(line.text);
    if (t.empty()) continue;
    std::vector<std::string> fields;
    for (const std::string& f : Split(t, ',')) fields.push_back(Trim(f));
    if (header_allowed && fields[0] == "index") {  // `--format=csv` without noheader
      cols.clear();
      for (const std::string& f : fields) cols.push_back(Trim(f.substr(0, f.find(" ["))));
      header_allowed = false;
      continue;
    }
    header_allowed = false;
    if (t == "No devices were found") return ErrorAt(source, line.number, "nvidia-smi found no GPUs");
    if (fields.size() != cols.size())
      return ErrorAt(source, line.number, "expected " + std::to_string(cols.size()) + " comma-separated fields (" +
                                              Join(cols) + "), got " + std::to_string(fields.size()) + ": " + Quote(t));
    QueryGpu gpu;
    for (size_t k = 0; k < cols.size(); ++k) {
      Status s = SetQueryField(cols[k], fields[k], gpu);
      if (!s.ok()) return ErrorAt(source, line.number, s.message());
    }
    for (size_t k = 0; k < gpus.size(); ++k)
      if (gpus[k].index == gpu.index)
        return ErrorAt(source, line.number, "GPU index " + std::to_string(gpu.index) + " repeats line " +
                                                std::to_string(row_lines[k]));
    gpus.push_back(gpu);
    row_lines.push_back(line.number);
  }
  for (const char* needed : {"index", "name", "memory.total"})
    if (std::find(cols.begin(), cols.end(), needed) == cols.end())
      return Status::BadInput(source + ": the columns (" + Join(cols) + ") lack " + needed +
                              "; query with --query-gpu=index,name,memory.total,pci.bus_id");
  if (gpus.empty()) return Status::BadInput(source + ": no GPU lines; expected the output of `nvidia-smi --query-gpu=...`");
  std::sort(gpus.begin(), gpus.end(), [](const QueryGpu& a, const QueryGpu& b) { return a.index < b.index; });
  return gpus;
}

}  // namespace shardplan
