// UTF-8 helpers for the tokenizer: decoding, encoding, and the lossy repair that makes any
// byte string valid text (what Rust's String::from_utf8_lossy and Python's
// bytes.decode("utf-8", "replace") do).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ctxpar::tokenizer::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Bytes of the character whose lead byte is `lead` in valid UTF-8 (1 to 4).
inline size_t char_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// The code point starting at s[i] of valid UTF-8; i moves past it.
char32_t decode(std::string_view s, size_t& i);

// The code point of a string that holds exactly one character of valid UTF-8.
char32_t decode_single(std::string_view s);

void append(std::string& out, char32_t c);

bool is_valid(std::string_view bytes);

// `bytes` with every maximal invalid subsequence (Unicode §3.9, "best practice") replaced
// by one U+FFFD: a byte that cannot start a character, or the longest prefix of a
// well-formed sequence that is cut short. Valid input is returned unchanged.
std::string repair(std::string_view bytes);

// Number of bytes at the end of `bytes` that are a well-formed but unfinished character
// (0 when the text ends at a character boundary or in invalid bytes).
size_t unfinished_suffix(std::string_view bytes);

}  // namespace ctxpar::tokenizer::utf8
