#include "ctxpar/server/glm_tool_calls.h"

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"
#include "ctxpar/server/python_literal.h"
#include "ctxpar/server/python_space.h"
#include "ctxpar/server/text_tags.h"
#include "ctxpar/server/tool_schema.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kKeyOpen = "<arg_key>", kKeyClose = "</arg_key>";
constexpr std::string_view kValueOpen = "<arg_value>", kValueClose = "</arg_value>";

// A call's name and the text its arguments are read from.
struct Cut {
  std::string_view name;
  std::string_view args;
};

// glm45: `([^\n]*)\n(.*)` -- the first line is the name, the rest the arguments.
std::optional<Cut> cut_glm45(std::string_view body) {
  const size_t newline = body.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  return Cut{python_strip_space(body.substr(0, newline)), body.substr(newline + 1)};
}

// glm47: `<tool_call>\s*(\S+?)\s*(<arg_key>.*)?</tool_call>` after one <tool_call> -- the
// shortest run of non-whitespace after which only whitespace, or whitespace and <arg_key>,
// follows to the end of the body.
std::optional<Cut> cut_glm47_at(std::string_view body) {
  const size_t start = skip_python_space(body, 0, PySpace::kRegex);
  for (size_t end = start; end < body.size() && python_space_at(body, end, PySpace::kRegex) == 0;) {
    end += std::min(body.size() - end,
                    tokenizer::utf8::char_length(static_cast<unsigned char>(body[end])));
    const size_t next = skip_python_space(body, end, PySpace::kRegex);
    // The name is stripped as a str: \x1c-\x1f are whitespace there, not to \s.
    const std::string_view name = python_strip_space(body.substr(start, end - start));
    if (next == body.size()) return Cut{name, {}};
    if (body.substr(next).starts_with(kKeyOpen)) return Cut{name, body.substr(next)};
  }
  return std::nullopt;
}

// vLLM searches the block for the pattern: a <tool_call> inside the body (the block runs from
// the first <tool_call> to the first </tool_call>) is another place it may start.
std::optional<Cut> cut_glm47(std::string_view body) {
  for (size_t at = 0;;) {
    if (std::optional<Cut> cut = cut_glm47_at(body.substr(at))) return cut;
    const size_t inner = body.find(kCallOpen, at);
    if (inner == std::string_view::npos) return std::nullopt;
    at = inner + kCallOpen.size();
  }
}

struct Pair {
  std::string_view key, value;
};

// findall of `<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>`: the key runs to the
// first </arg_key> that whitespace and <arg_value> follow.
std::vector<Pair> arg_pairs(std::string_view args) {
  std::vector<Pair> pairs;
  size_t pos = 0;
  for (;;) {
    const size_t open = args.find(kKeyOpen, pos);
    if (open == std::string_view::npos) return pairs;
    const size_t key = open + kKeyOpen.size();
    bool matched = false;
    for (size_t close = args.find(kKeyClose, key); close != std::string_view::npos;
         close = args.find(kKeyClose, close + 1)) {
      const size_t value_tag = skip_python_space(args, close + kKeyClose.size(), PySpace::kRegex);
      if (!args.substr(value_tag).starts_with(kValueOpen)) continue;
      const size_t value = value_tag + kValueOpen.size();
      const size_t value_end = args.find(kValueClose, value);
      if (value_end == std::string_view::npos) break;  // no later </arg_key> can do better
      pairs.push_back({args.substr(key, close - key), args.substr(value, value_end - value)});
      pos = value_end + kValueClose.size();
      matched = true;
      break;
    }
    if (!matched) pos = open + 1;
  }
}

// vLLM's _deserialize: json.loads, else ast.literal_eval, else the text. nullopt: a literal
// json.dumps cannot write.
std::optional<ordered_json> deserialize(std::string_view text) {
  // json.loads takes these three, which nlohmann does not.
  if (text == "NaN") return ordered_json(std::numeric_limits<double>::quiet_NaN());
  if (text == "Infinity") return ordered_json(std::numeric_limits<double>::infinity());
  if (text == "-Infinity") return ordered_json(-std::numeric_limits<double>::infinity());
  ordered_json json = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_discarded()) return json;
  PythonLiteral literal = eval_python_literal(text);
  switch (literal.kind) {
    case PythonLiteral::Kind::kJson:
      return std::move(literal.value);
    case PythonLiteral::Kind::kNotJson:
      return std::nullopt;
    case PythonLiteral::Kind::kNotLiteral:
      break;
  }
  return ordered_json(std::string(text));
}

}  // namespace

std::optional<std::vector<ToolCall>> glm_tool_call(std::string_view body, bool glm47,
                                                   const nlohmann::json& tools) {
  const std::optional<Cut> cut = glm47 ? cut_glm47(body) : cut_glm45(body);
  if (!cut) return std::vector<ToolCall>{};
  const std::string name(cut->name);
  ordered_json args = ordered_json::object();
  for (const Pair& pair : arg_pairs(cut->args)) {
    const std::string key(python_strip_space(pair.key));
    if (is_string_parameter(tools, name, key)) {
      args[key] = std::string(pair.value);  // whitespace in a string value is the model's
      continue;
    }
    std::optional<ordered_json> value = deserialize(python_strip_space(pair.value));
    if (!value) return std::nullopt;
    args[key] = std::move(*value);
  }
  return std::vector<ToolCall>{
      ToolCall{"chatcmpl-tool-" + random_hex(32), name, python_json_text(args)}};
}

std::optional<StableBlock> glm_stable_block(std::string_view body, bool glm47,
                                            const nlohmann::json& tools) {
  size_t keep = body.size();
  for (const std::string_view tag :
       {kKeyOpen, kKeyClose, kValueOpen, kValueClose, std::string_view("</tool_call>")}) {
    keep = std::min(keep, body.size() - partial_tag_tail(body, tag));
  }
  const std::string_view stable = body.substr(0, keep);
  if (glm47 ? stable.find(kKeyOpen) == std::string_view::npos
            : stable.find('\n') == std::string_view::npos) {
    return std::nullopt;
  }
  StableBlock out{.text = std::string(stable), .open_call = true};
  // The pairs as arg_pairs reads them, to the first one still open.
  for (size_t pos = 0;;) {
    const size_t open = stable.find(kKeyOpen, pos);
    if (open == std::string_view::npos) return out;
    const size_t key = open + kKeyOpen.size();
    const size_t key_close = stable.find(kKeyClose, key);
    const size_t value_tag =
        key_close == std::string_view::npos
            ? key_close
            : skip_python_space(stable, key_close + kKeyClose.size(), PySpace::kRegex);
    if (value_tag != std::string_view::npos && value_tag < stable.size() &&
        !stable.substr(value_tag).starts_with(kValueOpen)) {
      pos = open + 1;  // no pair starts here
      continue;
    }
    const size_t value = value_tag == std::string_view::npos || value_tag == stable.size()
                             ? std::string_view::npos
                             : value_tag + kValueOpen.size();
    const size_t value_end =
        value == std::string_view::npos ? value : stable.find(kValueClose, value);
    if (value_end != std::string_view::npos) {
      pos = value_end + kValueClose.size();
      continue;
    }
    // This pair is open: a string value streams as written, any other waits for its close.
    if (value != std::string_view::npos) {
      const std::optional<std::vector<ToolCall>> head =
          glm_tool_call(stable.substr(0, open), glm47, tools);
      if (head && head->size() == 1 &&
          is_string_parameter(tools, (*head)[0].name,
                              python_strip_space(stable.substr(key, key_close - key)))) {
        out.text += kValueClose;
        out.open_string = true;
        out.value_at = value;
        out.value_end = stable.size();
        return out;
      }
    }
    out.text = std::string(stable.substr(0, open));
    return out;
  }
}

}  // namespace ctxpar::server
