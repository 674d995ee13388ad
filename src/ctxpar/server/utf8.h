// UTF-8 that is safe to put in JSON: decoded bytes with every invalid sequence replaced by
// U+FFFD (one per maximal invalid subpart, as Python's errors="replace" does), cut only at
// character boundaries so that a stream of pieces concatenates to the whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ctxpar::server {

// Appends to `out` the valid-UTF-8 form of the longest prefix of `bytes` that ends at a
// character boundary and returns how many bytes it consumed. A trailing incomplete sequence
// that later bytes could still complete is left unconsumed, unless `final`: then it becomes
// U+FFFD and everything is consumed.
size_t append_valid_utf8(std::string_view bytes, bool final, std::string& out);

// The whole of `bytes` as valid UTF-8 (append_valid_utf8 with final).
std::string valid_utf8(std::string_view bytes);

// Number of code points in valid UTF-8 text, and the byte offset where the last `n` start.
size_t utf8_length(std::string_view text);
size_t utf8_offset_of_last(std::string_view text, size_t n);

}  // namespace ctxpar::server
