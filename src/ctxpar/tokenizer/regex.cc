#include "ctxpar/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

// The White_Space code points (Oniguruma's Unicode `\s`), as the inside of a class.
constexpr std::string_view kWhiteSpaceClass =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return std::string(reinterpret_cast<const char*>(buffer));
}

}  // namespace

std::string translate_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  bool class_start = false;  // just after "[" or "[^": a "]" here is a literal
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      ++i;
      class_start = false;
      if (e == 's') {
        if (in_class) {
          out.append(kWhiteSpaceClass);
        } else {
          out.append("[").append(kWhiteSpaceClass).append("]");
        }
      } else if (e == 'S' && !in_class) {
        out.append("[^").append(kWhiteSpaceClass).append("]");
      } else {
        out.push_back('\\');
        out.push_back(e);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      class_start = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out.push_back('^');
        ++i;
      }
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      // A POSIX class such as [:alpha:] inside a bracket expression: copy it whole.
      const size_t close = p.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(p.substr(i, close + 2 - i));
        i = close + 1;
        class_start = false;
        continue;
      }
    }
    if (in_class && c == ']' && !class_start) in_class = false;
    class_start = false;
    out.push_back(c);
  }
  return out;
}

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern) : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  const std::string translated = translate_pattern(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  CTXPAR_CHECK_INPUT(impl_->code != nullptr, "regex '{}' does not compile: {} (at offset {})",
                     pattern, pcre2_message(error), offset);
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::find_all(std::string_view text, std::vector<Span>& out) const {
  struct MatchData {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    ~MatchData() { pcre2_match_data_free(data); }
  };
  thread_local MatchData md;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    // The input was repaired to valid UTF-8 and `start` is always a character boundary, so
    // PCRE2's UTF check (linear in the subject on every call) is skipped.
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), start,
                                          PCRE2_NO_UTF_CHECK, md.data, nullptr)
                        : PCRE2_ERROR_JIT_STACKLIMIT;
    // The interpreter keeps its backtracking state on the heap: it takes over when the JIT's
    // fixed stack is too small for a long run of backtracking.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(impl_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md.data,
                       nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) return;
    CTXPAR_CHECK(rc >= 0, "regex '{}' failed on a {}-byte text: {}", pattern_, text.size(),
                 pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
    const auto b = static_cast<uint32_t>(ov[0]), e = static_cast<uint32_t>(ov[1]);
    out.push_back({b, e});
    if (e > b) {
      start = e;
    } else {
      if (e >= text.size()) return;
      start = e + utf8::char_length(static_cast<unsigned char>(text[e]));
    }
  }
}

}  // namespace ctxpar::tokenizer
