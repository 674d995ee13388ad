// Error types and checks. Every message names the bad value and what would be valid, so a
// user can fix a flag or a file without reading the source.
//
// Two kinds, because the process reports them differently (exit status 2 vs 3):
//   InputError  the user's input is wrong: a flag, a config or checkpoint file, a prompt, a
//               request. The message is about their input, so it carries no source location.
//   Error       anything else, chiefly a broken internal invariant: the message ends in the
//               source location ("[ctxpar/kernels/linear.cc:53]") for the bug report.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ctxpar {

// The exception type of the code base; catch this to catch both kinds.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what) {}
};

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
[[noreturn]] void throw_input_error(const std::string& message);
}  // namespace detail

}  // namespace ctxpar

// CTXPAR_CHECK(cond, "fmt {}", args...): throws ctxpar::Error with the formatted message and
// the source location when cond is false (an internal invariant). The message must say what
// was wrong and what is valid.
#define CTXPAR_CHECK(cond, ...)                                                      \
  do {                                                                               \
    if (!(cond)) [[unlikely]] {                                                      \
      ::ctxpar::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
    }                                                                                \
  } while (0)

// CTXPAR_FAIL("fmt {}", args...): unconditional throw.
#define CTXPAR_FAIL(...) \
  ::ctxpar::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))

// CTXPAR_CHECK_INPUT(cond, "fmt {}", args...): throws ctxpar::InputError when cond is false.
// For checks of what a user gave (flags, files, prompts, requests); the message names the
// flag, file or field, the bad value and what is valid.
#define CTXPAR_CHECK_INPUT(cond, ...)                                  \
  do {                                                                 \
    if (!(cond)) [[unlikely]] {                                        \
      ::ctxpar::detail::throw_input_error(::fmt::format(__VA_ARGS__)); \
    }                                                                  \
  } while (0)

// CTXPAR_INPUT_FAIL("fmt {}", args...): unconditional InputError.
#define CTXPAR_INPUT_FAIL(...) ::ctxpar::detail::throw_input_error(::fmt::format(__VA_ARGS__))
