// Shared by the tool-call parser tests: random text, a text streamed through a ToolCallStream
// in random pieces, and the checks of a whole output's split and of two lists of calls.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server::test {

// n characters drawn from `alphabet`.
inline std::string random_text(std::mt19937_64& rng, size_t n, std::string_view alphabet) {
  std::string t;
  for (size_t i = 0; i < n; ++i) t += alphabet[rng() % alphabet.size()];
  return t;
}

// `text` streamed through a new ToolCallStream in pieces of 1 to max_piece bytes, the last one
// finishing: every delta's content and calls, in order. Expects the stream to count each call
// it sent.
inline ToolCallStream::Delta stream_in_random_pieces(ToolCallParser parser,
                                                     const nlohmann::json* tools,
                                                     std::string_view text, std::mt19937_64& rng,
                                                     size_t max_piece) {
  ToolCallStream stream(parser, tools);
  ToolCallStream::Delta all;
  for (size_t at = 0; at < text.size();) {
    const size_t len = std::min(text.size() - at, size_t{1} + rng() % max_piece);
    ToolCallStream::Delta d = stream.add(text.substr(at, len), at + len == text.size());
    all.content += d.content;
    for (ToolCall& c : d.calls) all.calls.push_back(std::move(c));
    at += len;
  }
  EXPECT_EQ(stream.calls_sent(), static_cast<int>(all.calls.size()));
  return all;
}

// The same calls (names and argument texts) in the same order.
inline void expect_same_calls(const std::vector<ToolCall>& got, const std::vector<ToolCall>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].name, want[k].name) << "call " << k;
    EXPECT_EQ(got[k].arguments, want[k].arguments) << "call " << k;
  }
}

// A whole output split into this content and exactly these calls (name, arguments as JSON
// text), each with a vLLM-style id.
inline void expect_split(const ToolCallSplit& got, const std::optional<std::string>& content,
                         const std::vector<std::pair<std::string, std::string>>& calls) {
  EXPECT_EQ(got.content, content);
  ASSERT_EQ(got.calls.size(), calls.size());
  for (size_t k = 0; k < calls.size(); ++k) {
    EXPECT_EQ(got.calls[k].name, calls[k].first) << k;
    EXPECT_EQ(got.calls[k].arguments, calls[k].second) << k;
    EXPECT_EQ(got.calls[k].id.rfind("chatcmpl-tool-", 0), 0u);
  }
}

// No calls: the whole text is the content.
inline void expect_content(const ToolCallSplit& got, std::string_view text) {
  EXPECT_TRUE(got.calls.empty()) << text;
  EXPECT_EQ(got.content, std::string(text));
}

}  // namespace ctxpar::server::test
