// Hub ids through a fake Hugging Face cache laid out as huggingface_hub writes it: refs/
// holding commit hashes, snapshots/<hash>/config.json symlinked into blobs/.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <unistd.h>

#include "configs/builtin.h"
#include "planner/io/hub_cache.h"
#include "planner/io/model_reader.h"

namespace shardplan {
namespace {
namespace fs = std::filesystem;

const std::string kMain = "0123456789abcdef0123456789abcdef01234567";
const std::string kV2 = "fedcba9876543210fedcba9876543210fedcba98";
// Two layers, hidden 256, four heads, vocab 1000: embedding 256,000 + 2 x (attention 262,144
// + MLP 393,216 + norms 512) + final norm 256 + head 256,000.
const char* kTinyConfig =
    R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 1000})";
constexpr int64_t kTinyParams = 1'824'000;

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Sets environment variables for one test and puts the old values back.
class Env {
 public:
  void Set(const char* name, const std::string& value) {
    Save(name);
    setenv(name, value.c_str(), 1);
  }
  void Unset(const char* name) {
    Save(name);
    unsetenv(name);
  }
  ~Env() {
    for (auto& [name, old] : saved_) {
      if (old) setenv(name.c_str(), old->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }

 private:
  void Save(const char* name) {
    if (saved_.count(name)) return;
    const char* v = std::getenv(name);
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

class HubCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("shardplan_hub_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    cache_ = root_ / "hub";
    // main -> the built-in Llama 3.1 8B config; v2 -> the tiny one. Both are symlinks into
    // blobs/, named by content as the real cache names them.
    const fs::path repo = cache_ / "models--acme--llama-8b";
    Write(repo / "blobs" / "a1b2c3", std::string(FindBuiltin("models", "llama-3.1-8b")->content));
    Write(repo / "blobs" / "d4e5f6", kTinyConfig);
    Write(repo / "refs" / "main", kMain);  // huggingface_hub writes no trailing newline
    Write(repo / "refs" / "v2", kV2 + "\n");
    for (const auto& [hash, blob] : {std::pair{kMain, "a1b2c3"}, std::pair{kV2, "d4e5f6"}}) {
      fs::create_directories(repo / "snapshots" / hash);
      fs::create_symlink(fs::path("../../blobs") / blob, repo / "snapshots" / hash / "config.json");
    }
    env_.Unset("HUGGINGFACE_HUB_CACHE");
    env_.Unset("XDG_CACHE_HOME");
    env_.Set("HF_HUB_CACHE", cache_.string());
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_, cache_;
  Env env_;
};

TEST_F(HubCache, ParsesIdsAndLeavesPathsAlone) {
  auto id = ParseHubId("meta-llama/Llama-3.1-8B@refs/pr/3");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->repo, "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(id->revision, "refs/pr/3");
  EXPECT_EQ(ParseHubId("Qwen/Qwen2.5-7B")->revision, "");
  for (const char* not_id : {"llama-3.1-8b", "./models/config.json", "/abs/config", "dir/config.json", "a/b/c",
                             "models/x.yaml", "org/name@", "org/name@../../etc", "../x"})
    EXPECT_FALSE(ParseHubId(not_id).has_value()) << not_id;
}

TEST_F(HubCache, MainRefThroughTheBlobSymlink) {
  auto m = LoadModel("acme/llama-8b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "acme/llama-8b");
  EXPECT_EQ(CountParams(*m).total, 8'030'261'248);  // the same bytes as the built-in llama-3.1-8b
}

TEST_F(HubCache, NamedRevisionAndCommitHash) {
  auto v2 = LoadModel("acme/llama-8b@v2");
  ASSERT_TRUE(v2.ok()) << v2.status().message();
  EXPECT_EQ(v2->name, "acme/llama-8b@v2");
  EXPECT_EQ(v2->layers, 2);
  EXPECT_EQ(CountParams(*v2).total, kTinyParams);
  auto by_hash = LoadModel("acme/llama-8b@" + kV2);  // no ref names it: the snapshot itself
  ASSERT_TRUE(by_hash.ok()) << by_hash.status().message();
  EXPECT_EQ(CountParams(*by_hash).total, kTinyParams);
}

TEST_F(HubCache, HubCacheBeatsHfHome) {
  env_.Set("HF_HOME", (root_ / "elsewhere").string());
  EXPECT_EQ(HubCacheDir(), cache_.string());
  env_.Unset("HF_HUB_CACHE");
  EXPECT_EQ(HubCacheDir(), (root_ / "elsewhere" / "hub").string());
  EXPECT_FALSE(LoadModel("acme/llama-8b").ok());  // HF_HOME/hub holds nothing
  env_.Set("HF_HOME", root_.string());            // root_/hub is the cache
  auto m = LoadModel("acme/llama-8b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 8'030'261'248);
  env_.Unset("HF_HOME");
  env_.Set("HOME", root_.string());
  EXPECT_EQ(HubCacheDir(), (root_ / ".cache" / "huggingface" / "hub").string());
}

TEST_F(HubCache, MissingConfigSaysHowToFetchIt) {
  auto repo = LoadModel("acme/other-model");
  ASSERT_EQ(repo.status().code(), Code::kBadInput);
  EXPECT_NE(repo.status().message().find("`hf download acme/other-model config.json`"), std::string::npos)
      << repo.status().message();
  EXPECT_NE(repo.status().message().find("no folder models--acme--other-model"), std::string::npos);

  auto rev = LoadModel("acme/llama-8b@v3");
  ASSERT_EQ(rev.status().code(), Code::kBadInput);
  EXPECT_NE(rev.status().message().find("`hf download acme/llama-8b config.json --revision v3`"), std::string::npos)
      << rev.status().message();

  // A snapshot whose config.json symlink points at a blob not downloaded is not cached.
  fs::remove(cache_ / "models--acme--llama-8b" / "blobs" / "d4e5f6");
  auto dangling = LoadModel("acme/llama-8b@v2");
  ASSERT_EQ(dangling.status().code(), Code::kBadInput);
  EXPECT_NE(dangling.status().message().find("snapshot fedcba987654 has no config.json"), std::string::npos)
      << dangling.status().message();
}

TEST_F(HubCache, PathsAndBuiltinsComeFirst) {
  // A local model folder with config.json is a path, named by the folder.
  const fs::path folder = root_ / "my-model";
  Write(folder / "config.json", kTinyConfig);
  auto m = LoadModel(folder.string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "my-model");
  EXPECT_EQ(CountParams(*m).total, kTinyParams);
  auto built_in = LoadModel("llama-3.1-8b");
  ASSERT_TRUE(built_in.ok());
  EXPECT_EQ(built_in->name, "llama-3.1-8b");
}

}  // namespace
}  // namespace shardplan
