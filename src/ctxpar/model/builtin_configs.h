// The config.json texts of the built-in models ("builtin:NAME"). They go through the same
// parser as files on disk, so a built-in can never drift from what a real config would give.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ctxpar::model {

struct BuiltinConfig {
  std::string_view name;  // without the "builtin:" prefix
  std::string json;
  // A real deployment's config for `ctxpar plan` only (no dummy-weight runs: far too big).
  bool config_only = false;
};

std::span<const BuiltinConfig> builtin_configs();

}  // namespace ctxpar::model
