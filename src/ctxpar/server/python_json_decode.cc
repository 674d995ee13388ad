#include "ctxpar/server/python_json_decode.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;
using Status = PythonJsonValue::Status;

constexpr int kMaxDepth = 900;

struct Stop {
  Status status;
};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Decoder {
 public:
  explicit Decoder(std::string_view s) : s_(s) {}

  PythonJsonValue run(size_t at) {
    i_ = at;
    try {
      ordered_json v = value();
      return {Status::kOk, std::move(v), i_};
    } catch (const Stop& stop) {
      return {stop.status, nullptr, 0};
    }
  }

 private:
  // The end of the text: inside brackets more text could go on, at the top it is the end.
  [[noreturn]] void ran_out() const {
    throw Stop{depth_ > 0 ? Status::kIncomplete : Status::kInvalid};
  }
  [[noreturn]] static void invalid() { throw Stop{Status::kInvalid}; }

  bool at_end() const { return i_ >= s_.size(); }
  char peek() const {
    if (at_end()) ran_out();
    return s_[i_];
  }

  // Python's WHITESPACE: [ \t\n\r]*
  void skip_space() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }

  // `word` at i_: a prefix of it cut by the end of the text ran out, anything else is invalid.
  void expect_word(std::string_view word) {
    for (char c : word) {
      if (at_end()) ran_out();
      if (s_[i_] != c) invalid();
      ++i_;
    }
  }

  ordered_json value() {
    switch (peek()) {
      case '"':
        return string();
      case '{':
        return object();
      case '[':
        return array();
      case 'n':
        expect_word("null");
        return nullptr;
      case 't':
        expect_word("true");
        return true;
      case 'f':
        expect_word("false");
        return false;
      case 'N':
        expect_word("NaN");
        return std::numeric_limits<double>::quiet_NaN();
      case 'I':
        expect_word("Infinity");
        return std::numeric_limits<double>::infinity();
      default:
        return number();
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, or -Infinity. A '.' or an exponent without
  // digits after it is not part of the number (Python backs off), unless the text ends there
  // inside brackets, where digits may still come.
  ordered_json number() {
    const size_t start = i_;
    if (s_[i_] == '-') {
      ++i_;
      if (at_end()) ran_out();
      if (s_[i_] == 'I') {
        expect_word("Infinity");
        return -std::numeric_limits<double>::infinity();
      }
    }
    if (at_end()) ran_out();
    if (s_[i_] == '0') {
      ++i_;
    } else if (s_[i_] >= '1' && s_[i_] <= '9') {
      while (!at_end() && is_digit(s_[i_])) ++i_;
    } else {
      invalid();
    }
    bool is_float = false;
    if (!at_end() && s_[i_] == '.') {
      if (i_ + 1 == s_.size() && depth_ > 0) ran_out();
      if (i_ + 1 < s_.size() && is_digit(s_[i_ + 1])) {
        is_float = true;
        i_ += 2;
        while (!at_end() && is_digit(s_[i_])) ++i_;
      }
    }
    if (!at_end() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      size_t j = i_ + 1;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      if (j == s_.size() && depth_ > 0) ran_out();
      if (j < s_.size() && is_digit(s_[j])) {
        is_float = true;
        while (j < s_.size() && is_digit(s_[j])) ++j;
        i_ = j;
      }
    }
    const std::string text(s_.substr(start, i_ - start));
    if (is_float) return std::strtod(text.c_str(), nullptr);  // 1e400: inf, as float()
    const bool negative = text[0] == '-';
    const std::string_view digits = std::string_view(text).substr(negative ? 1 : 0);
    uint64_t v = 0;
    for (char c : digits) {
      if (v > (std::numeric_limits<uint64_t>::max() - (c - '0')) / 10) {
        return std::strtod(text.c_str(), nullptr);  // past 64 bits (see the header)
      }
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!negative) {
      return v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? ordered_json(static_cast<int64_t>(v))
                 : ordered_json(v);
    }
    if (v <= uint64_t{1} << 63) return ordered_json(static_cast<int64_t>(0 - v));
    return -static_cast<double>(v);
  }

  // Four hex digits after "\u".
  uint32_t hex4() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      if (at_end()) ran_out();
      const int h = hex_value(s_[i_++]);
      if (h < 0) invalid();
      v = v * 16 + static_cast<uint32_t>(h);
    }
    return v;
  }

  ordered_json string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_end()) ran_out();
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (static_cast<unsigned char>(c) <= 0x1f) invalid();  // strict: no raw control characters
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      ++i_;
      if (at_end()) ran_out();
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u':
          code_point(out);
          break;
        default:
          invalid();
      }
    }
  }

  // After "\u": one character, a surrogate pair joined.
  void code_point(std::string& out) {
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) invalid();  // a lone low surrogate (see the header)
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // Python joins a high surrogate only with a "\u" low one right after it.
      for (char c : std::string_view("\\u")) {
        if (at_end()) ran_out();
        if (s_[i_++] != c) invalid();
      }
      const uint32_t low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) invalid();
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    tokenizer::utf8::append(out, static_cast<char32_t>(cp));
  }

  ordered_json object() {
    enter();
    ++i_;
    ordered_json out = ordered_json::object();
    skip_space();
    if (peek() == '}') {
      ++i_;
      --depth_;
      return out;
    }
    for (;;) {
      if (peek() != '"') invalid();
      const std::string key = string().get<std::string>();
      skip_space();
      if (peek() != ':') invalid();
      ++i_;
      skip_space();
      out[key] = value();  // a repeated key: first place, last value, as a dict
      skip_space();
      const char c = peek();
      ++i_;
      if (c == '}') break;
      if (c != ',') invalid();
      skip_space();
    }
    --depth_;
    return out;
  }

  ordered_json array() {
    enter();
    ++i_;
    ordered_json out = ordered_json::array();
    skip_space();
    if (peek() == ']') {
      ++i_;
      --depth_;
      return out;
    }
    for (;;) {
      out.push_back(value());
      skip_space();
      const char c = peek();
      ++i_;
      if (c == ']') break;
      if (c != ',') invalid();
      skip_space();
    }
    --depth_;
    return out;
  }

  void enter() {
    if (++depth_ > kMaxDepth) invalid();
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

PythonJsonValue python_json_raw_decode(std::string_view text, size_t at) {
  return Decoder(text).run(at);
}

std::optional<nlohmann::ordered_json> python_json_loads(std::string_view text) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t at = 0;
  while (at < text.size() && is_space(text[at])) ++at;
  PythonJsonValue v = python_json_raw_decode(text, at);
  if (v.status != PythonJsonValue::Status::kOk) return std::nullopt;
  for (size_t i = v.end; i < text.size(); ++i) {
    if (!is_space(text[i])) return std::nullopt;  // "Extra data"
  }
  return std::move(v.value);
}

}  // namespace ctxpar::server
