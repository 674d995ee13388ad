#include "ctxpar/server/python_literal.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

// Python's tokenizer refuses this many open brackets ("too many nested parentheses").
constexpr int kMaxNesting = 200;

// Thrown inside the parser where literal_eval raises ValueError or SyntaxError.
struct NotLiteral {};

// One parsed value: its json.dumps form, and what json.dumps needs to know about it.
struct Item {
  enum class Type {
    kNone,
    kBool,
    kInt,
    kFloat,
    kComplex,
    kStr,
    kBytes,
    kTuple,
    kList,
    kDict,
    kSet,
    kEllipsis
  };
  Type type = Type::kNone;
  ordered_json json;
  bool json_ok = true;  // json.dumps can write it

  bool hashable() const { return type != Type::kList && type != Type::kDict && type != Type::kSet; }
};

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool is_digit_of(char c, int base) {
  if (base == 16) return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  return c >= '0' && c < static_cast<char>('0' + base);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  PythonLiteral run() {
    try {
      skip(true);  // blank and comment lines before the expression
      Item top = expression_list();
      skip(true);  // trailing newlines and comments end an eval input
      if (i_ != s_.size()) return {};
      if (!top.json_ok) return {PythonLiteral::Kind::kNotJson, nullptr};
      return {PythonLiteral::Kind::kJson, std::move(top.json)};
    } catch (const NotLiteral&) {
      return {};
    }
  }

 private:
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  bool starts(std::string_view t) const { return s_.substr(i_, t.size()) == t; }

  // Spaces, tabs, form feeds, line continuations and comments; newlines only inside brackets.
  void skip(bool newlines) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\f' || (newlines && (c == '\n' || c == '\r'))) {
        ++i_;
      } else if (c == '\\' && (starts("\\\n") || starts("\\\r"))) {
        i_ += starts("\\\r\n") ? 3 : 2;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r') ++i_;
      } else {
        return;
      }
    }
  }

  // The top level: one expression, or a tuple when commas follow it (`1, 2` and `1,`).
  Item expression_list() {
    Item first = expression(false);
    skip(false);
    if (!at(',')) return first;
    std::vector<Item> items;
    items.push_back(std::move(first));
    while (at(',')) {
      ++i_;
      skip(false);
      if (i_ == s_.size() || at('\n') || at('\r') || at('#')) break;
      items.push_back(expression(false));
      skip(false);
    }
    return sequence(Item::Type::kTuple, std::move(items));
  }

  static Item sequence(Item::Type type, std::vector<Item> items) {
    Item out;
    out.type = type;
    out.json = ordered_json::array();
    for (Item& item : items) {
      out.json_ok = out.json_ok && item.json_ok;
      if (type == Item::Type::kSet && !item.hashable()) out.json_ok = false;  // TypeError
      out.json.push_back(std::move(item.json));
    }
    if (type == Item::Type::kSet) out.json_ok = false;  // json.dumps refuses a set
    return out;
  }

  Item expression(bool in_brackets) {
    if (i_ >= s_.size()) throw NotLiteral{};
    const char c = s_[i_];
    if (c == '(' || c == '[' || c == '{') return bracketed();
    if (c == '\'' || c == '"' || string_prefix_length() > 0) return strings(in_brackets);
    if (starts("...")) {
      i_ += 3;
      return Item{Item::Type::kEllipsis, nullptr, false};
    }
    if (c == '+' || c == '-' || (c >= '0' && c <= '9') ||
        (c == '.' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9')) {
      return signed_number(in_brackets);
    }
    return name();
  }

  Item bracketed() {
    const char open = s_[i_++];
    if (depth_ >= kMaxNesting) throw NotLiteral{};
    ++depth_;
    const char close = open == '(' ? ')' : open == '[' ? ']' : '}';
    skip(true);
    Item out;
    if (at(close)) {
      ++i_;
      out = open == '{' ? Item{Item::Type::kDict, ordered_json::object(), true}
                        : sequence(open == '(' ? Item::Type::kTuple : Item::Type::kList, {});
    } else if (open == '{') {
      out = braces();
    } else {
      std::vector<Item> items;
      items.push_back(expression(true));
      skip(true);
      const bool parenthesized = open == '(' && at(')');
      while (at(',')) {
        ++i_;
        skip(true);
        if (at(close)) break;
        items.push_back(expression(true));
        skip(true);
      }
      if (!at(close)) throw NotLiteral{};
      ++i_;
      out = parenthesized
                ? std::move(items.front())
                : sequence(open == '(' ? Item::Type::kTuple : Item::Type::kList, std::move(items));
    }
    --depth_;
    return out;
  }

  // After `{` and before a first item: a dict (`k: v, ...`) or a set (`a, b`).
  Item braces() {
    Item first = expression(true);
    skip(true);
    if (!at(':')) {
      std::vector<Item> items;
      items.push_back(std::move(first));
      while (at(',')) {
        ++i_;
        skip(true);
        if (at('}')) break;
        items.push_back(expression(true));
        skip(true);
      }
      if (!at('}')) throw NotLiteral{};
      ++i_;
      return sequence(Item::Type::kSet, std::move(items));
    }
    Item out{Item::Type::kDict, ordered_json::object(), true};
    Item key = std::move(first);
    for (;;) {
      ++i_;  // the ':'
      skip(true);
      Item value = expression(true);
      skip(true);
      out.json_ok = out.json_ok && value.json_ok;
      if (const auto text = key_text(key)) {
        out.json[*text] = std::move(value.json);  // a repeated key keeps its place, takes the value
      } else {
        out.json_ok = false;
      }
      if (at('}')) break;
      if (!at(',')) throw NotLiteral{};
      ++i_;
      skip(true);
      if (at('}')) break;
      key = expression(true);
      skip(true);
      if (!at(':')) throw NotLiteral{};
    }
    ++i_;
    return out;
  }

  // The JSON key json.dumps writes for a dict key; nullopt where it raises TypeError.
  static std::optional<std::string> key_text(const Item& key) {
    switch (key.type) {
      case Item::Type::kStr:
        return key.json.get<std::string>();
      case Item::Type::kNone:
        return "null";
      case Item::Type::kBool:
        return key.json.get<bool>() ? "true" : "false";
      case Item::Type::kInt:
        if (key.json.is_number_integer()) return std::to_string(key.json.get<int64_t>());
        if (key.json.is_number_unsigned()) return std::to_string(key.json.get<uint64_t>());
        [[fallthrough]];
      case Item::Type::kFloat: {
        const double d = key.json.get<double>();
        if (std::isnan(d)) return "NaN";
        if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
        return chat_template::python_float_repr(d);
      }
      default:
        return std::nullopt;
    }
  }

  // The length of a string prefix (r, u, b, f and their pairs) right before a quote, else 0.
  size_t string_prefix_length() const {
    size_t n = 0;
    while (n < 2 && i_ + n < s_.size() &&
           std::string("rRuUbBfF").find(s_[i_ + n]) != std::string::npos) {
      ++n;
    }
    if (n == 0 || i_ + n >= s_.size() || (s_[i_ + n] != '\'' && s_[i_ + n] != '"')) return 0;
    return n;
  }

  // One or more adjacent string literals, concatenated.
  Item strings(bool in_brackets) {
    std::string text;
    int bytes = -1;  // -1: not known yet; 0: str; 1: bytes
    for (;;) {
      const size_t n = string_prefix_length();
      std::string prefix;
      for (size_t k = 0; k < n; ++k) prefix += static_cast<char>(s_[i_ + k] | 0x20);
      if (prefix.find('f') != std::string::npos) throw NotLiteral{};  // an f-string: JoinedStr
      if (prefix == "ur" || prefix == "ru" || prefix == "ub" || prefix == "bu" || prefix == "uu" ||
          prefix == "rr" || prefix == "bb") {
        throw NotLiteral{};
      }
      const bool is_bytes = prefix.find('b') != std::string::npos;
      if (bytes >= 0 && bytes != static_cast<int>(is_bytes)) throw NotLiteral{};  // str + bytes
      bytes = is_bytes;
      i_ += n;
      string_body(text, prefix.find('r') != std::string::npos, is_bytes);
      const size_t before = i_;
      skip(in_brackets);
      if (!(at('\'') || at('"') || string_prefix_length() > 0)) {
        i_ = before;
        break;
      }
    }
    if (bytes == 1) return Item{Item::Type::kBytes, nullptr, false};
    Item out{Item::Type::kStr, ordered_json(std::move(text)), true};
    return out;
  }

  void string_body(std::string& out, bool raw, bool bytes) {
    const char quote = s_[i_];
    const bool triple = starts(std::string(3, quote));
    i_ += triple ? 3 : 1;
    for (;;) {
      if (i_ >= s_.size()) throw NotLiteral{};  // unterminated
      const char c = s_[i_];
      if (c == quote && (!triple || starts(std::string(3, quote)))) {
        i_ += triple ? 3 : 1;
        return;
      }
      if ((c == '\n' || c == '\r') && !triple) throw NotLiteral{};
      if (bytes && static_cast<unsigned char>(c) >= 0x80) throw NotLiteral{};
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      if (i_ + 1 >= s_.size()) throw NotLiteral{};
      if (raw) {  // the backslash stays, and keeps the next character from ending the string
        out += c;
        ++i_;
        out += s_[i_++];
        continue;
      }
      escape(out, bytes);
    }
  }

  void escape(std::string& out, bool bytes) {
    const char e = s_[i_ + 1];
    i_ += 2;
    switch (e) {
      case '\n':
        return;
      case '\r':
        if (at('\n')) ++i_;
        return;
      case '\\':
        out += '\\';
        return;
      case '\'':
        out += '\'';
        return;
      case '"':
        out += '"';
        return;
      case 'a':
        out += '\a';
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'v':
        out += '\v';
        return;
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t v = static_cast<uint32_t>(e - '0');
      for (int k = 0; k < 2 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++k) {
        v = v * 8 + static_cast<uint32_t>(s_[i_++] - '0');
      }
      append_code_point(out, v);
      return;
    }
    const int digits = e == 'x' ? 2 : (e == 'u' && !bytes) ? 4 : (e == 'U' && !bytes) ? 8 : 0;
    if (digits > 0) {
      uint32_t v = 0;
      for (int k = 0; k < digits; ++k) {
        if (i_ >= s_.size() || !is_digit_of(s_[i_], 16)) throw NotLiteral{};
        v = v * 16 + static_cast<uint32_t>(hex_value(s_[i_++]));
      }
      if (v > 0x10FFFF) throw NotLiteral{};
      append_code_point(out, v);
      return;
    }
    if (e == 'N' && !bytes) throw NotLiteral{};  // \N{name}: not taken (see the header)
    out += '\\';  // an unknown escape keeps its backslash (a SyntaxWarning, no error)
    out += e;
  }

  static void append_code_point(std::string& out, uint32_t v) {
    // A lone surrogate cannot be UTF-8: U+FFFD stands for it.
    if (v >= 0xD800 && v <= 0xDFFF) v = tokenizer::utf8::kReplacement;
    tokenizer::utf8::append(out, static_cast<char32_t>(v));
  }

  // A number with an optional sign, or a real number plus or minus an imaginary one.
  Item signed_number(bool in_brackets) {
    bool negative = false;
    int parens = 0;  // -(1): parentheses make no node, so the sign still applies to a number
    if (at('+') || at('-')) {
      negative = at('-');
      ++i_;
      skip(in_brackets);
      for (; at('('); ++parens) {
        if (depth_ + parens >= kMaxNesting) throw NotLiteral{};
        ++i_;
        skip(true);
      }
      if (i_ >= s_.size() || !(std::isdigit(static_cast<unsigned char>(s_[i_])) || at('.'))) {
        throw NotLiteral{};  // --1, -True, -[1]: not a signed number literal_eval takes
      }
    }
    Item num = number();
    for (int k = 0; k < parens; ++k) {
      skip(true);
      if (!at(')')) throw NotLiteral{};
      ++i_;
    }
    if (negative) {
      // nlohmann's is_number_integer() is true for unsigned values too: test unsigned first.
      if (num.type == Item::Type::kInt && num.json.is_number_unsigned()) {
        const uint64_t u = num.json.get<uint64_t>();
        constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;  // |INT64_MIN|
        if (u < kMinMagnitude) {
          num.json = -static_cast<int64_t>(u);
        } else if (u == kMinMagnitude) {
          num.json = std::numeric_limits<int64_t>::min();
        } else {
          num.json = -static_cast<double>(u);  // past 64 bits: a float (see the header)
        }
      } else if (num.type == Item::Type::kInt && num.json.is_number_integer()) {
        num.json = -num.json.get<int64_t>();  // from digits: never INT64_MIN
      } else if (num.type != Item::Type::kComplex) {
        num.json = -num.json.get<double>();
      }
    }
    // `1+2j`: a real and an imaginary number make a complex one.
    const size_t before = i_;
    skip(in_brackets);
    if ((at('+') || at('-')) && num.type != Item::Type::kComplex) {
      ++i_;
      skip(in_brackets);
      if (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || at('.'))) {
        const Item imaginary = number();
        if (imaginary.type != Item::Type::kComplex) throw NotLiteral{};
        return Item{Item::Type::kComplex, nullptr, false};
      }
      throw NotLiteral{};
    }
    i_ = before;
    return num;
  }

  // An unsigned number token: int (decimal, 0x, 0o, 0b), float or imaginary.
  Item number() {
    int base = 10;
    if (at('0') && i_ + 1 < s_.size()) {
      const char b = static_cast<char>(s_[i_ + 1] | 0x20);
      base = b == 'x' ? 16 : b == 'o' ? 8 : b == 'b' ? 2 : 10;
    }
    std::string digits;  // without the underscores
    if (base != 10) {
      i_ += 2;
      if (at('_')) ++i_;
      digit_run(digits, base);
      if (digits.empty()) throw NotLiteral{};
      end_of_number();
      return integer(digits, base);
    }
    digit_run(digits, 10);
    bool is_float = false;
    if (at('.')) {
      is_float = true;
      digits += '.';
      ++i_;
      if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) digit_run(digits, 10);
    }
    if (digits.empty() || digits == ".") throw NotLiteral{};
    if (at('e') || at('E')) {
      const size_t mark = i_;
      std::string exponent = "e";
      ++i_;
      if (at('+') || at('-')) exponent += s_[i_++];
      const size_t before = exponent.size();
      digit_run(exponent, 10);
      if (exponent.size() == before) {
        i_ = mark;  // "1e" is a syntax error: the check below sees the 'e'
      } else {
        digits += exponent;
        is_float = true;
      }
    }
    if (at('j') || at('J')) {
      ++i_;
      end_of_number();
      return Item{Item::Type::kComplex, nullptr, false};
    }
    end_of_number();
    if (!is_float) {
      // "007" is a SyntaxError (leading zeros); "000" is 0.
      if (digits.size() > 1 && digits[0] == '0' &&
          digits.find_first_not_of('0') != std::string::npos) {
        throw NotLiteral{};
      }
      return integer(digits, 10);
    }
    double value = 0;
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (res.ec == std::errc::result_out_of_range) {
      // Past the double range: inf (as Python's float), or 0 for a tiny value.
      value = digits.find_first_of("123456789") == std::string::npos ||
                      digits.find("e-") != std::string::npos
                  ? 0.0
                  : std::numeric_limits<double>::infinity();
    } else if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) {
      throw NotLiteral{};
    }
    return Item{Item::Type::kFloat, ordered_json(value), true};
  }

  // Digits of `base` with single underscores between them, appended without the underscores.
  void digit_run(std::string& out, int base) {
    while (i_ < s_.size()) {
      if (is_digit_of(s_[i_], base)) {
        out += s_[i_++];
      } else if (at('_') && i_ + 1 < s_.size() && is_digit_of(s_[i_ + 1], base) && i_ > 0 &&
                 is_digit_of(s_[i_ - 1], base)) {
        ++i_;
      } else {
        return;
      }
    }
  }

  // A number runs into a letter, digit or underscore: "1abc", "0x1g", "1__0" are errors.
  void end_of_number() const {
    if (i_ < s_.size() && (is_ident_char(s_[i_]) || s_[i_] == '.')) throw NotLiteral{};
  }

  static Item integer(const std::string& digits, int base) {
    uint64_t v = 0;
    bool fits = true;
    long double approx = 0;
    for (const char c : digits) {
      const auto d = static_cast<uint64_t>(hex_value(c));
      approx = approx * base + static_cast<long double>(d);
      if (v > (std::numeric_limits<uint64_t>::max() - d) / static_cast<uint64_t>(base))
        fits = false;
      v = v * static_cast<uint64_t>(base) + d;
    }
    Item out{Item::Type::kInt, nullptr, true};
    if (!fits) {
      out.json = static_cast<double>(approx);  // past 64 bits (see the header)
    } else if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out.json = static_cast<int64_t>(v);
    } else {
      out.json = v;
    }
    return out;
  }

  Item name() {
    const size_t start = i_;
    while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
    const std::string_view word = s_.substr(start, i_ - start);
    if (word == "None") return Item{Item::Type::kNone, nullptr, true};
    if (word == "True" || word == "False") return Item{Item::Type::kBool, word == "True", true};
    if (word == "set") {  // set(): the empty set (Python 3.9+)
      skip(true);
      if (at('(')) {
        ++i_;
        skip(true);
        if (at(')')) {
          ++i_;
          return Item{Item::Type::kSet, nullptr, false};
        }
      }
    }
    throw NotLiteral{};
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

PythonLiteral eval_python_literal(std::string_view text) {
  // literal_eval strips leading spaces and tabs itself.
  const size_t start = text.find_first_not_of(" \t");
  return Parser(start == std::string_view::npos ? std::string_view() : text.substr(start)).run();
}

}  // namespace ctxpar::server
