#include "ctxpar/tokenizer/chat_template/source_map.h"

#include <algorithm>

#include <fmt/format.h>

#include "ctxpar/tokenizer/chat_template/python_text.h"

namespace ctxpar::chat_template {

SourceMap::SourceMap(std::string origin, std::string_view source)
    : origin_(std::move(origin)), source_(source) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < source_.size(); ++i) {
    if (source_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string SourceMap::where(size_t offset) const {
  offset = std::min(offset, source_.size());
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());
  const size_t start = line_starts_[line - 1];
  const size_t column =
      count_code_points(std::string_view(source_).substr(start, offset - start)) + 1;
  return fmt::format("{}:{}:{}", origin_, line, column);
}

}  // namespace ctxpar::chat_template
