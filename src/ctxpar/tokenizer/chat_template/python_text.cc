#include "ctxpar/tokenizer/chat_template/python_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include "ctxpar/tokenizer/chat_template/template_error.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::chat_template {

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    int len = 0;
    char32_t cp = 0;
    if (b0 < 0x80) {
      len = 1, cp = b0;
    } else if (b0 >= 0xC2 && b0 < 0xE0) {
      len = 2, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 < 0xF0) {
      len = 3, cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 < 0xF5) {
      len = 4, cp = b0 & 0x07;
    }
    bool ok = len > 0 && i + len <= text.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      ok = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid UTF-8.
    if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) ||
               (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))) {
      ok = false;
    }
    if (!ok) {
      out.push_back(0xDC00 + b0);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an escaped invalid byte goes back as that byte
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else {
    tokenizer::utf8::append(out, cp);
  }
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t cp : code_points) append_utf8(out, cp);
  return out;
}

size_t count_code_points(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  return ascii ? text.size() : decode_utf8(text).size();
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool is_python_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

std::string python_strip(std::string_view text, const std::string* chars, StripSide side) {
  const std::u32string cps = decode_utf8(text);
  const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : is_python_space(c);
  };
  size_t begin = 0, end = cps.size();
  if (side != StripSide::kRight) {
    while (begin < end && strip_it(cps[begin])) ++begin;
  }
  if (side != StripSide::kLeft) {
    while (end > begin && strip_it(cps[end - 1])) --end;
  }
  return encode_utf8(std::u32string_view(cps).substr(begin, end - begin));
}

namespace {

std::vector<std::string> split_whitespace(std::string_view text, long long maxsplit,
                                          bool from_right) {
  std::u32string cps = decode_utf8(text);
  std::vector<std::u32string> parts;
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < cps.size() && is_python_space(cps[i])) ++i;
      if (i == cps.size()) break;
      if (maxsplit >= 0 && static_cast<long long>(parts.size()) == maxsplit) {
        // The rest goes unsplit, trailing whitespace removed (CPython's behavior).
        size_t end = cps.size();
        while (end > i && is_python_space(cps[end - 1])) --end;
        parts.push_back(cps.substr(i, end - i));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !is_python_space(cps[j])) ++j;
      parts.push_back(cps.substr(i, j - i));
      i = j;
    }
  } else {
    size_t i = cps.size();
    while (true) {
      while (i > 0 && is_python_space(cps[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit >= 0 && static_cast<long long>(parts.size()) == maxsplit) {
        size_t begin = 0;
        while (begin < i && is_python_space(cps[begin])) ++begin;
        parts.push_back(cps.substr(begin, i - begin));
        break;
      }
      size_t j = i;
      while (j > 0 && !is_python_space(cps[j - 1])) --j;
      parts.push_back(cps.substr(j, i - j));
      i = j;
    }
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<std::string> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(encode_utf8(p));
  return out;
}

}  // namespace

std::vector<std::string> python_split(std::string_view text, const std::string* sep,
                                      long long maxsplit, bool from_right) {
  if (!sep) return split_whitespace(text, maxsplit, from_right);
  if (sep->empty()) throw TemplateError("empty separator");
  std::vector<std::string> out;
  if (!from_right) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
      const size_t hit = text.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(text.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(text.substr(pos));
  } else {
    size_t end = text.size();
    while (maxsplit < 0 || static_cast<long long>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t hit = text.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(text.substr(0, end));
    std::reverse(out.begin(), out.end());
  }
  return out;
}

std::string ascii_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string python_str_title(std::string_view text) {
  std::string out(text);
  bool previous_cased = false;
  for (char& c : out) {
    const bool upper = c >= 'A' && c <= 'Z';
    const bool lower = c >= 'a' && c <= 'z';
    if (upper && previous_cased) c = static_cast<char>(c - 'A' + 'a');
    if (lower && !previous_cased) c = static_cast<char>(c - 'a' + 'A');
    // Non-ASCII bytes count as uncased, like digits and punctuation.
    previous_cased = upper || lower;
  }
  return out;
}

std::string python_str_capitalize(std::string_view text) {
  std::string out = ascii_lower(text);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

namespace {

// str.isprintable(): false for the Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other
// than the space. Without the Unicode database this covers the controls, separators, format
// characters and private use areas that occur in text; unassigned code points count as
// printable.
bool is_printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x2064) || (c >= 0x2066 && c <= 0x206F) || c == 0x3000) return false;
  if (c == 0x061C || c == 0x180E || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || c >= 0xF0000) return false;    // surrogates, private use
  if (c == 0xE0001 || (c >= 0xE0020 && c <= 0xE007F)) return false;  // tags
  return true;
}

}  // namespace

std::string python_repr_string(std::string_view text) {
  const std::u32string cps = decode_utf8(text);
  bool has_single = false, has_double = false;
  for (char32_t c : cps) {
    has_single = has_single || c == '\'';
    has_double = has_double || c == '"';
  }
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : cps) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!is_printable(c)) {
      if (c < 0x100) {
        out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
      } else if (c < 0x10000) {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      } else {
        out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
      }
    } else {
      append_utf8(out, c);
    }
  }
  out.push_back(quote);
  return out;
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form: "-d.ddde+XX".
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  const bool negative = buf[0] == '-';
  const std::string sign = negative ? "-" : "";
  const std::string sci(buf + (negative ? 1 : 0), res.ptr);
  const size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  const int exponent = std::atoi(sci.c_str() + e_pos + 1);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int n = static_cast<int>(digits.size());
  if (exponent >= -4 && exponent < 16) {
    std::string out;
    if (exponent >= 0) {
      if (n <= exponent + 1) {
        out = fmt::format("{}{}.0", digits, std::string(exponent + 1 - n, '0'));
      } else {
        out = fmt::format("{}.{}", digits.substr(0, exponent + 1), digits.substr(exponent + 1));
      }
    } else {
      out = fmt::format("0.{}{}", std::string(-exponent - 1, '0'), digits);
    }
    return sign + out;
  }
  std::string mantissa = digits.substr(0, 1);
  if (n > 1) mantissa = fmt::format("{}.{}", mantissa, digits.substr(1));
  return fmt::format("{}{}e{}{:02d}", sign, mantissa, exponent < 0 ? '-' : '+',
                     exponent < 0 ? -exponent : exponent);
}

}  // namespace ctxpar::chat_template
