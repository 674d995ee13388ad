#include "ctxpar/server/pythonic_tool_calls.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"
#include "ctxpar/server/python_literal.h"
#include "ctxpar/server/pythonic_pattern.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;
constexpr size_t npos = std::string_view::npos;

bool is_ascii_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_ascii_digit(char c) {
  return c >= '0' && c <= '9';
}

// Where ast.parse or vLLM's checks of the tree fail: the output is no calls.
struct NotCalls {};

constexpr std::array<std::string_view, 35> kKeywords = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

// A value vLLM's get_parameter_value takes, and, for a constant, how it works as a dict key.
struct Value {
  ordered_json json;
  bool constant = false;
  std::string key_text;  // json.dumps' text for it as a key
  std::string key_id;    // equal for keys Python's dict takes as the same (1, 1.0, True)
};

// A constant json.dumps refuses (bytes, complex, Ellipsis): vLLM takes it, and json.dumps fails
// only if it is still in the arguments (a repeated keyword may replace it). A binary value,
// which no parsed JSON holds, marks it.
Value undumpable(std::string key_id) {
  return {ordered_json::binary({}), true, "", std::move(key_id)};
}

bool dumpable(const ordered_json& v) {
  if (v.is_binary()) return false;
  if (v.is_structured()) {
    for (const ordered_json& item : v) {
      if (!dumpable(item)) return false;
    }
  }
  return true;
}

class CallListReader {
 public:
  explicit CallListReader(std::string_view s) : s_(s) {}

  std::vector<ToolCall> calls() {
    if (s_.find('\0') != npos) throw NotCalls{};  // "source code cannot contain null bytes"
    expect('[');
    std::vector<ToolCall> out;
    items(']', [&] { out.push_back(call()); });
    end_of_module();
    return out;
  }

 private:
  // Comma-separated items up to `close` (a trailing comma allowed), then past it: `item` reads
  // one item where the next non-space character is not `close`.
  template <class Item>
  void items(char close, Item item) {
    for (;;) {
      skip();
      if (at(close)) break;
      item();
      skip();
      if (at(',')) {
        ++i_;
        continue;
      }
      if (!at(close)) throw NotCalls{};
    }
    ++i_;
  }

  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void expect(char c) {
    if (!at(c)) throw NotCalls{};
    ++i_;
  }

  // Between tokens inside brackets: spaces, newlines, comments, backslash continuations.
  void skip() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\f' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r') ++i_;
      } else if (c == '\\' && continuation()) {
      } else {
        return;
      }
    }
  }

  // A backslash that ends its line joins the next one; i_ moves past it.
  bool continuation() {
    if (s_.substr(i_, 2) == "\\\n" || s_.substr(i_, 2) == "\\\r") {
      i_ += s_.substr(i_, 3) == "\\\r\n" ? 3 : 2;
      return true;
    }
    return false;
  }

  // After the list: the rest of its line, then only blank or comment lines (see the header).
  void end_of_module() {
    for (;;) {
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\f')) ++i_;
      if (!(at('\\') && continuation())) break;
      if (i_ == s_.size()) throw NotCalls{};  // "unexpected EOF while parsing"
    }
    if (at(';')) {  // an empty statement may follow only at the end of the line
      ++i_;
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\f')) ++i_;
    }
    for (;;) {  // the rest of this line, then each further line: blank or a comment
      if (at('#')) {
        while (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r') ++i_;
      }
      if (i_ == s_.size()) return;
      if (!at('\n') && !at('\r')) throw NotCalls{};
      ++i_;
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\f')) ++i_;
    }
  }

  // A Python identifier (ASCII only, see the header) that is not a keyword.
  std::string identifier() {
    const size_t start = i_;
    if (i_ >= s_.size() || !(is_ascii_letter(s_[i_]) || s_[i_] == '_')) throw NotCalls{};
    while (i_ < s_.size() && (is_ascii_letter(s_[i_]) || is_ascii_digit(s_[i_]) || s_[i_] == '_')) {
      ++i_;
    }
    if (i_ < s_.size() && static_cast<unsigned char>(s_[i_]) >= 0x80) throw NotCalls{};
    const std::string name(s_.substr(start, i_ - start));
    for (std::string_view k : kKeywords) {
      if (name == k) throw NotCalls{};
    }
    return name;
  }

  // NAME or NAME.NAME...: vLLM's name for a call.
  std::string dotted_name() {
    std::string name = identifier();
    for (;;) {
      const size_t save = i_;
      skip();
      if (!at('.')) {
        i_ = save;
        return name;
      }
      ++i_;
      skip();
      name += '.';
      name += identifier();
    }
  }

  ToolCall call() {
    const std::string name = dotted_name();
    skip();
    expect('(');
    ordered_json args = ordered_json::object();
    bool keyword_seen = false;
    items(')', [&] {
      if (s_.substr(i_, 2) == "**") {  // keyword None: json.dumps writes it "null"
        i_ += 2;
        args["null"] = value().json;
        keyword_seen = true;
      } else if (std::optional<std::string> key = keyword()) {
        args[*key] = value().json;  // repeated: ast.parse takes it (the compiler would not)
        keyword_seen = true;
      } else {
        // Ignored by vLLM, but Python must parse it, and not after a keyword.
        if (keyword_seen) throw NotCalls{};
        positional();
      }
    });
    if (!dumpable(args)) throw NotCalls{};  // json.dumps raises TypeError
    return ToolCall{"chatcmpl-tool-" + random_hex(32), name, python_json_text(args)};
  }

  // `NAME =` (not `==`): the keyword's name, i_ past the '='; else nullopt, i_ unmoved.
  std::optional<std::string> keyword() {
    const size_t save = i_;
    if (i_ < s_.size() && (is_ascii_letter(s_[i_]) || s_[i_] == '_')) {
      try {
        std::string name = identifier();
        skip();
        if (at('=') && s_.substr(i_, 2) != "==") {
          ++i_;
          return name;
        }
      } catch (const NotCalls&) {
      }
    }
    i_ = save;
    return std::nullopt;
  }

  // A positional argument: a value or a (dotted) name (see the header).
  void positional() {
    if (i_ < s_.size() && (is_ascii_letter(s_[i_]) || s_[i_] == '_')) {
      const size_t save = i_;
      try {
        value();
        return;
      } catch (const NotCalls&) {
        i_ = save;
      }
      dotted_name();
      return;
    }
    value();
  }

  Value value() {
    skip();
    if (i_ >= s_.size()) throw NotCalls{};
    const char c = s_[i_];
    if (c == '[') return list();
    if (c == '{') return dict();
    if (c == '(') {  // parentheses around a value; a tuple or generator is none
      ++i_;
      skip();
      Value v = value();
      skip();
      expect(')');
      return v;
    }
    if (c == '"' || c == '\'') return strings();
    if (s_.substr(i_, 3) == "...") {
      i_ += 3;
      return undumpable("...");
    }
    if (is_ascii_digit(c) || (c == '.' && i_ + 1 < s_.size() && is_ascii_digit(s_[i_ + 1]))) {
      return number();
    }
    if (is_ascii_letter(c) || c == '_') {
      const size_t start = i_;
      while (i_ < s_.size() && (is_ascii_letter(s_[i_]) || is_ascii_digit(s_[i_]))) ++i_;
      if (at('"') || at('\'')) {  // a string's prefix
        i_ = start;
        return strings();
      }
      i_ = start;
      return name();
    }
    throw NotCalls{};
  }

  Value list() {
    ++i_;
    Value v{ordered_json::array()};
    items(']', [&] { v.json.push_back(value().json); });
    return v;
  }

  Value dict() {
    ++i_;
    Value v{ordered_json::object()};
    std::map<std::string, std::string> key_text_of;  // key_id → the first key's text
    bool keys_dumpable = true;
    items('}', [&] {
      const Value key = value();
      if (!key.constant) throw NotCalls{};  // "Dict tool call arguments must have literal keys"
      skip();
      expect(':');
      keys_dumpable = keys_dumpable && !key.json.is_binary();
      const auto [it, added] = key_text_of.emplace(key.key_id, key.key_text);
      v.json[it->second] = value().json;
    });
    if (!keys_dumpable) return undumpable("");  // "keys must be str, int, float, bool or None"
    return v;
  }

  // None, True, False (constants) and null, true, false (names vLLM reads as JSON's).
  Value name() {
    const size_t start = i_;
    while (i_ < s_.size() && (is_ascii_letter(s_[i_]) || is_ascii_digit(s_[i_]) || s_[i_] == '_')) {
      ++i_;
    }
    if (i_ < s_.size() && static_cast<unsigned char>(s_[i_]) >= 0x80) throw NotCalls{};
    const std::string_view word = s_.substr(start, i_ - start);
    if (word == "None") return {nullptr, true, "null", "None"};
    if (word == "True") return {true, true, "true", "n1"};
    if (word == "False") return {false, true, "false", "n0"};
    if (word == "null") return {nullptr};
    if (word == "true") return {true};
    if (word == "false") return {false};
    throw NotCalls{};
  }

  // A number token, read as Python reads its literal (a complex one json.dumps refuses).
  Value number() {
    const size_t start = i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      const bool sign = (c == '+' || c == '-') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E') &&
                        !(s_.substr(start, 2) == "0x" || s_.substr(start, 2) == "0X");
      if (!(is_ascii_letter(c) || is_ascii_digit(c) || c == '_' || c == '.' || sign)) break;
      ++i_;
    }
    const std::string_view token = s_.substr(start, i_ - start);
    const PythonLiteral literal = eval_python_literal(token);
    if (literal.kind == PythonLiteral::Kind::kNotJson) {  // complex
      return undumpable(std::string("c").append(token));
    }
    if (literal.kind != PythonLiteral::Kind::kJson || !literal.value.is_number()) throw NotCalls{};
    Value v{literal.value, true, python_json_text(literal.value), ""};
    v.key_id = std::string("n").append(v.key_text);
    if (literal.value.is_number_float()) {  // 1.0 is the key 1
      const double d = literal.value.get<double>();
      if (d == static_cast<double>(static_cast<int64_t>(d)) && d > -9.2e18 && d < 9.2e18) {
        v.key_id = std::string("n").append(std::to_string(static_cast<int64_t>(d)));
      }
    }
    return v;
  }

  // One string literal or several in a row (Python joins them, bytes with bytes only); an
  // f-string is no constant.
  Value strings() {
    std::string joined;
    bool any = false, bytes = false;
    for (;;) {
      const size_t start = i_;
      while (i_ < s_.size() && is_ascii_letter(s_[i_])) ++i_;
      if (!at('"') && !at('\'')) {
        if (!any) throw NotCalls{};
        i_ = start;
        break;
      }
      for (size_t k = start; k < i_; ++k) {
        if (s_[k] == 'f' || s_[k] == 'F') throw NotCalls{};  // an f-string is no constant
      }
      string_end();
      const std::string_view token = s_.substr(start, i_ - start);
      const PythonLiteral literal = eval_python_literal(token);
      const bool is_bytes = literal.kind == PythonLiteral::Kind::kNotJson;
      if (!is_bytes && (literal.kind != PythonLiteral::Kind::kJson || !literal.value.is_string())) {
        throw NotCalls{};
      }
      if (any && is_bytes != bytes) throw NotCalls{};  // "cannot mix bytes and nonbytes literals"
      bytes = is_bytes;
      if (is_bytes) {
        joined.append(token).append(" ");  // tells different bytes keys apart
      } else {
        joined += literal.value.get<std::string>();
      }
      any = true;
      const size_t after = i_;
      skip();
      if (!(at('"') || at('\'') || (i_ < s_.size() && is_ascii_letter(s_[i_])))) {
        i_ = after;
        break;
      }
    }
    if (bytes) return undumpable(std::string("b").append(joined));
    return {joined, true, joined, std::string("s").append(joined)};
  }

  // From an opening quote to past its closing one; a backslash keeps the next character.
  void string_end() {
    const char q = s_[i_];
    const bool triple = s_.substr(i_, 3) == std::string(3, q);
    i_ += triple ? 3 : 1;
    for (;;) {
      if (i_ >= s_.size()) throw NotCalls{};
      const char c = s_[i_];
      if (c == '\\') {
        i_ += 2;
        continue;
      }
      if (!triple && (c == '\n' || c == '\r')) throw NotCalls{};
      if (c == q && (!triple || s_.substr(i_, 3) == std::string(3, q))) {
        i_ += triple ? 3 : 1;
        return;
      }
      ++i_;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

ToolCallSplit split_pythonic(std::string_view text) {
  ToolCallSplit all_content{std::string(text), {}};
  if (!matches_call_list_pattern(text)) return all_content;
  try {
    return {std::nullopt, CallListReader(text).calls()};
  } catch (const NotCalls&) {
    return all_content;
  }
}

}  // namespace ctxpar::server
