// Models named as vLLM takes them: builtin names and local paths pass through, a Hugging Face
// repo id resolves to its snapshot in a hub cache laid out as huggingface_hub writes it (refs/,
// snapshots/), at a branch, tag or commit, and what cannot be found is an error naming the
// cache and the download command.
#include "ctxpar/model/model_location.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;

// Sets an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

std::string random_hex(std::mt19937& rng, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "0123456789abcdef"[rng() % 16];
  return s;
}

TEST(ModelLocation, HubCacheDirectoryFollowsHuggingFaceHubsVariables) {
  const ScopedEnv hub("HF_HUB_CACHE", std::nullopt), home("HF_HOME", std::nullopt),
      xdg("XDG_CACHE_HOME", "/x/cache"), user("HOME", "/home/u");
  EXPECT_EQ(hf_hub_cache_dir(), "/x/cache/huggingface/hub");
  {
    const ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(hf_hub_cache_dir(), "/home/u/.cache/huggingface/hub");
  }
  const ScopedEnv hf_home("HF_HOME", "/data/hf");
  EXPECT_EQ(hf_hub_cache_dir(), "/data/hf/hub");
  const ScopedEnv hf_hub("HF_HUB_CACHE", "/fast/hub");
  EXPECT_EQ(hf_hub_cache_dir(), "/fast/hub");
}

TEST(ModelLocation, RepoIdsResolveToTheirCachedSnapshotAtABranchTagOrCommit) {
  std::mt19937 rng(std::random_device{}());
  const TempDir cache;
  const ScopedEnv hub("HF_HUB_CACHE", cache.path().string());
  const std::string main_commit = random_hex(rng, 40), tag_commit = random_hex(rng, 40);
  const fs::path repo = cache.path() / "models--Org-1--Model.v2_x";
  write(repo / "refs" / "main", main_commit + "\n");  // huggingface_hub writes no newline; either
  write(repo / "refs" / "v1.0", tag_commit);
  write(repo / "snapshots" / main_commit / "config.json", "{}");
  write(repo / "snapshots" / tag_commit / "config.json", "{}");
  const std::string id = "Org-1/Model.v2_x";
  EXPECT_EQ(locate_model(id), (repo / "snapshots" / main_commit).string());
  EXPECT_EQ(locate_model(id, "main"), (repo / "snapshots" / main_commit).string());
  EXPECT_EQ(locate_model(id, "v1.0"), (repo / "snapshots" / tag_commit).string());
  EXPECT_EQ(locate_model(id, tag_commit), (repo / "snapshots" / tag_commit).string());
  // --download-dir names another cache; a one-name id ("gpt2") has no owner.
  const TempDir other;
  write(other.path() / "models--solo" / "refs" / "main", main_commit);
  write(other.path() / "models--solo" / "snapshots" / main_commit / "config.json", "{}");
  EXPECT_EQ(locate_model("solo", "", other.path().string()),
            (other.path() / "models--solo" / "snapshots" / main_commit).string());

  // Not cached, a revision not cached, an incomplete snapshot: errors naming what is missing
  // and how to fetch it.
  std::string msg = error_of([&] { locate_model("Org-1/Other"); });
  for (const std::string& part :
       std::vector<std::string>{"'Org-1/Other'", (cache.path() / "models--Org-1--Other").string(),
                                "hf download Org-1/Other"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  msg = error_of([&] { locate_model(id, "dev"); });
  for (const std::string& part :
       std::vector<std::string>{"revision 'dev'", (repo / "snapshots" / "dev").string(),
                                "hf download Org-1/Model.v2_x --revision dev"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  fs::remove(repo / "snapshots" / tag_commit / "config.json");
  msg = error_of([&] { locate_model(id, "v1.0"); });
  EXPECT_NE(msg.find("no config.json"), std::string::npos) << msg;
  msg = error_of([&] { locate_model("solo", "", cache.path().string() + "/nowhere"); });
  EXPECT_NE(msg.find("--cache-dir " + cache.path().string() + "/nowhere"), std::string::npos)
      << msg;
}

TEST(ModelLocation, BuiltinNamesAndLocalPathsPassThroughAndOtherNamesAreRefused) {
  const TempDir cache;
  const ScopedEnv hub("HF_HUB_CACHE", cache.path().string());
  EXPECT_EQ(locate_model("builtin:tiny-llama"), "builtin:tiny-llama");
  // A local directory wins over a cached repo of the same name, as in vLLM.
  const TempDir local;
  const std::string dir = local.file("Org/Model");
  write(fs::path(dir) / "config.json", "{}");
  write(cache.path() / "models--x--y" / "refs" / "main", "abc");
  EXPECT_EQ(locate_model(dir), dir);
  for (const char* bad : {"a/b/c", "../up", "org/.hidden", "org/name-", "sp ace/x", "x/"}) {
    const std::string msg = error_of([&] { locate_model(bad); });
    EXPECT_NE(msg.find(fmt::format("'{}'", bad)), std::string::npos) << msg;
    EXPECT_NE(msg.find("repo id (OWNER/NAME)"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ctxpar::model
