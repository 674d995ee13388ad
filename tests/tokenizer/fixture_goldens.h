// The golden.json files of tests/fixtures/tokenizers (tools/make_tokenizer_fixtures.py): what
// the Python `tokenizers` package computed for each fixture tokenizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ctxpar::tokenizer::test {

struct EncodeCase {
  std::string text;  // the input bytes (invalid UTF-8 for the bytes_hex cases)
  bool invalid_utf8 = false;
  std::vector<int32_t> ids, ids_no_special;
  std::string decoded, decoded_with_special;
};

struct DecodeCase {
  std::vector<int32_t> ids;
  std::string text, text_with_special;
};

struct FixtureConfig {
  std::optional<std::string> bos_token, eos_token;
  std::optional<int32_t> bos_token_id, eos_token_id;
  bool add_bos_token = false, add_eos_token = false;
  std::vector<int32_t> generation_eos_token_ids;
  std::vector<std::string> chat_template_names;
};

struct FixtureGoldens {
  std::string name, dir;
  std::vector<EncodeCase> encode;
  std::vector<DecodeCase> decode;
  std::vector<std::pair<int32_t, std::optional<std::string>>> id_to_token;
  int32_t vocab_size = 0;
  FixtureConfig config;
};

// The fixture names (directories under tests/fixtures/tokenizers).
std::vector<std::string> fixture_names();
FixtureGoldens load_goldens(const std::string& name);

}  // namespace ctxpar::tokenizer::test
