#include "flag_aliases.h"

#include <algorithm>
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
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

// "--NAME.KEY..." (NAME without dots): NAME and the dotted KEY path; else nullopt.
std::optional<std::pair<std::string, std::string>> dotted_flag(std::string_view arg) {
  if (arg.size() < 4 || arg.substr(0, 2) != "--") return std::nullopt;
  const std::string_view body = arg.substr(2, arg.find('=') - 2);
  const size_t dot = body.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == body.size()) return std::nullopt;
  return std::pair(std::string("--") + std::string(body.substr(0, dot)),
                   std::string(body.substr(dot + 1)));
}

// Sets value at the dotted path in `config` (creating objects on the way).
void set_path(nlohmann::json& config, const std::string& path, const std::string& value) {
  nlohmann::json* at = &config;
  size_t start = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    at = &(*at)[path.substr(start, dot - start)];
    if (!at->is_object()) *at = nlohmann::json::object();
    start = dot + 1;
  }
  nlohmann::json parsed = nlohmann::json::parse(value, nullptr, false);
  (*at)[path.substr(start)] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
}

}  // namespace

void parse_with_flag_aliases(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args;
  std::map<std::string, std::pair<size_t, nlohmann::json>> dotted;  // NAME: (its JSON's slot, JSON)
  bool after_separator = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto name_key = after_separator ? std::nullopt : dotted_flag(arg);
    if (name_key) {
      std::string value;
      if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
        value = arg.substr(eq + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw CLI::ParseError(std::string(arg) + " needs a value",
                              CLI::ExitCodes::ArgumentMismatch);
      }
      auto [it, fresh] =
          dotted.try_emplace(name_key->first, args.size() + 1, nlohmann::json::object());
      if (fresh) {
        args.push_back(name_key->first);
        args.emplace_back();  // the JSON, written once every key is in
      }
      set_path(it->second.second, name_key->second, value);
      continue;
    }
    args.push_back(after_separator ? std::string(arg) : expand(arg));
    after_separator = after_separator || arg == "--";
  }
  for (const auto& [name, slot_json] : dotted) args[slot_json.first] = slot_json.second.dump();
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector form reversed
  app.parse(args);
}

}  // namespace ctxpar::app
