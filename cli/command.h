// Subcommands register themselves here: each *_command.cc defines a static Registrar that
// adds its CLI11 subcommand, so commands live one per file and main.cc lists none of them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace shardplan::cli {

// Set by a subcommand's callback; main returns it.
int& ExitCode();

// The arguments shardplan was started with (main sets them), for reports that say how they
// were made.
std::vector<std::string>& CommandLine();

// The parent `name` subcommand of `app`, created on first use (e.g. "topology").
CLI::App* Group(CLI::App& app, const std::string& name, const std::string& description);

using AddCommand = std::function<void(CLI::App&)>;
std::vector<std::pair<int, AddCommand>>& Registry();

struct Registrar {
  // `order` sorts subcommands in --help (inspect 10, estimate 20, plan 30, emit 40,
  // validate 50, topology 60, explain-oom 70).
  Registrar(int order, AddCommand add) { Registry().emplace_back(order, std::move(add)); }
};

}  // namespace shardplan::cli
