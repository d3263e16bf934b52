// shardplan: will this model fit on these GPUs, with which layout, and how fast?
#include <algorithm>
#include <cstdio>

#include "cli/command.h"

int main(int argc, char** argv) {
  using namespace shardplan::cli;
  CLI::App app{"shardplan: plan how an LLM is sharded over GPUs, predict memory and speed, emit configs"};
  app.set_version_flag("--version", "shardplan 0.1.0");
  app.require_subcommand(1);
  CommandLine().assign(argv, argv + argc);
  CommandLine()[0] = "shardplan";  // how a user types it, wherever the binary sits
  auto& reg = Registry();
  std::stable_sort(reg.begin(), reg.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [order, add] : reg) add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help or the usage error
    return code == 0 ? 0 : 2;
  }
  return ExitCode();
}
