// Broken or unsupported tokenizer files fail at load with one message naming the file, the
// JSON path of the bad field and what would be valid.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/hf_tokenizer.h"
#include "ctxpar/tokenizer/json_node.h"
#include "ctxpar/tokenizer/tokenizer_files.h"
#include "tokenizer/temp_dir.h"

namespace ctxpar::tokenizer {
namespace {

using json = nlohmann::json;

json fixture_json(const std::string& fixture, const std::string& file = "tokenizer.json") {
  return read_json_file(std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/" + fixture + "/" + file);
}

// The message of loading `tokenizer_json`; fails the test when it loads.
std::string load_error(const json& tokenizer_json, const test::TempDir& dir) {
  const std::string path = dir.write_json("tokenizer.json", tokenizer_json);
  try {
    HfTokenizer::from_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded without error";
  return "";
}

void expect_contains(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts) {
    EXPECT_NE(message.find(p), std::string::npos) << "missing '" << p << "' in: " << message;
  }
}

struct BadField {
  std::string name;
  std::string fixture;
  std::function<void(json&)> edit;
  std::vector<std::string> message;  // parts the error must contain (besides the file)
};

class BadTokenizerJson : public ::testing::TestWithParam<BadField> {};

TEST_P(BadTokenizerJson, ErrorNamesFileAndField) {
  const BadField& c = GetParam();
  json j = fixture_json(c.fixture);
  c.edit(j);
  const test::TempDir dir;
  const std::string err = load_error(j, dir);
  expect_contains(err, {(dir.path() / "tokenizer.json").string()});
  for (const std::string& part : c.message) expect_contains(err, {part});
}

const std::vector<BadField> kBadFields = {
    {"UnknownModel",
     "gpt2",
     [](json& j) { j["model"]["type"] = "Unigram"; },
     {"model.type", "'Unigram'", "supported: BPE"}},
    {"MissingModel", "gpt2", [](json& j) { j.erase("model"); }, {"'model' is missing"}},
    {"UnknownPreTokenizerInSequence",
     "llama3",
     [](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["type"] = "UnicodeScripts"; },
     {"pre_tokenizer.pretokenizers[1].type", "UnicodeScripts", "Metaspace"}},
    {"UnknownNormalizer",
     "qwen2",
     [](json& j) { j["normalizer"]["type"] = "Precompiled"; },
     {"normalizer.type", "Precompiled", "NFKC"}},
    {"UnknownDecoder",
     "gpt2",
     [](json& j) {
       j["decoder"] = {{"type", "CTC"}};
     },
     {"decoder.type", "CTC", "ByteFallback"}},
    {"UnknownPostProcessor",
     "gpt2",
     [](json& j) {
       j["post_processor"] = {{"type", "Fancy"}};
     },
     {"post_processor.type", "Fancy", "TemplateProcessing"}},
    {"BoolOfWrongType",
     "llama2",
     [](json& j) { j["model"]["byte_fallback"] = "yes"; },
     {"model.byte_fallback", "true or false", "\"yes\""}},
    {"VocabIdNotInteger",
     "gpt2",
     [](json& j) { j["model"]["vocab"]["!"] = "zero"; },
     {"model.vocab", "'!'", "integer"}},
    {"MergeOfUnknownToken",
     "llama3",
     [](json& j) {
       j["model"]["merges"][3] = json::array({"nope-not-a-token", "e"});
     },
     {"model.merges[3]", "nope-not-a-token", "not in the vocabulary"}},
    {"LegacyMergeWithoutSpace",
     "gpt2",
     [](json& j) { j["model"]["merges"][0] = "ab"; },
     {"model.merges[0]", "\"a b\""}},
    {"MergeOfWrongShape",
     "qwen2",
     [](json& j) { j["model"]["merges"][2] = 7; },
     {"model.merges[2]", "[\"a\", \"b\"]"}},
    {"Dropout",
     "gpt2",
     [](json& j) { j["model"]["dropout"] = 0.1; },
     {"model.dropout", "not supported"}},
    {"BadRegex",
     "llama3",
     [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "([a-z"; },
     {"pre_tokenizer.pretokenizers[0].pattern.Regex", "does not compile"}},
    {"PatternOfNeitherForm",
     "llama3",
     [](json& j) {
       j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Glob", "*"}};
     },
     {"pre_tokenizer.pretokenizers[0].pattern", "String", "Regex"}},
    {"BadSplitBehavior",
     "llama3",
     [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Dropped"; },
     {"pre_tokenizer.pretokenizers[0].behavior", "Dropped", "MergedWithNext"}},
    {"MissingInvert",
     "llama3",
     [](json& j) { j["pre_tokenizer"]["pretokenizers"][0].erase("invert"); },
     {"pre_tokenizer.pretokenizers[0]", "'invert' is missing"}},
    {"BadPrependScheme",
     "mistral",
     [](json& j) { j["pre_tokenizer"]["prepend_scheme"] = "some"; },
     {"pre_tokenizer.prepend_scheme", "'some'", "always, first, never"}},
    {"TemplateWithUnknownToken",
     "llama3",
     [](json& j) {
       j["post_processor"]["processors"][1]["single"][0]["SpecialToken"]["id"] = "<nope>";
     },
     {"post_processor.processors[1].single[0]", "<nope>", "special_tokens"}},
    {"AddedTokenWithoutContent",
     "qwen2",
     [](json& j) { j["added_tokens"][0].erase("content"); },
     {"added_tokens[0]", "'content' is missing"}},
    {"UnknownVersion", "gpt2", [](json& j) { j["version"] = "2.0"; }, {"version", "'2.0'", "1.0"}},
    {"NotAnObject",
     "gpt2",
     [](json& j) {
       j = json::array({1, 2});
     },
     {"JSON object"}},
};

INSTANTIATE_TEST_SUITE_P(Fields, BadTokenizerJson, ::testing::ValuesIn(kBadFields),
                         [](const auto& p) { return p.param.name; });

TEST(BadTokenizerFile, MissingMalformedAndTruncatedFiles) {
  const test::TempDir dir;
  try {
    HfTokenizer::from_file((dir.path() / "nothing.json").string());
    ADD_FAILURE() << "a missing file loaded";
  } catch (const Error& e) {
    expect_contains(e.what(), {"nothing.json", "cannot be opened"});
  }
  const std::string full = fixture_json("llama3").dump();
  for (const size_t keep :
       {size_t{0}, size_t{1}, full.size() / 3, full.size() / 2, full.size() - 1}) {
    const std::string path = dir.write("cut.json", full.substr(0, keep));
    try {
      HfTokenizer::from_file(path);
      ADD_FAILURE() << "a file cut at " << keep << " bytes loaded";
    } catch (const Error& e) {
      expect_contains(e.what(), {path, "not valid JSON"});
    }
  }
}

TEST(BadTokenizerFile, DirectoryWithoutTokenizerJson) {
  const test::TempDir dir;
  dir.write("tokenizer.model", "sentencepiece bytes");
  try {
    load_hf_tokenizer(dir.path().string(), "");
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    expect_contains(e.what(), {dir.path().string(), "no tokenizer.json", "tokenizer.model"});
  }
}

struct BadConfig {
  std::string name;
  std::string file;  // tokenizer_config.json or generation_config.json
  std::function<void(json&)> edit;
  std::vector<std::string> message;
};

class BadConfigFile : public ::testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigFile, ErrorNamesFileAndField) {
  const BadConfig& c = GetParam();
  const test::TempDir dir;
  dir.copy_fixture("llama3");
  json j = fixture_json("llama3", c.file);
  c.edit(j);
  const std::string path = dir.write_json(c.file, j);
  try {
    load_hf_tokenizer(dir.path().string(), dir.path().string());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    expect_contains(e.what(), {path});
    for (const std::string& part : c.message) expect_contains(e.what(), {part});
  }
}

const std::vector<BadConfig> kBadConfigs = {
    {"AddBosNotBool",
     "tokenizer_config.json",
     [](json& j) {
       j["tokenizer_class"] = "LlamaTokenizerFast";
       j["add_bos_token"] = "yes";
     },
     {"add_bos_token", "true or false"}},
    {"AddBosWithoutBosToken",
     "tokenizer_config.json",
     [](json& j) {
       j["tokenizer_class"] = "LlamaTokenizerFast";
       j.erase("bos_token");
     },
     {"add_bos_token is true", "bos_token"}},
    {"BosTokenOfWrongType",
     "tokenizer_config.json",
     [](json& j) { j["bos_token"] = 5; },
     {"bos_token", "token string"}},
    {"TemplateListWithoutName",
     "tokenizer_config.json",
     [](json& j) {
       j["chat_template"] = json::array({{{"template", "x"}}});
     },
     {"chat_template[0]", "'name' is missing"}},
    {"TemplateOfWrongType",
     "tokenizer_config.json",
     [](json& j) { j["chat_template"] = 3; },
     {"chat_template", "array"}},
    {"GenerationEosNotAnId",
     "generation_config.json",
     [](json& j) {
       j["eos_token_id"] = json::array({1, "two"});
     },
     {"eos_token_id[1]", "integer"}},
    {"GenerationTemperatureNotNumber",
     "generation_config.json",
     [](json& j) { j["temperature"] = "hot"; },
     {"temperature", "number"}},
};

INSTANTIATE_TEST_SUITE_P(Fields, BadConfigFile, ::testing::ValuesIn(kBadConfigs),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace ctxpar::tokenizer
