#include "ctxpar/model/model_location.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "ctxpar/core/error.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::model {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// huggingface_hub's repo id rule, for the parts a path can hold: names of [A-Za-z0-9._-], not
// starting or ending with '.' or '-', no "..", at most one '/'.
bool is_repo_id(const std::string& id) {
  int names = 0;
  size_t begin = 0;
  while (begin <= id.size()) {
    const size_t slash = id.find('/', begin);
    const std::string name = id.substr(begin, slash == std::string::npos ? slash : slash - begin);
    if (name.empty() || name.find("..") != std::string::npos || name.front() == '.' ||
        name.front() == '-' || name.back() == '.' || name.back() == '-') {
      return false;
    }
    for (char ch : name) {
      const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
      if (!ok) return false;
    }
    ++names;
    if (slash == std::string::npos) break;
    begin = slash + 1;
  }
  return names <= 2;
}

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

std::string hf_hub_cache_dir() {
  if (std::string d = env("HF_HUB_CACHE"); !d.empty()) return d;
  if (std::string d = env("HF_HOME"); !d.empty()) return (fs::path(d) / "hub").string();
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty())
    return (fs::path(d) / "huggingface" / "hub").string();
  return (fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string();
}

namespace {

// The snapshot directory of repo id `name` (a `what`: "model" or "tokenizer") at `revision`
// in the hub cache, which must hold `required_file`.
std::string cached_snapshot(const char* what, const std::string& name, const std::string& revision,
                            const std::string& cache_dir, const char* required_file,
                            const char* revision_flag) {
  std::string folder = "models--";  // huggingface_hub: "/" in the repo id becomes "--"
  for (char ch : name) folder += ch == '/' ? std::string("--") : std::string(1, ch);
  const fs::path repo = fs::path(cache_dir.empty() ? hf_hub_cache_dir() : cache_dir) / folder;
  const std::string rev = revision.empty() ? "main" : revision;
  const std::string fetch = fmt::format(
      "ctxpar does not download models: fetch it with `hf download {}{}{}` (pip install "
      "huggingface_hub) or pass a local directory",
      name, revision.empty() ? "" : " --revision " + revision,
      cache_dir.empty() ? "" : " --cache-dir " + cache_dir);
  std::error_code ec;
  CTXPAR_CHECK_INPUT(fs::is_directory(repo, ec),
                     "{} '{}' is not a local path and not in the Hugging Face cache (no {}); {}",
                     what, name, repo.string(), fetch);
  // A branch or tag names its commit in refs/; a commit hash names its snapshot itself.
  std::string commit = rev;
  if (const fs::path ref = repo / "refs" / rev; fs::is_regular_file(ref, ec))
    commit = first_line(ref);
  const fs::path snapshot = repo / "snapshots" / commit;
  CTXPAR_CHECK_INPUT(!commit.empty() && fs::is_directory(snapshot, ec),
                     "{} '{}' at revision '{}' ({}) is not in the Hugging Face cache (no {}); {}",
                     what, name, rev, revision_flag, snapshot.string(), fetch);
  CTXPAR_CHECK_INPUT(fs::is_regular_file(snapshot / required_file, ec),
                     "the cached snapshot {} of {} '{}' has no {} (an incomplete download?); {}",
                     snapshot.string(), what, name, required_file, fetch);
  return snapshot.string();
}

}  // namespace

std::string locate_model(const std::string& model, const std::string& revision,
                         const std::string& cache_dir) {
  if (is_builtin_model(model)) return model;
  std::error_code ec;
  if (fs::exists(model, ec)) return model;
  CTXPAR_CHECK_INPUT(is_repo_id(model),
                     "model '{}' is neither builtin:NAME, a directory with config.json, a "
                     "config.json file, nor a Hugging Face repo id (OWNER/NAME)",
                     model);
  return cached_snapshot("model", model, revision, cache_dir, "config.json", "--revision");
}

std::string locate_tokenizer(const std::string& tokenizer, const std::string& revision,
                             const std::string& cache_dir) {
  std::error_code ec;
  // Not a repo id: a path, which loading the tokenizer checks.
  if (tokenizer.empty() || fs::exists(tokenizer, ec) || !is_repo_id(tokenizer)) return tokenizer;
  return cached_snapshot("tokenizer", tokenizer, revision, cache_dir, "tokenizer.json",
                         "--tokenizer-revision");
}

}  // namespace ctxpar::model
