#include "ctxpar/server/python_space.h"

#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {

size_t python_space_at(std::string_view text, size_t i, PySpace kind) {
  if (i >= text.size()) return 0;
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t n = tokenizer::utf8::char_length(lead);
  if (i + n > text.size() || !tokenizer::utf8::is_valid(text.substr(i, n))) return 0;
  size_t at = i;
  const char32_t c = tokenizer::utf8::decode(text, at);
  if (kind == PySpace::kRegex && c >= 0x1C && c <= 0x1F) return 0;
  return chat_template::is_python_space(c) ? n : 0;
}

size_t skip_python_space(std::string_view text, size_t i, PySpace kind) {
  while (const size_t n = python_space_at(text, i, kind)) i += n;
  return i;
}

std::string_view python_strip_space(std::string_view text) {
  const size_t begin = skip_python_space(text, 0);
  size_t end = text.size();
  // Walk back over whole characters: find the start of the last one and test it.
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    if (python_space_at(text, start) != end - start) break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

}  // namespace ctxpar::server
