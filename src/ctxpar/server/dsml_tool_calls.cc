#include "ctxpar/server/dsml_tool_calls.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"
#include "ctxpar/server/python_space.h"
#include "ctxpar/server/text_tags.h"
#include "ctxpar/server/tool_schema.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kInvoke = "<｜DSML｜invoke", kInvokeEnd = "</｜DSML｜invoke>";
constexpr std::string_view kParam = "<｜DSML｜parameter", kParamEnd = "</｜DSML｜parameter>";

// After `at`, the literal `text`; the index past it, or npos.
size_t expect(std::string_view s, size_t at, std::string_view text) {
  return at != std::string_view::npos && s.substr(at).starts_with(text) ? at + text.size()
                                                                        : std::string_view::npos;
}

// `\s+` (at least one) or `\s*` at `at`; npos when `\s+` finds none.
size_t spaces(std::string_view s, size_t at, bool at_least_one) {
  if (at == std::string_view::npos) return at;
  const size_t end = skip_python_space(s, at, PySpace::kRegex);
  return at_least_one && end == at ? std::string_view::npos : end;
}

// `"([^"]+)"` at `at`: the quoted text (at least one character) and the index past it.
size_t quoted(std::string_view s, size_t at, std::string_view& out) {
  at = expect(s, at, "\"");
  if (at == std::string_view::npos) return at;
  const size_t close = s.find('"', at);
  if (close == std::string_view::npos || close == at) return std::string_view::npos;
  out = s.substr(at, close - at);
  return close + 1;
}

// One element found by a regex findall: the attributes of its opening tag and its body.
struct Element {
  std::string_view name, string_attr, body;
};

// findall of an element `open ... >body close` whose opening tag `header` reads from just after
// `open` (npos: no match there); the body runs to the first `close` after the tag.
template <typename Header>
std::vector<Element> find_all(std::string_view s, std::string_view open, std::string_view close,
                              Header header) {
  std::vector<Element> out;
  for (size_t at = s.find(open); at != std::string_view::npos; at = s.find(open, at)) {
    Element e;
    const size_t body = header(s, at + open.size(), e);
    const size_t end = body == std::string_view::npos ? body : s.find(close, body);
    if (end == std::string_view::npos) {
      ++at;  // no match here: findall tries the next place
      continue;
    }
    e.body = s.substr(body, end - body);
    out.push_back(e);
    at = end + close.size();
  }
  return out;
}

// `\s+name="([^"]+)"\s*>`
size_t invoke_header(std::string_view s, size_t at, Element& e) {
  at = expect(s, spaces(s, at, true), "name=");
  at = expect(s, spaces(s, quoted(s, at, e.name), false), ">");
  return at;
}

// `\s+name="([^"]+)"\s+string="(true|false)"\s*>`
size_t parameter_header(std::string_view s, size_t at, Element& e) {
  at = expect(s, spaces(s, at, true), "name=");
  at = expect(s, spaces(s, quoted(s, at, e.name), true), "string=");
  if (const size_t t = expect(s, at, "\"true\""); t != std::string_view::npos) {
    e.string_attr = "true";
    at = t;
  } else {
    e.string_attr = "false";
    at = expect(s, at, "\"false\"");
  }
  return expect(s, spaces(s, at, false), ">");
}

// vLLM's _repair_param_dict: a lone `arguments` / `input` wrapper the schema does not name,
// around an object whose keys it does, is unwrapped.
ordered_json unwrap(ordered_json params, const nlohmann::json& properties) {
  std::set<std::string> allowed;
  for (const auto& [key, value] : properties.items()) allowed.insert(key);
  for (const char* wrapper : {"arguments", "input"}) {
    if (params.size() != 1 || !params.contains(wrapper) || allowed.count(wrapper) > 0) continue;
    ordered_json inner = params[wrapper];
    if (inner.is_string()) {
      inner = ordered_json::parse(inner.get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (inner.is_discarded()) return params;
    }
    if (!inner.is_object()) continue;
    bool named = true;
    for (const auto& [key, value] : inner.items()) named = named && allowed.count(key) > 0;
    if (named) return inner;
  }
  return params;
}

}  // namespace

std::vector<ToolCall> dsml_tool_calls(std::string_view body, const nlohmann::json& tools) {
  std::vector<ToolCall> calls;
  for (const Element& invoke : find_all(body, kInvoke, kInvokeEnd, invoke_header)) {
    const std::string name(invoke.name);
    const nlohmann::json& properties = tool_properties(tools, name);
    ordered_json params = ordered_json::object();
    for (const Element& p : find_all(invoke.body, kParam, kParamEnd, parameter_header)) {
      const std::string key(p.name);
      if (p.string_attr == "true") {
        params[key] = std::string(p.body);
        continue;
      }
      const auto schema = properties.find(key);
      params[key] = coerce_to_schema_type(
          p.body, schema_types(schema == properties.end() ? nlohmann::json::object() : *schema));
    }
    calls.push_back(ToolCall{"chatcmpl-tool-" + random_hex(32), name,
                             python_json_text(unwrap(std::move(params), properties))});
  }
  return calls;
}

std::optional<StableBlock> dsml_stable_block(std::string_view body) {
  size_t keep = body.size();
  for (const std::string_view tag :
       {kInvoke, kInvokeEnd, kParam, kParamEnd, std::string_view("</｜DSML｜function_calls>")}) {
    keep = std::min(keep, body.size() - partial_tag_tail(body, tag));
  }
  const std::string_view stable = body.substr(0, keep);
  StableBlock out{.text = std::string(stable)};
  // The invokes and parameters as find_all reads them, to the first one still open.
  const auto cut_at = [&](size_t at, bool open_call) {
    out.text = std::string(stable.substr(0, at));
    if (open_call) out.text += kInvokeEnd;
    out.open_call = open_call;
    return out;
  };
  for (size_t at = 0;;) {
    const size_t invoke = stable.find(kInvoke, at);
    if (invoke == std::string_view::npos) return out;  // every invoke is closed
    Element e;
    const size_t header = invoke_header(stable, invoke + kInvoke.size(), e);
    const size_t end = stable.find(kInvokeEnd, header == std::string_view::npos ? invoke : header);
    if (header == std::string_view::npos) {
      if (end == std::string_view::npos) return cut_at(invoke, false);  // its name may grow
      at = invoke + 1;                                                  // no invoke starts here
      continue;
    }
    if (end != std::string_view::npos) {
      at = end + kInvokeEnd.size();
      continue;
    }
    for (size_t p_at = header;;) {  // the open invoke's parameters
      const size_t param = stable.find(kParam, p_at);
      if (param == std::string_view::npos) return cut_at(stable.size(), true);
      Element p;
      const size_t p_header = parameter_header(stable, param + kParam.size(), p);
      const size_t p_end =
          stable.find(kParamEnd, p_header == std::string_view::npos ? param : p_header);
      if (p_header == std::string_view::npos) {
        if (p_end == std::string_view::npos) return cut_at(param, true);
        p_at = param + 1;
        continue;
      }
      if (p_end != std::string_view::npos) {
        p_at = p_end + kParamEnd.size();
        continue;
      }
      if (p.string_attr != "true") return cut_at(param, true);  // typed only once whole
      out.text += kParamEnd;
      out.text += kInvokeEnd;
      out.open_call = out.open_string = true;
      out.value_at = p_header;
      out.value_end = stable.size();
      return out;
    }
  }
}

}  // namespace ctxpar::server
