#include "tokenizer/fixture_goldens.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ctxpar/tokenizer/json_node.h"

namespace ctxpar::tokenizer::test {
namespace {

std::string fixtures_root() {
  return std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers";
}

std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

template <typename T>
std::optional<T> optional_of(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<T>();
}

}  // namespace

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(fixtures_root())) {
    if (std::filesystem::exists(entry.path() / "golden.json")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

FixtureGoldens load_goldens(const std::string& name) {
  FixtureGoldens g;
  g.name = name;
  g.dir = fixtures_root() + "/" + name;
  const nlohmann::json j = read_json_file(g.dir + "/golden.json");
  for (const auto& c : j.at("encode")) {
    EncodeCase e;
    if (c.contains("bytes_hex")) {
      e.text = from_hex(c.at("bytes_hex").get<std::string>());
      e.invalid_utf8 = true;
    } else {
      e.text = c.at("text").get<std::string>();
    }
    e.ids = c.at("ids").get<std::vector<int32_t>>();
    e.ids_no_special = c.at("ids_no_special").get<std::vector<int32_t>>();
    e.decoded = c.at("decoded").get<std::string>();
    e.decoded_with_special = c.at("decoded_with_special").get<std::string>();
    g.encode.push_back(std::move(e));
  }
  for (const auto& c : j.at("decode")) {
    g.decode.push_back({c.at("ids").get<std::vector<int32_t>>(), c.at("text").get<std::string>(),
                        c.at("text_with_special").get<std::string>()});
  }
  for (const auto& p : j.at("id_to_token")) {
    g.id_to_token.emplace_back(p.at(0).get<int32_t>(), optional_of<std::string>(p.at(1)));
  }
  g.vocab_size = j.at("vocab_size").get<int32_t>();
  const auto& c = j.at("config");
  g.config.bos_token = optional_of<std::string>(c.at("bos_token"));
  g.config.eos_token = optional_of<std::string>(c.at("eos_token"));
  g.config.bos_token_id = optional_of<int32_t>(c.at("bos_token_id"));
  g.config.eos_token_id = optional_of<int32_t>(c.at("eos_token_id"));
  g.config.add_bos_token = c.at("add_bos_token").get<bool>();
  g.config.add_eos_token = c.at("add_eos_token").get<bool>();
  g.config.generation_eos_token_ids = c.at("generation_eos_token_ids").get<std::vector<int32_t>>();
  g.config.chat_template_names = c.at("chat_template_names").get<std::vector<std::string>>();
  return g;
}

}  // namespace ctxpar::tokenizer::test
