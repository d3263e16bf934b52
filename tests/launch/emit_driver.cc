// launch_emit_driver OUT: writes every test plan's emitted files to OUT/<case>/ (through
// WriteOutputDir, as `shardplan emit` does), OUT/<case>.expect.json and the plan itself as
// OUT/<case>.plan.yaml with the format and launcher in OUT/<case>.emit-args, for
// tests/launch/check_emitted.py to feed to the real readers and to `shardplan emit`.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "launch/emit.h"
#include "launch/output_dir.h"
#include "planner/io/plan_file.h"
#include "tests/launch/test_plans.h"

int main(int argc, char** argv) {
  using namespace shardplan::launch;
  if (argc != 2) {
    fmt::print(stderr, "usage: {} OUT\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out = argv[1];
  for (const testing::EmitCase& c : testing::EmitCases()) {
    shardplan::StatusOr<Emitted> e = EmitPlan(c.plan, c.options);
    shardplan::Status s = e.ok() ? WriteOutputDir((out / c.name).string(), e->files, true) : e.status();
    if (!s.ok()) {
      fmt::print(stderr, "{}: {}\n", c.name, s.message());
      return s.exit_code();
    }
    std::ofstream(out / (c.name + ".expect.json")) << testing::ExpectationJson(c);
    shardplan::Plan saved = c.plan;  // PlanToYaml writes the estimates: fill them in first
    saved.memory = shardplan::EstimateMemory(saved.model, saved.workload, saved.layout, saved.cluster);
    saved.time = shardplan::EstimateTime(saved.model, saved.workload, saved.layout, saved.cluster);
    s = shardplan::SavePlan(saved, (out / (c.name + ".plan.yaml")).string());
    if (!s.ok()) {
      fmt::print(stderr, "{}: {}\n", c.name, s.message());
      return s.exit_code();
    }
    std::ofstream(out / (c.name + ".emit-args")) << "--format " << FormatName(c.options.format)
                                                 << " --launcher " << LauncherName(c.options.launcher) << "\n";
    fmt::print("{}: {} files\n", c.name, e->files.size());
  }
  return 0;
}
