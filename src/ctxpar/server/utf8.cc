#include "ctxpar/server/utf8.h"

#include <cstdint>

namespace ctxpar::server {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// For a lead byte: the number of continuation bytes and the allowed range of the first one
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). 0 continuations:
// ASCII; -1: not a lead byte.
struct Lead {
  int continuations;
  uint8_t first_lo, first_hi;
};

Lead lead_of(uint8_t b) {
  if (b < 0x80) return {0, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

}  // namespace

size_t append_valid_utf8(std::string_view bytes, bool final, std::string& out) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    const Lead lead = lead_of(b);
    if (lead.continuations == 0) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    if (lead.continuations < 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    // Continuation bytes that fit, up to the first that does not.
    size_t j = i + 1;
    int got = 0;
    while (got < lead.continuations && j < bytes.size()) {
      const auto c = static_cast<uint8_t>(bytes[j]);
      const uint8_t lo = got == 0 ? lead.first_lo : 0x80;
      const uint8_t hi = got == 0 ? lead.first_hi : 0xBF;
      if (c < lo || c > hi) break;
      ++got;
      ++j;
    }
    if (got == lead.continuations) {
      out.append(bytes.substr(i, j - i));
    } else if (j == bytes.size() && !final) {
      return i;  // may still complete
    } else {
      out += kReplacement;  // the maximal subpart i..j; bytes[j] starts afresh
    }
    i = j;
  }
  return i;
}

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  append_valid_utf8(bytes, true, out);
  return out;
}

size_t utf8_length(std::string_view text) {
  size_t n = 0;
  for (const char c : text) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

size_t utf8_offset_of_last(std::string_view text, size_t n) {
  size_t at = text.size();
  while (n > 0 && at > 0) {
    --at;
    if ((static_cast<uint8_t>(text[at]) & 0xC0) != 0x80) --n;
  }
  return at;
}

}  // namespace ctxpar::server
