#include "ctxpar/server/deepseek_tool_calls.h"

#include <algorithm>
#include <string>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/text_tags.h"

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

std::optional<StableBlock> deepseek_stable_block(std::string_view body, bool v3) {
  size_t keep = body.size();
  for (const std::string_view tag :
       {kBegin, kSep, kEnd, v3 ? kJsonOpen : kEnd, v3 ? kJsonClose : kEnd,
        std::string_view("<｜tool▁calls▁end｜>")}) {
    keep = std::min(keep, body.size() - partial_tag_tail(body, tag));
  }
  const std::string_view stable = body.substr(0, keep);
  StableBlock out{.text = std::string(stable)};
  for (size_t at = stable.find(kBegin); at != std::string_view::npos;) {
    const size_t start = at + kBegin.size();
    const size_t eol = line_end(stable, start);
    // v3: the name's line, then ```json, then the arguments' line; v31: all on one line.
    size_t args = std::string_view::npos;
    if (v3) {
      const size_t sep = stable.substr(start, eol - start).rfind(kSep);
      if (sep != std::string_view::npos && stable.substr(eol).starts_with(kJsonOpen))
        args = eol + kJsonOpen.size();
    } else {
      const size_t sep = stable.find(kSep, start);
      if (sep != std::string_view::npos && sep < eol) args = sep + kSep.size();
    }
    const std::string_view close = v3 ? kJsonClose : kEnd;
    const size_t args_eol = args == std::string_view::npos ? eol : line_end(stable, args);
    const size_t end = args == std::string_view::npos ? args : stable.find(close, args);
    const bool whole = end != std::string_view::npos && (v3 ? end == args_eol : end <= args_eol);
    if (whole) {
      at = stable.find(kBegin, end + close.size());
      continue;
    }
    const bool line_open =
        args == std::string_view::npos ? eol == stable.size() : args_eol == stable.size();
    if (!line_open) {  // its line ended: no call starts here
      at = stable.find(kBegin, at + 1);
      continue;
    }
    if (args == std::string_view::npos) {  // its name is not whole yet
      out.text = std::string(stable.substr(0, at));
      return out;
    }
    out.text += close;
    out.open_call = out.raw_arguments = true;
    return out;
  }
  return out;
}

}  // namespace ctxpar::server
