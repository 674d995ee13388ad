#include "tokenizer/temp_dir.h"

#include <fmt/format.h>

#include <fstream>
#include <random>

namespace ctxpar::tokenizer::test {

TempDir::TempDir()
    : path_(std::filesystem::temp_directory_path() /
            fmt::format("ctxpar-tokenizer-test-{}", std::random_device{}())) {
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& contents) const {
  const std::filesystem::path p = path_ / name;
  std::ofstream(p, std::ios::binary) << contents;
  return p.string();
}

std::string TempDir::write_json(const std::string& name, const nlohmann::json& json) const {
  return write(name, json.dump());
}

void TempDir::copy_fixture(const std::string& fixture) const {
  const std::filesystem::path from =
      std::filesystem::path(CTXPAR_FIXTURES_DIR) / "tokenizers" / fixture;
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    std::filesystem::copy_file(entry.path(), path_ / entry.path().filename(),
                               std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace ctxpar::tokenizer::test
