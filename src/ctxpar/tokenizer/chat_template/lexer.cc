#include "ctxpar/tokenizer/chat_template/lexer.h"

#include <cstdlib>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/python_text.h"

namespace ctxpar::chat_template {

std::string normalize_template_source(std::string_view source) {
  const std::u32string cps = decode_utf8(source);
  std::string out;
  out.reserve(source.size());
  bool ended_with_break = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    ended_with_break = is_python_line_break(cps[i]);
    if (!ended_with_break) {
      append_utf8(out, cps[i]);
      continue;
    }
    if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    out.push_back('\n');
  }
  if (ended_with_break) out.pop_back();
  return out;
}

namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

class Lexer {
 public:
  Lexer(std::string_view src, const SourceMap& map) : src_(src), map_(map) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t start = find_tag_start(pos_);
      if (start == std::string_view::npos) {
        emit_data(std::string(src_.substr(pos_)), pos_);
        break;
      }
      lex_tag(start);
    }
    Token end;
    end.type = TokenType::kEnd;
    end.offset = src_.size();
    tokens_.push_back(end);
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    CTXPAR_INPUT_FAIL("chat template {}: {}", map_.where(offset), message);
  }

  size_t find_tag_start(size_t from) const {
    size_t i = src_.find('{', from);
    while (i != std::string_view::npos && i + 1 < src_.size()) {
      const char next = src_[i + 1];
      if (next == '{' || next == '%' || next == '#') return i;
      i = src_.find('{', i + 1);
    }
    return std::string_view::npos;
  }

  void emit_data(std::string text, size_t offset) {
    if (text.empty()) return;
    Token t;
    t.type = TokenType::kData;
    t.text = std::move(text);
    t.offset = offset;
    tokens_.push_back(std::move(t));
  }

  void emit(TokenType type, std::string text, size_t offset) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.offset = offset;
    tokens_.push_back(std::move(t));
  }

  // The data before a tag, after the tag's whitespace control.
  std::string strip_before(std::string text, char modifier, bool block_or_comment) const {
    if (modifier == '-') return python_strip(text, nullptr, StripSide::kRight);
    if (modifier == '+' || !block_or_comment) return text;
    // lstrip_blocks: drop the whitespace between the last line start and the tag.
    const size_t last_nl = text.rfind('\n');
    const size_t line_pos = last_nl == std::string::npos ? 0 : last_nl + 1;
    if (line_pos == 0 && !line_starting_) return text;
    const std::string_view tail = std::string_view(text).substr(line_pos);
    if (tail.empty()) return text;
    for (char32_t c : decode_utf8(tail)) {
      if (!is_python_space(c)) return text;
    }
    text.resize(line_pos);
    return text;
  }

  size_t skip_python_space(size_t p) const {
    while (p < src_.size()) {
      const auto b = static_cast<unsigned char>(src_[p]);
      if (b < 0x80) {
        if (!is_python_space(b)) break;
        ++p;
        continue;
      }
      // A multi-byte code point: decode just it.
      size_t len = (b >= 0xF0) ? 4 : (b >= 0xE0) ? 3 : 2;
      len = std::min(len, src_.size() - p);
      const std::u32string cp = decode_utf8(src_.substr(p, len));
      if (cp.size() != 1 || !is_python_space(cp[0])) break;
      p += len;
    }
    return p;
  }

  // After `{%`: is this `{% raw %}` (or `{%- raw -%}`)? Returns the offset after it, or npos.
  size_t match_raw_begin(size_t p) const {
    while (p < src_.size() && is_ascii_space(src_[p])) ++p;
    if (src_.substr(p, 3) != "raw" || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) {
      return std::string_view::npos;
    }
    p += 3;
    while (p < src_.size() && is_ascii_space(src_[p])) ++p;
    if (src_.substr(p, 3) == "-%}") return skip_python_space(p + 3);
    if (src_.substr(p, 2) == "%}") return p + 2;
    return std::string_view::npos;
  }

  void lex_tag(size_t start) {
    const char kind = src_[start + 1];
    size_t after = start + 2;
    char modifier = 0;
    if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) {
      modifier = src_[after];
      ++after;
    }
    const size_t raw_end = kind == '%' ? match_raw_begin(after) : std::string_view::npos;
    emit_data(strip_before(std::string(src_.substr(pos_, start - pos_)), modifier, kind != '{'),
              pos_);
    if (kind == '#') {
      lex_comment(start, after);
    } else if (raw_end != std::string_view::npos) {
      lex_raw(start, raw_end);
    } else {
      lex_expression_tag(start, after, kind == '%');
    }
  }

  void lex_comment(size_t start, size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string_view::npos) fail(start, "missing end of comment tag '#}'");
    const char before = close > body ? src_[close - 1] : 0;
    size_t p = close + 2;
    if (before == '-') {
      p = skip_python_space(p);
    } else if (before != '+' && p < src_.size() && src_[p] == '\n') {
      ++p;  // trim_blocks
    }
    finish_tag(p);
  }

  void lex_raw(size_t start, size_t body) {
    size_t search = body;
    while (true) {
      const size_t open = src_.find("{%", search);
      if (open == std::string_view::npos) fail(start, "missing '{% endraw %}' for this raw block");
      size_t p = open + 2;
      char modifier = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) modifier = src_[p++];
      while (p < src_.size() && is_ascii_space(src_[p])) ++p;
      if (src_.substr(p, 6) != "endraw") {
        search = open + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && is_ascii_space(src_[p])) ++p;
      size_t end = std::string_view::npos;
      if (src_.substr(p, 3) == "+%}") {
        end = p + 3;
      } else if (src_.substr(p, 3) == "-%}") {
        end = skip_python_space(p + 3);
      } else if (src_.substr(p, 2) == "%}") {
        end = p + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      }
      if (end == std::string_view::npos) {
        search = open + 2;
        continue;
      }
      pos_ = body;
      emit_data(strip_before(std::string(src_.substr(body, open - body)), modifier, true), body);
      finish_tag(end);
      return;
    }
  }

  void finish_tag(size_t end) {
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    pos_ = end;
  }

  void lex_expression_tag(size_t start, size_t p, bool block) {
    emit(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "", start);
    std::string brackets;
    while (true) {
      while (p < src_.size() && is_ascii_space(src_[p])) ++p;
      if (p >= src_.size()) {
        fail(start, block ? "unexpected end of template: this '{%' tag has no '%}'"
                          : "unexpected end of template: this '{{' tag has no '}}'");
      }
      if (brackets.empty()) {
        const size_t end = match_tag_end(p, block);
        if (end != std::string_view::npos) {
          emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "", p);
          finish_tag(end);
          return;
        }
      }
      const char c = src_[p];
      if (is_digit(c)) {
        p = lex_number(p);
      } else if (is_name_start(c)) {
        size_t q = p;
        while (q < src_.size() && is_name_char(src_[q])) ++q;
        emit(TokenType::kName, std::string(src_.substr(p, q - p)), p);
        p = q;
      } else if (c == '\'' || c == '"') {
        p = lex_string(p);
      } else {
        p = lex_operator(p, brackets);
      }
    }
  }

  size_t match_tag_end(size_t p, bool block) const {
    if (block) {
      if (src_.substr(p, 3) == "-%}") return skip_python_space(p + 3);
      if (src_.substr(p, 3) == "+%}") return p + 3;
      if (src_.substr(p, 2) == "%}") {
        return (p + 2 < src_.size() && src_[p + 2] == '\n') ? p + 3 : p + 2;  // trim_blocks
      }
    } else {
      if (src_.substr(p, 3) == "-}}") return skip_python_space(p + 3);
      if (src_.substr(p, 2) == "}}") return p + 2;
    }
    return std::string_view::npos;
  }

  size_t lex_number(size_t p) {
    const size_t start = p;
    auto digits = [&](size_t q, auto is_ok) {
      // (\d+_)*\d+ : digits with single underscores between them.
      if (q >= src_.size() || !is_ok(src_[q])) return q;
      while (q < src_.size()) {
        if (is_ok(src_[q])) {
          ++q;
        } else if (src_[q] == '_' && q + 1 < src_.size() && is_ok(src_[q + 1])) {
          ++q;
        } else {
          break;
        }
      }
      return q;
    };
    auto clean = [](std::string_view s) {
      std::string out;
      for (char ch : s) {
        if (ch != '_') out.push_back(ch);
      }
      return out;
    };
    if (src_[p] == '0' && p + 1 < src_.size()) {
      const char x = static_cast<char>(src_[p + 1] | 0x20);
      const int base = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
      if (base != 0) {
        auto ok = [base](char ch) {
          if (base == 16) return is_digit(ch) || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
          return ch >= '0' && ch < static_cast<char>('0' + base);
        };
        size_t q = p + 2;
        if (q < src_.size() && src_[q] == '_') ++q;
        const size_t end = digits(q, ok);
        if (end > q) {
          emit_integer(clean(src_.substr(q, end - q)), base, start);
          return end;
        }
      }
    }
    const bool after_dot = start > 0 && src_[start - 1] == '.';
    size_t q = digits(p, is_digit);
    bool is_float = false;
    if (!after_dot) {
      size_t f = q;
      if (f + 1 < src_.size() && src_[f] == '.' && is_digit(src_[f + 1])) {
        f = digits(f + 1, is_digit);
        is_float = true;
      }
      if (f < src_.size() && (src_[f] | 0x20) == 'e') {
        size_t e = f + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        const size_t e_end = digits(e, is_digit);
        if (e_end > e) {
          f = e_end;
          is_float = true;
        }
      }
      if (is_float) q = f;
    }
    const std::string text = clean(src_.substr(start, q - start));
    if (is_float) {
      Token t;
      t.type = TokenType::kFloat;
      t.float_value = std::strtod(text.c_str(), nullptr);
      t.offset = start;
      tokens_.push_back(t);
    } else {
      emit_integer(text, 10, start);
    }
    return q;
  }

  void emit_integer(const std::string& digits, int base, size_t offset) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, base);
    if (errno == ERANGE) fail(offset, "integer literal past the int64 range");
    Token t;
    t.type = TokenType::kInteger;
    t.int_value = v;
    t.offset = offset;
    tokens_.push_back(t);
  }

  // A string literal with Python's escapes (jinja2 decodes with "unicode-escape").
  size_t lex_string(size_t p) {
    const size_t start = p;
    const char quote = src_[p++];
    std::string value;
    while (true) {
      if (p >= src_.size()) fail(start, "unterminated string literal");
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        value.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) fail(start, "unterminated string literal");
      const char e = src_[p + 1];
      p += 2;
      auto hex = [&](int n) {
        if (p + n > src_.size()) fail(p - 2, "truncated \\x, \\u or \\U escape");
        char32_t v = 0;
        for (int i = 0; i < n; ++i) {
          const char h = src_[p + i];
          int d = -1;
          if (is_digit(h)) d = h - '0';
          if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') d = (h | 0x20) - 'a' + 10;
          if (d < 0) fail(p - 2, "truncated \\x, \\u or \\U escape");
          v = v * 16 + d;
        }
        p += n;
        if (v > 0x10FFFF) fail(p - n - 2, "\\U escape past U+10FFFF");
        append_utf8(value, v);
      };
      switch (e) {
        case '\n':
          break;  // line continuation
        case '\\':
        case '\'':
        case '"':
          value.push_back(e);
          break;
        case 'a':
          value.push_back('\a');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'v':
          value.push_back('\v');
          break;
        case 'x':
          hex(2);
          break;
        case 'u':
          hex(4);
          break;
        case 'U':
          hex(8);
          break;
        case 'N':
          fail(p - 2, "\\N{...} escapes are not supported; write the character itself");
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = e - '0';
            for (int i = 0; i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i) {
              v = v * 8 + (src_[p++] - '0');
            }
            append_utf8(value, v);
          } else {
            value.push_back('\\');  // unknown escapes stay as written
            value.push_back(e);
          }
      }
    }
    emit(TokenType::kString, std::move(value), start);
    return p + 1;
  }

  size_t lex_operator(size_t p, std::string& brackets) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (src_.substr(p, 2) == op) {
        emit(TokenType::kOperator, std::string(op), p);
        return p + 2;
      }
    }
    const char c = src_[p];
    static constexpr std::string_view kOne = "+-/*%~[](){}><=.:|,;";
    if (kOne.find(c) == std::string_view::npos) {
      fail(p, fmt::format("unexpected character '{}' in a tag", src_.substr(p, 1)));
    }
    if (c == '(' || c == '[' || c == '{') brackets.push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (brackets.empty() || brackets.back() != open) {
        fail(p, fmt::format("unexpected '{}'", c));
      }
      brackets.pop_back();
    }
    emit(TokenType::kOperator, std::string(1, c), p);
    return p + 1;
  }

  std::string_view src_;
  const SourceMap& map_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize_template(std::string_view normalized, const SourceMap& map) {
  return Lexer(normalized, map).run();
}

}  // namespace ctxpar::chat_template
