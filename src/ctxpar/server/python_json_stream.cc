#include "ctxpar/server/python_json_stream.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ctxpar/server/python_json.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PythonJsonStream::add(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (at_ == At::kDone || at_ == At::kFailed) break;
    if (!step(c, out)) break;
    ++consumed_;
  }
  return out;
}

void PythonJsonStream::after_value() {
  at_ = open_.empty() ? At::kDone : At::kAfterValue;
}

bool PythonJsonStream::value_start(char c, std::string& out) {
  if (c == '{' || c == '[') {
    open_.push_back(c);
    out += c;
    at_ = c == '{' ? At::kFirstKey : At::kFirstValue;
  } else if (c == '"') {
    out += c;
    key_ = false;
    at_ = At::kString;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    token_.assign(1, c);
    at_ = At::kNumber;
  } else if (c == 't' || c == 'f' || c == 'n') {
    token_.assign(1, c);
    at_ = At::kLiteral;
  } else {
    at_ = At::kFailed;
  }
  return true;
}

void PythonJsonStream::end_number(std::string& out) {
  const auto v = nlohmann::ordered_json::parse(token_, nullptr, false);
  if (!v.is_number()) {
    at_ = At::kFailed;
    return;
  }
  out += python_json_text(v);
  after_value();
}

// json.dumps's form of one decoded code point inside a string.
void PythonJsonStream::write_code_point(uint32_t c, std::string& out) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  if (c < 0x20) {
    out += fmt::format("\\u{:04x}", c);
  } else {
    tokenizer::utf8::append(out, static_cast<char32_t>(c));
  }
}

bool PythonJsonStream::step(char c, std::string& out) {
  switch (at_) {
    case At::kStart:
      if (c != '{' && c != '[') {
        at_ = At::kFailed;
        return true;
      }
      return value_start(c, out);
    case At::kValue:
      if (is_space(c)) return true;
      return value_start(c, out);
    case At::kFirstValue:
      if (is_space(c)) return true;
      if (c == ']') {
        open_.pop_back();
        out += c;
        after_value();
        return true;
      }
      return value_start(c, out);
    case At::kFirstKey:
    case At::kKey:
      if (is_space(c)) return true;
      if (c == '}' && at_ == At::kFirstKey) {
        open_.pop_back();
        out += c;
        after_value();
      } else if (c == '"') {
        out += c;
        key_ = true;
        at_ = At::kString;
      } else {
        at_ = At::kFailed;
      }
      return true;
    case At::kColon:
      if (is_space(c)) return true;
      if (c == ':') {
        out += ": ";
        at_ = At::kValue;
      } else {
        at_ = At::kFailed;
      }
      return true;
    case At::kAfterValue:
      if (is_space(c)) return true;
      if (c == ',') {
        out += ", ";
        at_ = open_.back() == '{' ? At::kKey : At::kValue;
      } else if ((c == '}' && open_.back() == '{') || (c == ']' && open_.back() == '[')) {
        open_.pop_back();
        out += c;
        after_value();
      } else {
        at_ = At::kFailed;
      }
      return true;
    case At::kString: {
      const auto b = static_cast<uint8_t>(c);
      if (high_ != 0 && c != '\\') {  // a high surrogate escape must be followed by its low one
        at_ = At::kFailed;
      } else if (c == '"') {
        out += c;
        if (key_) {
          at_ = At::kColon;
        } else {
          after_value();
        }
      } else if (c == '\\') {
        at_ = At::kEscape;
      } else if (b < 0x20) {
        at_ = At::kFailed;  // JSON refuses a raw control character
      } else {
        out += c;
      }
      return true;
    }
    case At::kEscape: {
      at_ = At::kString;
      if (high_ != 0 && c != 'u') {
        at_ = At::kFailed;
        return true;
      }
      switch (c) {
        case '"':
          write_code_point('"', out);
          break;
        case '\\':
          write_code_point('\\', out);
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          write_code_point('\b', out);
          break;
        case 'f':
          write_code_point('\f', out);
          break;
        case 'n':
          write_code_point('\n', out);
          break;
        case 'r':
          write_code_point('\r', out);
          break;
        case 't':
          write_code_point('\t', out);
          break;
        case 'u':
          token_.clear();
          at_ = At::kUnicode;
          break;
        default:
          at_ = At::kFailed;
      }
      return true;
    }
    case At::kUnicode: {
      if (hex_value(c) < 0) {
        at_ = At::kFailed;
        return true;
      }
      token_ += c;
      if (token_.size() < 4) return true;
      uint32_t u = 0;
      for (const char h : token_) u = u * 16 + static_cast<uint32_t>(hex_value(h));
      at_ = At::kString;
      if (high_ != 0) {
        if (u < 0xDC00 || u > 0xDFFF) {
          at_ = At::kFailed;
          return true;
        }
        write_code_point(0x10000 + ((high_ - 0xD800) << 10) + (u - 0xDC00), out);
        high_ = 0;
      } else if (u >= 0xD800 && u <= 0xDBFF) {
        high_ = u;
      } else if (u >= 0xDC00 && u <= 0xDFFF) {
        at_ = At::kFailed;  // a lone low surrogate
      } else {
        write_code_point(u, out);
      }
      return true;
    }
    case At::kNumber:
      if (is_number_char(c)) {
        token_ += c;
        return true;
      }
      end_number(out);
      if (at_ == At::kDone) return false;  // c follows the value
      return at_ == At::kFailed ? true : step(c, out);
    case At::kLiteral: {
      token_ += c;
      for (const std::string_view word : {"true", "false", "null"}) {
        if (word == token_) {
          out += token_;
          after_value();
          return true;
        }
        if (word.substr(0, token_.size()) == token_) return true;
      }
      at_ = At::kFailed;
      return true;
    }
    case At::kDone:
    case At::kFailed:
      break;
  }
  return false;
}

}  // namespace ctxpar::server
