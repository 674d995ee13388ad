#include "flag_aliases.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctxpar::app {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kAliases = {{
    {"-tp", "--tensor-parallel-size"},
    {"-dcp", "--decode-context-parallel-size"},
    {"-pp", "--pipeline-parallel-size"},
    {"-dp", "--data-parallel-size"},
}};

std::string expand(std::string_view arg) {
  for (const auto& [alias, flag] : kAliases) {
    if (arg == alias) return std::string(flag);
    if (arg.size() > alias.size() && arg.substr(0, alias.size()) == alias &&
        arg[alias.size()] == '=') {
      return std::string(flag) + std::string(arg.substr(alias.size()));
    }
  }
  return std::string(arg);
}

}  // namespace

void parse_with_flag_aliases(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args;
  bool after_separator = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    args.push_back(after_separator ? std::string(arg) : expand(arg));
    after_separator = after_separator || arg == "--";
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector form reversed
  app.parse(args);
}

}  // namespace ctxpar::app
