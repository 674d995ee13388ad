// --chat-template-content-format: the names vLLM takes, and the content each format hands the
// chat template (vLLM's _parse_chat_message_content: text parts joined with "\n" for string,
// {"type": "text", "text": ...} parts for openai, a string content as one part, null as none).
#include "ctxpar/server/chat_content_format.h"

#include <gtest/gtest.h>

#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/server/api_error.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

TEST(ChatContentFormat, NamesAreVllmsAndOthersAreRefused) {
  EXPECT_EQ(parse_chat_content_format("auto"), ChatContentFormat::kAuto);
  EXPECT_EQ(parse_chat_content_format("string"), ChatContentFormat::kString);
  EXPECT_EQ(parse_chat_content_format("openai"), ChatContentFormat::kOpenAi);
  for (const char* name : {"", "String", "text", "hf"}) {
    try {
      parse_chat_content_format(name);
      ADD_FAILURE() << "'" << name << "' was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--chat-template-content-format '") + name +
                                           "' is not supported; use auto, string or openai"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(ChatContentFormat, EachFormatsContent) {
  const json parts = {{"role", "user"},
                      {"content", json::array({{{"type", "text"}, {"text", "a"}},
                                               {{"type", "text"}, {"text", "b"}}})}};
  const json text = {{"role", "user"}, {"content", "hi"}};
  const json null = {{"role", "assistant"}, {"content", nullptr}};
  const json none = {{"role", "assistant"}};
  EXPECT_EQ(template_content(parts, 0, ChatContentFormat::kString), "a\nb");
  EXPECT_EQ(template_content(text, 0, ChatContentFormat::kString), "hi");
  EXPECT_EQ(template_content(null, 0, ChatContentFormat::kString), "");
  EXPECT_EQ(template_content(none, 0, ChatContentFormat::kString), "");
  EXPECT_EQ(template_content(parts, 0, ChatContentFormat::kOpenAi).dump(),
            R"([{"type":"text","text":"a"},{"type":"text","text":"b"}])");
  EXPECT_EQ(template_content(text, 0, ChatContentFormat::kOpenAi).dump(),
            R"([{"type":"text","text":"hi"}])");
  EXPECT_EQ(template_content(null, 0, ChatContentFormat::kOpenAi), ordered_json::array());
  EXPECT_EQ(template_content(none, 0, ChatContentFormat::kOpenAi), ordered_json::array());
  // Content that is not text is refused in either format.
  const json image = {{"role", "user"},
                      {"content", json::array({{{"type", "image_url"}, {"image_url", "x"}}})}};
  for (const ChatContentFormat f : {ChatContentFormat::kString, ChatContentFormat::kOpenAi}) {
    EXPECT_THROW(template_content(image, 3, f), ApiError);
  }
}

}  // namespace
}  // namespace ctxpar::server
