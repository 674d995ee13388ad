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

// A streamed piece added to the calls as a client accumulates them: a piece with an id starts
// the next call (its index must be the next one), one without adds to its call's arguments.
inline void add_piece(std::vector<ToolCallPiece>& calls, ToolCallPiece p) {
  if (!p.id.empty()) {
    EXPECT_EQ(p.index, static_cast<int>(calls.size()));
    EXPECT_EQ(p.id.rfind("chatcmpl-tool-", 0), 0u);
    calls.push_back(std::move(p));
    return;
  }
  ASSERT_GE(p.index, 0);
  ASSERT_LT(p.index, static_cast<int>(calls.size()));
  EXPECT_EQ(p.index, static_cast<int>(calls.size()) - 1) << "pieces of an earlier call";
  calls[static_cast<size_t>(p.index)].arguments += p.arguments;
}

// `text` streamed through a new ToolCallStream in pieces of 1 to max_piece bytes, the last one
// finishing: every delta's content, and its calls accumulated as a client does. Expects the stream
// to count each call it sent.
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
    for (ToolCallPiece& p : d.calls) add_piece(all.calls, std::move(p));
    at += len;
  }
  EXPECT_EQ(stream.calls_sent(), static_cast<int>(all.calls.size()));
  return all;
}

// `text` streamed through a new ToolCallStream in pieces of 1 to max_piece bytes cut between
// characters (as detokenized deltas are), the last one finishing: the calls as a client
// accumulates them. Without `repeats`, asserts after every piece that each call's arguments so
// far are a prefix of the same call's in `whole` (the whole response's calls). `sent_at_mark`:
// the first call's argument bytes out once the text up to byte `mark` was given.
struct CharacterStream {
  std::vector<ToolCallPiece> calls;
  size_t sent_at_mark = 0;
};
inline CharacterStream stream_by_characters(ToolCallParser parser, const nlohmann::json* tools,
                                            std::string_view text, std::mt19937_64& rng,
                                            size_t max_piece, const std::vector<ToolCall>& whole,
                                            bool repeats, size_t mark) {
  ToolCallStream stream(parser, tools);
  CharacterStream out;
  for (size_t at = 0; at < text.size();) {
    size_t len = std::min(text.size() - at, size_t{1} + rng() % max_piece);
    while (at + len < text.size() && (static_cast<unsigned char>(text[at + len]) & 0xC0) == 0x80)
      ++len;
    ToolCallStream::Delta d = stream.add(text.substr(at, len), at + len == text.size());
    for (ToolCallPiece& p : d.calls) add_piece(out.calls, std::move(p));
    for (size_t k = 0; !repeats && k < out.calls.size() && k < whole.size(); ++k) {
      EXPECT_EQ(
          whole[k].arguments.compare(0, out.calls[k].arguments.size(), out.calls[k].arguments), 0)
          << out.calls[k].arguments << "\nis no prefix of\n"
          << whole[k].arguments;
    }
    at += len;
    if (at <= mark) out.sent_at_mark = out.calls.empty() ? 0 : out.calls[0].arguments.size();
  }
  return out;
}

// The same calls (names and argument texts) in the same order.
template <class Got>
void expect_same_calls(const std::vector<Got>& got, const std::vector<ToolCall>& want) {
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
