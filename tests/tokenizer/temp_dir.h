// A fresh directory under the system temp directory, removed with everything in it when the
// object goes away; for tests that write tokenizer files.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace ctxpar::tokenizer::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& contents) const;
  std::string write_json(const std::string& name, const nlohmann::json& json) const;
  // Copies the files of tests/fixtures/tokenizers/`fixture` here.
  void copy_fixture(const std::string& fixture) const;

 private:
  std::filesystem::path path_;
};

}  // namespace ctxpar::tokenizer::test
