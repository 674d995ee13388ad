#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer::utf8 {
namespace {

// For a lead byte: the sequence length and the range of the second byte (Unicode Table 3-7:
// E0 and F0 exclude overlong forms, ED excludes surrogates, F4 stops at U+10FFFF). Length 0:
// the byte cannot start a character.
struct Lead {
  size_t length;
  unsigned char lo, hi;
};

Lead lead_of(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// How many bytes from s[i] form a well-formed prefix of a character, and whether that prefix
// is the whole character.
size_t valid_prefix(std::string_view s, size_t i, bool& complete) {
  const Lead lead = lead_of(static_cast<unsigned char>(s[i]));
  complete = false;
  if (lead.length == 0) return 0;
  if (lead.length == 1) {
    complete = true;
    return 1;
  }
  size_t k = 1;
  for (; k < lead.length && i + k < s.size(); ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char lo = k == 1 ? lead.lo : 0x80, hi = k == 1 ? lead.hi : 0xBF;
    if (b < lo || b > hi) return k;
  }
  complete = k == lead.length;
  return k;
}

}  // namespace

char32_t decode(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const size_t n = char_length(b0);
  char32_t c = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return c;
}

char32_t decode_single(std::string_view s) {
  size_t i = 0;
  return decode(s, i);
}

void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

bool is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    bool complete = false;
    const size_t n = valid_prefix(s, i, complete);
    if (!complete) return false;
    i += n;
  }
  return true;
}

std::string repair(std::string_view s) {
  if (is_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    bool complete = false;
    const size_t n = valid_prefix(s, i, complete);
    if (complete) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append(kReplacementUtf8);
      i += n == 0 ? 1 : n;
    }
  }
  return out;
}

size_t unfinished_suffix(std::string_view s) {
  // A character has at most 4 bytes: look for its lead among the last 3.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t i = s.size() - back;
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x80 && b < 0xC0) continue;  // a continuation byte: the lead is further back
    bool complete = false;
    const size_t n = valid_prefix(s, i, complete);
    return !complete && n == back ? back : 0;
  }
  return 0;
}

}  // namespace ctxpar::tokenizer::utf8
