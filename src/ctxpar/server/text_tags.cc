#include "ctxpar/server/text_tags.h"

#include <algorithm>

namespace ctxpar::server {

size_t partial_tag_tail(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.empty() ? 0 : tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace ctxpar::server
