#include "ctxpar/server/deepseek_tool_calls.h"

#include <string>

#include "ctxpar/server/openai_responses.h"

namespace ctxpar::server {
namespace {

constexpr std::string_view kBegin = "<｜tool▁call▁begin｜>", kSep = "<｜tool▁sep｜>";
constexpr std::string_view kEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kJsonOpen = "\n```json\n", kJsonClose = "\n```<｜tool▁call▁end｜>";

ToolCall call(std::string_view name, std::string_view arguments) {
  return ToolCall{"chatcmpl-tool-" + random_hex(32), std::string(name), std::string(arguments)};
}

// The end of the line that `at` is on (the index of its '\n', or the end of the text).
size_t line_end(std::string_view s, size_t at) {
  const size_t nl = s.find('\n', at);
  return nl == std::string_view::npos ? s.size() : nl;
}

}  // namespace

std::optional<std::vector<ToolCall>> deepseek_v3_tool_calls(std::string_view body) {
  // findall of `<begin>(.*)<sep>(.*)\n```json\n(.*)\n```<end>` without DOTALL: TYPE runs to the
  // last separator of the begin tag's line, NAME to the end of that line, ARGS is the line after
  // ```json.
  std::vector<ToolCall> calls;
  for (size_t at = body.find(kBegin); at != std::string_view::npos; at = body.find(kBegin, at)) {
    const size_t type = at + kBegin.size();
    const size_t eol = line_end(body, type);
    const size_t sep = body.substr(type, eol - type).rfind(kSep);
    if (sep == std::string_view::npos || !body.substr(eol).starts_with(kJsonOpen)) {
      ++at;
      continue;
    }
    const size_t args = eol + kJsonOpen.size();
    const size_t args_end = line_end(body, args);
    if (!body.substr(args_end).starts_with(kJsonClose)) {
      ++at;
      continue;
    }
    if (body.substr(type, sep) != "function") return std::nullopt;
    const size_t name = type + sep + kSep.size();
    calls.push_back(call(body.substr(name, eol - name), body.substr(args, args_end - args)));
    at = args_end + kJsonClose.size();
  }
  return calls;
}

std::vector<ToolCall> deepseek_v31_tool_calls(std::string_view body) {
  // findall of `<begin>(.*?)<sep>(.*?)<end>` without DOTALL: the first separator and the first
  // end after it, both on the begin tag's line.
  std::vector<ToolCall> calls;
  for (size_t at = body.find(kBegin); at != std::string_view::npos; at = body.find(kBegin, at)) {
    const size_t name = at + kBegin.size();
    const size_t eol = line_end(body, name);
    const size_t sep = body.find(kSep, name);
    const size_t args = sep + kSep.size();
    const size_t end = sep == std::string_view::npos ? sep : body.find(kEnd, args);
    if (end == std::string_view::npos || end > eol) {
      ++at;
      continue;
    }
    calls.push_back(call(body.substr(name, sep - name), body.substr(args, end - args)));
    at = end + kEnd.size();
  }
  return calls;
}

}  // namespace ctxpar::server
