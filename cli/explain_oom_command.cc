// `shardplan explain-oom "<CUDA OOM message>"`: why PyTorch ran out of memory, and what to change.
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/inputs.h"
#include "planner/oom_message.h"
#include "planner/units.h"

namespace shardplan::cli {
namespace {

struct OomFlags {
  std::string message;
  bool json = false;
};

Registrar reg(70, [](CLI::App& app) {
  auto flags = std::make_shared<OomFlags>();
  CLI::App* cmd = app.add_subcommand("explain-oom", "explain a PyTorch CUDA out-of-memory message");
  cmd->add_option("message", flags->message, "the message, or - to read it from standard input")->required();
  cmd->add_flag("--json", flags->json, "print JSON on stdout");
  cmd->callback([flags] {
    std::string text = flags->message;
    if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    auto m = ParseOomMessage(text);
    if (!m.ok()) return (void)Fail(m.status());
    OomDiagnosis d = DiagnoseOom(*m);
    if (flags->json) {
      nlohmann::json j = {{"requested_bytes", m->requested}, {"total_bytes", m->total}, {"free_bytes", m->free},
                          {"allocated_bytes", m->allocated}, {"reserved_bytes", m->reserved},
                          {"cached_unallocated_bytes", d.cached_unallocated}, {"outside_torch_bytes", d.outside_torch},
                          {"verdict", d.verdict}, {"advice", d.advice}};
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << "asked for      " << FormatBytes(m->requested) << "\n"
              << "GPU total      " << FormatBytes(m->total) << ", free " << FormatBytes(m->free) << "\n"
              << "PyTorch        " << FormatBytes(m->allocated) << " allocated, " << FormatBytes(m->reserved)
              << " reserved (" << FormatBytes(d.cached_unallocated) << " cached but unallocated)\n"
              << "outside torch  " << FormatBytes(d.outside_torch) << "\n\n"
              << "verdict: " << d.verdict << "\n";
    for (const std::string& a : d.advice) std::cout << "  - " << a << "\n";
  });
});

}  // namespace
}  // namespace shardplan::cli
