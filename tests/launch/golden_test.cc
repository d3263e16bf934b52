// Golden files pin what `shardplan emit` writes for the plans of test_plans.h. After an
// intended change, rewrite them with SHARDPLAN_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "launch/emit.h"
#include "tests/launch/test_plans.h"

namespace shardplan::launch::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(SHARDPLAN_SOURCE_DIR) / "tests" / "launch" / "golden";

bool UpdateGolden() {
  const char* v = std::getenv("SHARDPLAN_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Rewrite(const fs::path& dir, const Emitted& e) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const EmittedFile& f : e.files) std::ofstream(dir / f.name, std::ios::binary) << f.text;
}

class GoldenTest : public ::testing::TestWithParam<EmitCase> {};

TEST_P(GoldenTest, MatchesGoldenFiles) {
  const EmitCase& c = GetParam();
  StatusOr<Emitted> e = EmitPlan(c.plan, c.options);
  ASSERT_TRUE(e.ok()) << e.status().message();
  const fs::path dir = kGolden / c.name;
  if (UpdateGolden()) {
    Rewrite(dir, *e);
    GTEST_SKIP() << "rewrote " << dir;
  }
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " missing; run with SHARDPLAN_UPDATE_GOLDEN=1";
  std::set<std::string> emitted;
  for (const EmittedFile& f : e->files) {
    emitted.insert(f.name);
    ASSERT_TRUE(fs::exists(dir / f.name)) << c.name << ": new file " << f.name;
    EXPECT_EQ(ReadFile(dir / f.name), f.text) << c.name << "/" << f.name
                                              << " differs; SHARDPLAN_UPDATE_GOLDEN=1 rewrites it";
  }
  for (const fs::directory_entry& g : fs::directory_iterator(dir))
    EXPECT_TRUE(emitted.count(g.path().filename().string())) << c.name << ": no longer emits " << g.path().filename();
}

INSTANTIATE_TEST_SUITE_P(Plans, GoldenTest, ::testing::ValuesIn(EmitCases()),
                         [](const ::testing::TestParamInfo<EmitCase>& i) { return i.param.name; });

}  // namespace
}  // namespace shardplan::launch::testing
