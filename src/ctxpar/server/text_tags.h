// Tags such as </think> or <tool_call> in text that arrives in pieces (the chat output
// parsers): how much of a piece's end must wait for the next piece.
#pragma once

#include <cstddef>
#include <string_view>

namespace ctxpar::server {

// The length of the longest tail of `text` that is a proper prefix of `tag` (0 when none):
// the bytes to hold back because the next piece may complete the tag.
size_t partial_tag_tail(std::string_view text, std::string_view tag);

}  // namespace ctxpar::server
