// DeepSeek-V3.2's encoder against the reference: deepseek_v32.json holds the prompts of
// vLLM 0.33's copy of the official encoding_dsv32.py, called as vLLM calls it, over chat,
// thinking, tool, developer and prefix conversations (and the conversations it rejects).
#include <gtest/gtest.h>

#include "chat_template/fixtures.h"
#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/deepseek_v32_encoder.h"

namespace ctxpar::chat_template {
namespace {

const nlohmann::ordered_json& dsv32_fixture() {
  static const nlohmann::ordered_json fixture = testing::load_fixture_json("deepseek_v32.json");
  return fixture;
}

struct Dsv32Case {
  size_t index;
  std::string name;
};

void PrintTo(const Dsv32Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Dsv32Case> dsv32_cases() {
  std::vector<Dsv32Case> out;
  const auto& cases = dsv32_fixture()["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string name = cases[i]["name"].get<std::string>();
    for (const auto& [k, v] : cases[i]["chat_template_kwargs"].items()) name += "__" + k;
    out.push_back({i, testing::test_name(name)});
  }
  return out;
}

class DeepseekV32Encoder : public ::testing::TestWithParam<Dsv32Case> {};

TEST_P(DeepseekV32Encoder, MatchesReference) {
  const auto& c = dsv32_fixture()["cases"][GetParam().index];
  ChatRequest request;
  request.messages = c["messages"];
  request.tools = c["tools"];
  request.chat_template_kwargs = c["chat_template_kwargs"];
  if (c.contains("expected")) {
    EXPECT_EQ(encode_deepseek_v32(request), c["expected"].get<std::string>());
  } else {
    EXPECT_THROW(encode_deepseek_v32(request), InputError) << c["error"].get<std::string>();
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, DeepseekV32Encoder, ::testing::ValuesIn(dsv32_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(DeepseekV32Encoder, RejectsMalformedRequests) {
  ChatRequest request;
  EXPECT_THROW(encode_deepseek_v32(request), InputError);  // no messages
  request.messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "hi"},
          {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "[1, 2]"}}]}])");
  EXPECT_THROW(encode_deepseek_v32(request), InputError);  // arguments not an object
  request.messages[1]["tool_calls"][0]["function"]["arguments"] = "{not json";
  EXPECT_THROW(encode_deepseek_v32(request), InputError);
  request.messages[1]["tool_calls"][0]["function"]["arguments"] = "{\"x\": 1}";
  EXPECT_NO_THROW(encode_deepseek_v32(request));
}

}  // namespace
}  // namespace ctxpar::chat_template
