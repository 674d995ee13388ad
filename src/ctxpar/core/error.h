// Error type and checks. Every message names the bad value and what would be valid, so a
// user can fix a flag or a file without reading the source.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ctxpar {

// The one exception type of the code base. Thrown for bad input (config, flags, files) and
// for broken invariants; callers at the process boundary turn it into exit status 2.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace ctxpar

// CTXPAR_CHECK(cond, "fmt {}", args...): throws ctxpar::Error with the formatted message and
// the source location when cond is false. The message must say what was wrong and what is valid.
#define CTXPAR_CHECK(cond, ...)                                                      \
  do {                                                                               \
    if (!(cond)) [[unlikely]] {                                                      \
      ::ctxpar::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
    }                                                                                \
  } while (0)

// CTXPAR_FAIL("fmt {}", args...): unconditional throw.
#define CTXPAR_FAIL(...) \
  ::ctxpar::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
