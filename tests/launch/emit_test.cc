// EmitPlan's choice of files, the launch scripts' rank order, and the all-or-nothing
// output directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launch/emit.h"
#include "launch/launch_script.h"
#include "launch/output_dir.h"
#include "planner/io/document.h"
#include "planner/io/workload_reader.h"
#include "tests/launch/test_plans.h"

namespace shardplan::launch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const EmittedFile* Find(const Emitted& e, const std::string& name) {
  for (const EmittedFile& f : e.files)
    if (f.name == name) return &f;
  return nullptr;
}

Emitted MustEmit(const Plan& p, Format f, Launcher l) {
  EmitOptions o;
  o.format = f;
  o.launcher = l;
  StatusOr<Emitted> e = EmitPlan(p, o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? *e : Emitted{};
}

TEST(EmitTest, AllSkipsWhatAFrameworkCannotExpressAndSaysWhy) {
  const Emitted e = MustEmit(TpPpZero1MultiNode(), Format::kAll, Launcher::kDeepSpeed);
  EXPECT_NE(Find(e, "deepspeed.json"), nullptr);
  EXPECT_NE(Find(e, "torchtitan.toml"), nullptr);
  EXPECT_NE(Find(e, "megatron_args.sh"), nullptr);
  EXPECT_EQ(Find(e, "accelerate_config.yaml"), nullptr);  // accelerate has no pipeline parallelism
  ASSERT_NE(Find(e, "README.md"), nullptr);
  EXPECT_THAT(Find(e, "README.md")->text, HasSubstr("no accelerate config: accelerate: no pipeline"));
}

// A zero-bubble plan is written as torchtitan's schedule; the formats whose engines run
// only 1F1B still write a config, and say it will be slower than planned.
TEST(EmitTest, ZeroBubbleScheduleIsTorchtitansAndTheOthersSaySo) {
  Plan p = TpPpZero1MultiNode();
  p.layout.pp_schedule = PpSchedule::kZbv;
  p.layout.vpp = 2;
  const Emitted e = MustEmit(p, Format::kAll, Launcher::kTorchrun);
  ASSERT_NE(Find(e, "torchtitan.toml"), nullptr);
  EXPECT_THAT(Find(e, "torchtitan.toml")->text, HasSubstr("pipeline_parallel_schedule = \"ZBVZeroBubble\"\n"));
  ASSERT_NE(Find(e, "README.md"), nullptr);
  EXPECT_THAT(Find(e, "README.md")->text, HasSubstr("megatron: no zero-bubble schedule; this config runs 1F1B"));
}

// LitGPT's config: its stack's plans start from it, and the workload reader reads it back to
// the plan's own workload (the keys config_hub's files use). Plans LitGPT's scripts cannot run
// -- ZeRO-2, no recomputation over several GPUs, tensor parallelism -- are refused by rule.
TEST(EmitTest, LitgptConfigReadsBackAsThePlansWorkload) {
  Plan p = LoraSingleGpu();
  p.layout.stack = Stack::kLitgpt;
  p.layout.ac = Recompute::kNone;
  p.workload.master_weights = MasterWeights::kNone;
  p.workload.lora.targets = {"q_proj", "v_proj", "mlp"};
  p.workload.lora.dropout = 0.05;
  const Emitted e = MustEmit(p, Format::kAll, Launcher::kTorchrun);
  const EmittedFile* cfg = Find(e, "litgpt.yaml");
  ASSERT_NE(cfg, nullptr);
  ASSERT_NE(Find(e, "launch.sh"), nullptr);
  EXPECT_THAT(Find(e, "launch.sh")->text, HasSubstr("-m litgpt \\\n  finetune_lora \\\n  --config litgpt.yaml"));
  auto doc = Document::Parse("litgpt.yaml", cfg->text);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message() << "\n" << cfg->text;
  EXPECT_EQ(w->task, Task::kLora);
  EXPECT_EQ(w->precision, Dtype::kBf16);
  EXPECT_EQ(w->master_weights, MasterWeights::kNone);
  EXPECT_EQ(w->seq_len, 4096);
  EXPECT_EQ(w->global_batch, 16);
  EXPECT_EQ(w->micro_batch, 4);
  EXPECT_EQ(w->devices, 1);
  EXPECT_EQ(w->lora.rank, p.workload.lora.rank);
  EXPECT_EQ(w->lora.targets, (std::vector<std::string>{"q_proj", "v_proj", "mlp"}));
  EXPECT_EQ(w->optimizer, Optimizer::kAdamW);

  Plan fsdp = FsdpOneNode();  // ZeRO-3 over 8 with full recomputation: LitGPT's finetune_full
  fsdp.layout.stack = Stack::kLitgpt;
  fsdp.workload.task = Task::kFinetune;
  EmitOptions o;
  o.format = Format::kLitgpt;
  EXPECT_TRUE(EmitPlan(fsdp, o).ok());
  fsdp.layout.zero = 2;
  StatusOr<Emitted> zero2 = EmitPlan(fsdp, o);
  ASSERT_FALSE(zero2.ok());
  EXPECT_THAT(zero2.status().message(), HasSubstr("over several GPUs LitGPT's finetune_full runs FSDP FULL_SHARD"));
  StatusOr<Emitted> tp = EmitPlan(TpPpZero1MultiNode(), o);
  ASSERT_FALSE(tp.ok());
  EXPECT_THAT(tp.status().message(), HasSubstr("run data parallelism alone"));
}

TEST(EmitTest, RequestedFormatThatCannotExpressThePlanIsAnError) {
  EmitOptions o;
  o.format = Format::kAccelerate;
  EXPECT_EQ(EmitPlan(TpPpZero1MultiNode(), o).status().code(), Code::kBadInput);
}

// NVFP4 training is written as Megatron-LM's TE recipe flags; the formats without one say so
// rather than write a bf16 config in its place.
TEST(EmitTest, Nvfp4IsMegatronsAndTheOthersSaySo) {
  Plan p = TpPpZero1MultiNode();
  p.layout.framework = Framework::kMegatron;
  p.workload.precision = Dtype::kFp4;
  const Emitted e = MustEmit(p, Format::kAll, Launcher::kTorchrun);
  ASSERT_NE(Find(e, "megatron_args.sh"), nullptr);
  EXPECT_THAT(Find(e, "megatron_args.sh")->text, HasSubstr("--fp4-format e2m1"));
  EXPECT_THAT(Find(e, "megatron_args.sh")->text, HasSubstr("--fp4-recipe nvfp4"));
  EXPECT_EQ(Find(e, "deepspeed.json"), nullptr);
  EXPECT_THAT(Find(e, "README.md")->text, HasSubstr("no deepspeed config: deepspeed: has no NVFP4 training recipe"));
  EmitOptions o;
  o.format = Format::kTorchtitan;
  EXPECT_EQ(EmitPlan(p, o).status().code(), Code::kBadInput);
}

TEST(LaunchScriptTest, TorchrunMultiNodeUsesNodeRankForTheRankMap) {
  const Emitted e = MustEmit(Zero3NvmeOffload(), Format::kDeepSpeed, Launcher::kTorchrun);
  const std::string& t = Find(e, "launch.sh")->text;
  EXPECT_THAT(t, HasSubstr("--nnodes 2"));
  EXPECT_THAT(t, HasSubstr("--nproc-per-node 8"));
  EXPECT_THAT(t, HasSubstr("--node-rank \"$NODE_RANK\""));
  EXPECT_THAT(t, HasSubstr("--deepspeed_config deepspeed.json"));
  EXPECT_TRUE(Find(e, "launch.sh")->executable);
}

TEST(LaunchScriptTest, DeepSpeedLauncherWritesHostfileInNodeOrder) {
  const Emitted e = MustEmit(TpPpZero1MultiNode(), Format::kDeepSpeed, Launcher::kDeepSpeed);
  const std::string& h = Find(e, "hostfile")->text;
  EXPECT_THAT(h, HasSubstr("node-0 slots=8\nnode-1 slots=8\nnode-2 slots=8\nnode-3 slots=8\n"));
  EXPECT_THAT(Find(e, "launch.sh")->text, HasSubstr("--hostfile hostfile"));
}

TEST(LaunchScriptTest, MpirunMapsEightRanksPerNodeNodeMajor) {
  const Emitted e = MustEmit(TpPpZero1MultiNode(), Format::kMegatron, Launcher::kMpirun);
  const std::string& t = Find(e, "launch.sh")->text;
  EXPECT_THAT(t, HasSubstr("-np 32"));
  EXPECT_THAT(t, HasSubstr("--map-by ppr:8:node"));
  EXPECT_THAT(t, HasSubstr("--rank-by slot"));
  EXPECT_THAT(t, HasSubstr("RANK=$OMPI_COMM_WORLD_RANK"));
  EXPECT_THAT(t, HasSubstr("-x CUDA_DEVICE_MAX_CONNECTIONS"));
  EXPECT_THAT(t, HasSubstr("\"${MEGATRON_ARGS[@]}\""));
}

TEST(LaunchScriptTest, SlurmHeader) {
  const Emitted e = MustEmit(TpPpZero1MultiNode(), Format::kTorchtitan, Launcher::kSlurm);
  const std::string& t = Find(e, "job.sbatch")->text;
  EXPECT_THAT(t, HasSubstr("#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"));
  EXPECT_THAT(t, HasSubstr("--node-rank \"$SLURM_NODEID\""));
  EXPECT_THAT(t, HasSubstr("-m torchtitan.train"));
}

class OutputDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("launch_output_dir_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  int Entries() const { return static_cast<int>(std::distance(fs::directory_iterator(root_), {})); }
  fs::path root_;
  std::vector<EmittedFile> files_ = {{"a.json", "{}\n", false}, {"launch.sh", "#!/bin/sh\n", true}};
};

TEST_F(OutputDirTest, CreatesTheDirectoryWithModes) {
  ASSERT_TRUE(WriteOutputDir((root_ / "out").string(), files_, false).ok());
  EXPECT_EQ(Read(root_ / "out" / "a.json"), "{}\n");
  EXPECT_NE(fs::status(root_ / "out" / "launch.sh").permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_EQ(Entries(), 1);  // no temporary directory left beside it
}

TEST_F(OutputDirTest, RefusesToOverwriteWithoutForce) {
  fs::create_directories(root_ / "out");
  std::ofstream(root_ / "out" / "a.json") << "mine";
  Status s = WriteOutputDir((root_ / "out").string(), files_, false);
  EXPECT_EQ(s.code(), Code::kBadInput);
  EXPECT_THAT(s.message(), HasSubstr("--force"));
  EXPECT_EQ(Read(root_ / "out" / "a.json"), "mine");
  EXPECT_FALSE(fs::exists(root_ / "out" / "launch.sh"));  // nothing half-written
  EXPECT_EQ(Entries(), 1);
}

TEST_F(OutputDirTest, ForceReplacesAndKeepsOtherFiles) {
  fs::create_directories(root_ / "out");
  std::ofstream(root_ / "out" / "a.json") << "old";
  std::ofstream(root_ / "out" / "notes.txt") << "keep";
  ASSERT_TRUE(WriteOutputDir((root_ / "out").string(), files_, true).ok());
  EXPECT_EQ(Read(root_ / "out" / "a.json"), "{}\n");
  EXPECT_EQ(Read(root_ / "out" / "notes.txt"), "keep");
  EXPECT_EQ(Entries(), 1);
}

TEST_F(OutputDirTest, ErrorLeavesNothingBehind) {
  std::ofstream(root_ / "file") << "x";  // the output path is a file
  EXPECT_FALSE(WriteOutputDir((root_ / "file").string(), files_, true).ok());
  files_.push_back({"../escape", "x", false});
  EXPECT_FALSE(WriteOutputDir((root_ / "out").string(), files_, false).ok());
  EXPECT_FALSE(fs::exists(root_ / "out"));
  EXPECT_EQ(Entries(), 1);
}

}  // namespace
}  // namespace shardplan::launch::testing
