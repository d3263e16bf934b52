#include "validate/launch_command.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

namespace shardplan::validate {

std::vector<std::string> LocalCommand(const LaunchSpec& s, const WorkerOptions& o) {
  // --quiet: the workers print their own verdict and errors; mpirun's banners about
  // non-zero exit codes would only repeat them.
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(s.np), "--quiet", "--oversubscribe",
                                   "--bind-to", "none"};
  if (s.as_root) argv.push_back("--allow-run-as-root");
  // mpirun's own limit, past the workers' --timeout: it only acts if a worker cannot exit.
  argv.insert(argv.end(), {"--timeout", fmt::format("{:.0f}", o.timeout_s + 10), s.worker});
  for (std::string& a : WorkerArgs(o)) argv.push_back(std::move(a));
  return argv;
}

std::vector<std::string> ClusterCommand(const LaunchSpec& s, const WorkerOptions& o) {
  const std::string per_node = std::to_string(s.gpus_per_node);
  const int nodes = (s.np + s.gpus_per_node - 1) / s.gpus_per_node;
  std::vector<std::string> argv;
  if (s.launcher == "srun") {
    argv = {"srun", "--nodes", std::to_string(nodes), "--ntasks", std::to_string(s.np), "--ntasks-per-node",
            per_node, "--gpus-per-node", per_node, "--kill-on-bad-exit=1", "--mpi=pmix", s.worker};
  } else {
    argv = {"mpirun", "-np", std::to_string(s.np), "--hostfile", "HOSTFILE", "--map-by", "ppr:" + per_node + ":node",
            "--bind-to", "numa", "-x", "LD_LIBRARY_PATH", "-x", "NCCL_DEBUG=WARN", "--timeout",
            fmt::format("{:.0f}", o.timeout_s + 10), s.worker};
  }
  for (std::string& a : WorkerArgs(o)) argv.push_back(std::move(a));
  return argv;
}

static bool NeedsQuotes(const std::string& a) {
  if (a.empty()) return true;
  for (char c : a) {
    const bool plain = std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=:,@%+").find(c) != std::string_view::npos;
    if (!plain) return true;
  }
  return false;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (!NeedsQuotes(a)) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::optional<std::string> FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::string_view rest(path);
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

std::optional<std::string> WorkerNextToSelf() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const std::filesystem::path worker = self.parent_path() / kWorkerName;
  if (access(worker.c_str(), X_OK) != 0) return std::nullopt;
  return worker.string();
}

}  // namespace shardplan::validate
