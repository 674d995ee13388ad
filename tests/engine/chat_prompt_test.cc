// ChatPrompt under --tokenizer-mode: deepseek_v32 is DeepSeek-V3.2's encoder for any model and
// over any template (vLLM's DeepseekV32Tokenizer), hf never the encoder, auto the encoder for a
// DeepseekV32ForCausalLM without a template; other modes are refused naming the valid ones.
#include "ctxpar/engine/chat_prompt.h"

#include <gtest/gtest.h>

#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/tokenizer_loader.h"

namespace ctxpar::engine {
namespace {

using nlohmann::ordered_json;

const std::string kFixtures = CTXPAR_FIXTURES_DIR;
// What DeepSeek-V3.2's encoder writes for one user message in chat mode.
constexpr const char* kEncoded = "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜></think>";

std::string render(const ChatPrompt& chat) {
  chat_template::ChatRequest r;
  r.messages = ordered_json::array({{{"role", "user"}, {"content", "hi"}}});
  r.add_generation_prompt = true;
  return chat.render(std::move(r));
}

ChatPrompt prompt(const std::string& model, const std::string& tokenizer_dir, TokenizerMode mode,
                  const std::string& chat_template = "") {
  return ChatPrompt(load_tokenizer(model, tokenizer_dir), model::resolve_model_config(model),
                    chat_template, mode);
}

TEST(ChatPrompt, TokenizerModesAreVllmsAndOthersAreRefused) {
  EXPECT_EQ(parse_tokenizer_mode("auto"), TokenizerMode::kAuto);
  EXPECT_EQ(parse_tokenizer_mode("hf"), TokenizerMode::kHf);
  EXPECT_EQ(parse_tokenizer_mode("deepseek_v32"), TokenizerMode::kDeepSeekV32);
  for (const char* mode : {"slow", "mistral", "custom", "deepseek_v4", "", "HF"}) {
    try {
      parse_tokenizer_mode(mode);
      ADD_FAILURE() << "'" << mode << "' was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--tokenizer-mode '") + mode +
                                           "' is not supported; use auto, hf or deepseek_v32"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(ChatPrompt, DeepSeekV32ModeEncodesAnyModelOverAnyTemplate) {
  const std::string llama3 = kFixtures + "/tokenizers/llama3";  // has a chat template
  const std::string v32 = kFixtures + "/tiny-deepseek-v32-fixture/config.json";
  // A Llama model with its own template, even with --chat-template: the encoder.
  const std::string llama = "builtin:tiny-llama";
  EXPECT_EQ(render(prompt(llama, "", TokenizerMode::kDeepSeekV32)), kEncoded);
  EXPECT_EQ(render(prompt(llama, llama3, TokenizerMode::kDeepSeekV32, "{{ 'template' }}")),
            kEncoded);
  EXPECT_EQ(render(prompt(llama, llama3, TokenizerMode::kAuto, "{{ 'template' }}")), "template");
  EXPECT_FALSE(
      prompt(llama, llama3, TokenizerMode::kDeepSeekV32).loops_over_message_content(false));
  // DeepseekV32ForCausalLM without a template: auto encodes, hf has no template.
  const std::string gpt2 = kFixtures + "/tokenizers/gpt2";  // no chat template
  EXPECT_EQ(render(prompt(v32, gpt2, TokenizerMode::kAuto)), kEncoded);
  EXPECT_EQ(render(prompt(v32, gpt2, TokenizerMode::kDeepSeekV32)), kEncoded);
  try {
    render(prompt(v32, gpt2, TokenizerMode::kHf));
    ADD_FAILURE() << "hf rendered without a template";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no chat template"), std::string::npos) << e.what();
  }
  // With a template of its own, auto and hf render it; deepseek_v32 still encodes.
  const std::string with_template = render(prompt(v32, llama3, TokenizerMode::kHf));
  EXPECT_NE(with_template.find("<|start_header_id|>user<|end_header_id|>"), std::string::npos);
  EXPECT_EQ(render(prompt(v32, llama3, TokenizerMode::kAuto)), with_template);
  EXPECT_EQ(render(prompt(v32, llama3, TokenizerMode::kDeepSeekV32)), kEncoded);
}

}  // namespace
}  // namespace ctxpar::engine
