// Unicode character classes and case/normal forms with the meaning the Hugging Face
// `tokenizers` crate gives them (Rust's char methods and `regex` classes), from utf8proc's
// tables.
#pragma once

#include <string>
#include <string_view>

namespace ctxpar::tokenizer::unicode {

// The White_Space property: Rust's char::is_whitespace and regex `\s`.
bool is_whitespace(char32_t c);
// Rust regex `\w`: Alphabetic, marks, decimal digits, connector punctuation, ZWNJ/ZWJ.
bool is_word(char32_t c);
// Rust's char::is_numeric: general categories Nd, Nl and No.
bool is_numeric(char32_t c);
// ASCII punctuation or a P* general category (tokenizers' Punctuation pre-tokenizer).
bool is_punctuation(char32_t c);

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };
std::string normalize(std::string_view text, NormalForm form);

// Rust's str::to_lowercase applied per character (no final-sigma rule, as tokenizers does):
// the simple lowercase mapping, and U+0130 → "i̇".
std::string to_lower(std::string_view text);

}  // namespace ctxpar::tokenizer::unicode
