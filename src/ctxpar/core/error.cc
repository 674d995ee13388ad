#include "ctxpar/core/error.h"

#include <cstring>

namespace ctxpar::detail {

void throw_error(const char* file, int line, const std::string& message) {
  // Keep only the path below src/ so messages are stable across checkouts.
  const char* shown = std::strstr(file, "ctxpar/");
  throw Error(fmt::format("{} [{}:{}]", message, shown ? shown : file, line));
}

void throw_input_error(const std::string& message) {
  throw InputError(message);
}

}  // namespace ctxpar::detail
