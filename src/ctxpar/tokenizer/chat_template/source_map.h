// Where an offset of a template lies, for error messages: "origin:line:column" (1-based; the
// column counts code points).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::chat_template {

class SourceMap {
 public:
  SourceMap(std::string origin, std::string_view source);
  // "tokenizer_config.json:12:7".
  std::string where(size_t offset) const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::string source_;
  std::vector<size_t> line_starts_;
};

}  // namespace ctxpar::chat_template
