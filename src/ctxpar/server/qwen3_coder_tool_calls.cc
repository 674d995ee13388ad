#include "ctxpar/server/qwen3_coder_tool_calls.h"

#include <algorithm>
#include <string>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"
#include "ctxpar/server/python_space.h"
#include "ctxpar/server/text_tags.h"
#include "ctxpar/server/tool_schema.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";
constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";

// Where a `(.*?)$` group starting at `from` ends: before a final newline, else at the end.
size_t lazy_end(std::string_view s, size_t from) {
  return !s.empty() && s.back() == '\n' && s.size() - 1 >= from ? s.size() - 1 : s.size();
}

// findall of <function=(.*?)</function>|<function=(.*)$: each function's text.
std::vector<std::string_view> function_texts(std::string_view raw) {
  std::vector<std::string_view> out;
  for (size_t at = raw.find(kFunction); at != std::string_view::npos;) {
    const size_t start = at + kFunction.size();
    const size_t end = raw.find(kFunctionEnd, start);
    if (end == std::string_view::npos) {  // the greedy branch: to the very end
      out.push_back(raw.substr(start));
      break;
    }
    out.push_back(raw.substr(start, end - start));
    at = raw.find(kFunction, end + kFunctionEnd.size());
  }
  return out;
}

// One value's text as vLLM keeps it: a leading and a trailing newline off.
std::string_view trim_newlines(std::string_view v) {
  if (v.starts_with('\n')) v.remove_prefix(1);
  if (v.ends_with('\n')) v.remove_suffix(1);
  return v;
}

// The call a function's text holds: an empty vector when it has no '>' (vLLM skips it), nullopt
// where vLLM raises.
std::optional<std::vector<ToolCall>> function_call(std::string_view text,
                                                   const nlohmann::json& tools) {
  const size_t name_end = text.find('>');
  if (name_end == std::string_view::npos) return std::vector<ToolCall>{};
  const std::string name(text.substr(0, name_end));
  const nlohmann::json& properties = tool_properties(tools, name);
  const std::string_view params = text.substr(name_end + 1);
  ordered_json args = ordered_json::object();
  // findall of <parameter=(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)
  for (size_t at = params.find(kParam); at != std::string_view::npos;
       at = params.find(kParam, at)) {
    const size_t start = at + kParam.size();
    const size_t close = params.find(kParamEnd, start);
    const size_t end = std::min({close, params.find(kParam, start),
                                 params.find(kFunctionEnd, start), lazy_end(params, start)});
    const std::string_view param = params.substr(start, end - start);
    at = end == close ? end + kParamEnd.size() : end;
    const size_t key_end = param.find('>');
    if (key_end == std::string_view::npos) return std::nullopt;  // str.index raises ValueError
    const std::string key(param.substr(0, key_end));
    const auto schema = properties.find(key);
    std::optional<ordered_json> value = legacy_coerce_to_schema_type(
        trim_newlines(param.substr(key_end + 1)),
        schema_types(schema == properties.end() ? nlohmann::json::object() : *schema));
    if (!value) return std::nullopt;
    args[key] = std::move(*value);
  }
  return std::vector<ToolCall>{
      ToolCall{"chatcmpl-tool-" + random_hex(32), name, python_json_text(args)}};
}

}  // namespace

std::optional<std::vector<ToolCall>> qwen3_coder_tool_calls(std::string_view body, bool closed,
                                                            const nlohmann::json& tools) {
  if (!closed) body = body.substr(0, lazy_end(body, 0));
  std::vector<ToolCall> calls;
  for (std::string_view text : function_texts(body)) {
    std::optional<std::vector<ToolCall>> call = function_call(text, tools);
    if (!call) return std::nullopt;
    for (ToolCall& c : *call) calls.push_back(std::move(c));
  }
  return calls;
}

std::optional<StableBlock> qwen3_coder_stable_block(std::string_view body,
                                                    const nlohmann::json& tools) {
  size_t keep = body.size();
  for (const std::string_view tag : {kFunction, kFunctionEnd, kParam, kParamEnd, kCallClose}) {
    keep = std::min(keep, body.size() - partial_tag_tail(body, tag));
  }
  std::string_view stable = body.substr(0, keep);
  const auto drop_final_newlines = [&] {
    while (stable.ends_with('\n')) stable.remove_suffix(1);
  };
  StableBlock out;
  for (;;) {
    drop_final_newlines();
    // The function still open, as function_texts reads them (each runs to its first
    // </function>, whatever tags its values hold).
    size_t function = stable.find(kFunction);
    if (function == std::string_view::npos) return std::nullopt;
    for (size_t end; (end = stable.find(kFunctionEnd, function)) != std::string_view::npos;) {
      function = stable.find(kFunction, end + kFunctionEnd.size());
      if (function == std::string_view::npos) break;
    }
    if (function == std::string_view::npos) break;  // every function is closed
    const size_t name_end = stable.find('>', function);
    if (name_end == std::string_view::npos) {  // its name is not whole: the one before is last
      stable = stable.substr(0, function);
      continue;
    }
    out.open_call = true;
    // The function's last parameter, found forward: rfind would walk the open value backward
    // byte by byte on every delta, where find skips to each '<'.
    size_t param = std::string_view::npos;
    for (size_t at = stable.find(kParam, name_end); at != std::string_view::npos;
         at = stable.find(kParam, at + kParam.size())) {
      param = at;
    }
    if (param == std::string_view::npos ||
        stable.find(kParamEnd, param) != std::string_view::npos) {
      break;
    }
    const size_t key_end = stable.find('>', param);
    if (key_end != std::string_view::npos) {
      const std::string_view name =
          stable.substr(function + kFunction.size(), name_end - function - kFunction.size());
      const std::string key(stable.substr(param + kParam.size(), key_end - param - kParam.size()));
      const nlohmann::json& properties = tool_properties(tools, name);
      const auto schema = properties.find(key);
      out.open_string =
          schema_types(schema == properties.end() ? nlohmann::json::object() : *schema) ==
          std::vector<std::string>{"string"};
      // The value loses one leading newline: where it starts is known once a character came.
      if (out.open_string && key_end + 1 < stable.size()) {
        out.value_at = key_end + 1 + (stable[key_end + 1] == '\n' ? 1 : 0);
        out.value_end = std::max(out.value_at, stable.size());
      }
    }
    if (!out.open_string) {  // typed only once whole: left out until it closes
      stable = stable.substr(0, param);
      drop_final_newlines();
    }
    break;
  }
  out.text = std::string(stable);
  return out;
}

size_t qwen3_coder_content_end(std::string_view text) {
  const size_t open = text.find(kCallOpen);
  return open != std::string_view::npos ? open : text.find(kFunction);
}

ToolCallSplit split_qwen3_coder(std::string_view text, const nlohmann::json& tools) {
  ToolCallSplit all_content{std::string(text), {}};
  if (text.find(kFunction) == std::string_view::npos) return all_content;
  ToolCallSplit out;
  const auto add = [&](std::string_view body, bool closed) {
    std::optional<std::vector<ToolCall>> calls = qwen3_coder_tool_calls(body, closed, tools);
    if (!calls) return false;
    for (ToolCall& c : *calls) out.calls.push_back(std::move(c));
    return true;
  };
  const size_t first = text.find(kCallOpen);
  if (first == std::string_view::npos) {
    if (!add(text, /*closed=*/true)) return all_content;  // no <tool_call>: the whole output
  }
  for (size_t at = first; at != std::string_view::npos;) {
    const size_t body = at + kCallOpen.size();
    const size_t close = text.find(kCallClose, body);
    if (!add(text.substr(body, close == std::string_view::npos ? close : close - body),
             close != std::string_view::npos)) {
      return all_content;
    }
    if (close == std::string_view::npos) break;
    at = text.find(kCallOpen, close + kCallClose.size());
  }
  if (out.calls.empty()) return all_content;
  const std::string_view before = text.substr(0, qwen3_coder_content_end(text));
  if (!python_strip_space(before).empty()) out.content = std::string(before);
  return out;
}

}  // namespace ctxpar::server
