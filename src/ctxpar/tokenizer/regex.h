// The regexes of pre-tokenizers and normalizers, with the semantics of Oniguruma (what the
// Hugging Face `tokenizers` crate uses): PCRE2 in UTF + UCP mode with JIT, and `\s` / `\S`
// rewritten to the White_Space property (PCRE2's UCP `\s` also matches U+180E).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::tokenizer {

struct Span {
  uint32_t begin, end;  // byte offsets, end exclusive
};

class Regex {
 public:
  // Throws ctxpar::InputError with PCRE2's message and the offset of the error.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Appends to `out` the non-overlapping leftmost matches in `text` (valid UTF-8), scanning
  // left to right; after an empty match the scan moves on by one character. Throws
  // ctxpar::Error if PCRE2 gives up (match limits), never crashes.
  void find_all(std::string_view text, std::vector<Span>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

// Oniguruma's `\s`/`\S` as explicit classes (exposed for tests).
std::string translate_pattern(std::string_view pattern);

}  // namespace ctxpar::tokenizer
