#include "cli/command.h"

namespace shardplan::cli {

int& ExitCode() {
  static int code = 0;
  return code;
}

std::vector<std::pair<int, AddCommand>>& Registry() {
  static std::vector<std::pair<int, AddCommand>> r;
  return r;
}

CLI::App* Group(CLI::App& app, const std::string& name, const std::string& description) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  CLI::App* sub = app.add_subcommand(name, description);
  sub->require_subcommand(1);
  return sub;
}

std::vector<std::string>& CommandLine() {
  static std::vector<std::string> args;
  return args;
}

}  // namespace shardplan::cli
