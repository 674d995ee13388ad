#include "ctxpar/tokenizer/string_pattern.h"

namespace ctxpar::tokenizer {

StringPattern::StringPattern(const JsonNode& node) {
  if (const auto s = node.find("String")) {
    literal_ = s->string();
  } else if (const auto r = node.find("Regex")) {
    try {
      regex_.emplace(r->string());
    } catch (const Error& e) {
      r->fail("{}", e.what());
    }
  } else {
    node.fail("a pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}");
  }
}

void StringPattern::find_all(std::string_view text, std::vector<Span>& out) const {
  if (regex_) {
    regex_->find_all(text, out);
    return;
  }
  if (literal_.empty()) {
    // As the regex "" that tokenizers compiles it to: an empty match at every boundary.
    for (size_t i = 0;; i += utf8::char_length(static_cast<unsigned char>(text[i]))) {
      out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(i)});
      if (i >= text.size()) return;
    }
  }
  for (size_t at = text.find(literal_); at != std::string_view::npos;
       at = text.find(literal_, at + literal_.size())) {
    out.push_back({static_cast<uint32_t>(at), static_cast<uint32_t>(at + literal_.size())});
  }
}

void StringPattern::segments(std::string_view text, std::vector<Segment>& out) const {
  thread_local std::vector<Span> spans;
  spans.clear();
  find_all(text, spans);
  span_segments(text, spans, out);
}

}  // namespace ctxpar::tokenizer
