#include "validate/launch_command.h"

#include <gtest/gtest.h>

namespace shardplan::validate {
namespace {

WorkerOptions Options() {
  WorkerOptions o;
  o.plan = "plan.yaml";
  o.backend = "cuda";
  o.timeout_s = 120;
  return o;
}

TEST(LaunchCommandTest, LocalMpirun) {
  LaunchSpec s;
  s.worker = "bin/shardplan-validate-worker";
  s.np = 4;
  s.as_root = true;
  EXPECT_EQ(ShellJoin(LocalCommand(s, Options())),
            "mpirun -np 4 --quiet --oversubscribe --bind-to none --allow-run-as-root --timeout 130 "
            "bin/shardplan-validate-worker plan.yaml --backend cuda --ranks all --timeout 120 --iters 2");
}

TEST(LaunchCommandTest, ClusterMpirunAndSrun) {
  LaunchSpec s;
  s.worker = "shardplan-validate-worker";
  s.np = 16;
  s.gpus_per_node = 8;
  EXPECT_EQ(ShellJoin(ClusterCommand(s, Options())),
            "mpirun -np 16 --hostfile HOSTFILE --map-by ppr:8:node --bind-to numa -x LD_LIBRARY_PATH "
            "-x NCCL_DEBUG=WARN --timeout 130 shardplan-validate-worker plan.yaml --backend cuda --ranks all "
            "--timeout 120 --iters 2");
  s.launcher = "srun";
  s.np = 12;  // a partial last node
  EXPECT_EQ(ShellJoin(ClusterCommand(s, Options())),
            "srun --nodes 2 --ntasks 12 --ntasks-per-node 8 --gpus-per-node 8 --kill-on-bad-exit=1 --mpi=pmix "
            "shardplan-validate-worker plan.yaml --backend cuda --ranks all --timeout 120 --iters 2");
}

TEST(LaunchCommandTest, ShellJoinQuotes) {
  EXPECT_EQ(ShellJoin({"a", "24 GiB", "it's", "", "x=1,2"}), "a '24 GiB' 'it'\\''s' '' x=1,2");
}

TEST(LaunchCommandTest, FindOnPath) {
  EXPECT_TRUE(FindOnPath("sh").has_value());
  EXPECT_FALSE(FindOnPath("no-such-program-shardplan").has_value());
}

}  // namespace
}  // namespace shardplan::validate
