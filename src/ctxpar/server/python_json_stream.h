// python_json_text (python_json.h) of one JSON object or array, written as its text arrives, so
// that a tool call's arguments can stream in the form the whole response gives them: each add()
// returns what the text so far fixes of json.dumps(json.loads(text), ensure_ascii=False).
// Strings go out character by character, re-escaped as json.dumps escapes them; a number goes out
// once it ends (as python_json_text writes the value nlohmann reads); whitespace between tokens
// is dropped and ", " / ": " written. Text the whole-response path would refuse (a raw control
// character in a string, a lone surrogate escape, NaN, a malformed number or literal) stops the
// stream (failed()): nothing more goes out. A repeated key, which json.loads keeps in its first
// place, is written where it comes; the caller compares with the whole value at the end.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::server {

class PythonJsonStream {
 public:
  // More text of the value (its first byte must be '{' or '['). Bytes after the value's end are
  // not read: consumed() says how many were.
  std::string add(std::string_view text);
  bool done() const { return at_ == At::kDone; }
  bool failed() const { return at_ == At::kFailed; }
  // Bytes of all add() calls that belong to the value.
  size_t consumed() const { return consumed_; }

 private:
  enum class At : uint8_t {
    kStart,
    kValue,       // a value must come (after ':' or ',' in an array)
    kFirstValue,  // after '[': a value or ']'
    kFirstKey,    // after '{': a key or '}'
    kKey,         // after ',' in an object
    kColon,
    kAfterValue,
    kString,
    kEscape,
    kUnicode,  // inside \uXXXX
    kNumber,
    kLiteral,
    kDone,
    kFailed,
  };
  // Feeds one byte; false when the byte is not the value's (after its end).
  bool step(char c, std::string& out);
  bool value_start(char c, std::string& out);
  void after_value();
  void end_number(std::string& out);
  void write_code_point(uint32_t c, std::string& out);

  At at_ = At::kStart;
  std::vector<char> open_;  // '{' or '[' per level
  bool key_ = false;        // the string being read is a key
  std::string token_;       // a number or literal so far; a \u escape's hex digits
  uint32_t high_ = 0;       // a high surrogate waiting for its low half
  size_t consumed_ = 0;
};

}  // namespace ctxpar::server
