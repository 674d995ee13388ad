#include "ctxpar/tokenizer/chat_template/deepseek_v32_encoder.h"

#include <fmt/format.h>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/json_io.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"
#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
constexpr std::string_view kThinkStart = "<think>";
constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kDsml = "｜DSML｜";

// The tools section of the system prompt; {0} is the DSML token, {1}/{2} the thinking
// tokens, {3} the tool schemas (one JSON object per line).
constexpr std::string_view kToolsSystemTemplate =
    R"(## Tools
You have access to a set of tools you can use to answer the user's question.
You can invoke functions by writing a "<{0}function_calls>" block like the following as part of your reply to the user:
<{0}function_calls>
<{0}invoke name="$FUNCTION_NAME">
<{0}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{0}parameter>
...
</{0}invoke>
<{0}invoke name="$FUNCTION_NAME2">
...
</{0}invoke>
</{0}function_calls>
String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects should use JSON format. The "string" attribute should be set to "true" for string type parameters and "false" for other types (numbers, booleans, arrays, objects).
If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking block. Here is an example:
<{0}function_calls>
...
</{0}function_calls>
<function_results>
...
</function_results>
{1}...thinking about results{2}
Here are the functions available in JSONSchema format:
<functions>
{3}
</functions>
)";

// msg.get(key): null when absent.
const json& get(const json& msg, const char* key) {
  static const json kNull = nullptr;
  CTXPAR_CHECK_INPUT(msg.is_object(),
                     "DeepSeek-V3.2 encoder: a message must be a JSON object, got {}", msg.dump());
  const auto it = msg.find(key);
  return it == msg.end() ? kNull : *it;
}

bool py_truthy(const json& v) {
  return truthy(value_from_json(v));
}
// str(v) as Python's str.format prints it.
std::string py_str(const json& v) {
  return to_str(value_from_json(v));
}
// `v or ""`.
std::string str_or_empty(const json& v) {
  return py_truthy(v) ? py_str(v) : "";
}

std::string role_of(const json& msg) {
  const json& role = get(msg, "role");
  return role.is_string() ? role.get<std::string>() : py_str(role);
}

// json.dumps(value, ensure_ascii=False).
std::string to_json(const json& v) {
  return python_json_dumps(value_from_json(v), {});
}

std::string render_tools(const json& tools) {
  std::string schemas;
  for (const json& tool : tools) {
    CTXPAR_CHECK_INPUT(
        tool.is_object() && tool.contains("function"),
        "DeepSeek-V3.2 encoder: a tool must be {{\"type\": \"function\", \"function\": "
        "{{...}}}}, got {}",
        tool.dump());
    if (!schemas.empty()) schemas += "\n";
    schemas += to_json(tool["function"]);
  }
  return fmt::format(kToolsSystemTemplate, kDsml, kThinkStart, kThinkEnd, schemas);
}

std::string response_format_section(const json& response_format) {
  return "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n" +
         to_json(response_format);
}

std::string encode_arguments(const json& function) {
  const json& raw = get(function, "arguments");
  json arguments = raw;
  if (raw.is_string()) {
    try {
      arguments = json::parse(raw.get<std::string>());
    } catch (const json::exception& e) {
      CTXPAR_INPUT_FAIL("DeepSeek-V3.2 encoder: tool call arguments are not valid JSON ({}): {}",
                        e.what(), raw.get<std::string>());
    }
  }
  CTXPAR_CHECK_INPUT(arguments.is_object(),
                     "DeepSeek-V3.2 encoder: tool call arguments must be a JSON object, got {}",
                     arguments.dump());
  std::string out;
  for (const auto& [key, value] : arguments.items()) {
    if (!out.empty()) out += "\n";
    const bool is_str = value.is_string();
    out +=
        fmt::format("<{0}parameter name=\"{1}\" string=\"{2}\">{3}</{0}parameter>", kDsml, key,
                    is_str ? "true" : "false", is_str ? value.get<std::string>() : to_json(value));
  }
  return out;
}

int find_last_user_index(const std::vector<json>& messages) {
  for (int i = static_cast<int>(messages.size()) - 1; i >= 0; --i) {
    const std::string role = role_of(messages[static_cast<size_t>(i)]);
    if (role == "user" || role == "developer") return i;
  }
  return -1;
}

// Assistant messages before the last user message lose their reasoning; other messages there
// that are not user, system or tool messages are dropped (as the reference does).
std::vector<json> drop_thinking_messages(const std::vector<json>& messages) {
  const int last_user = find_last_user_index(messages);
  std::vector<json> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string role = role_of(messages[i]);
    if (role == "user" || role == "system" || role == "tool" || static_cast<int>(i) >= last_user) {
      out.push_back(messages[i]);
    } else if (role == "assistant") {
      json copy = messages[i];
      copy.erase("reasoning");
      out.push_back(std::move(copy));
    }
  }
  return out;
}

std::string render_message(size_t index, const std::vector<json>& messages, bool thinking,
                           int last_user) {
  CTXPAR_CHECK_INPUT(
      index < messages.size(),
      "DeepSeek-V3.2 encoder: Index {} out of range for messages list of length {} "
      "(in thinking mode, messages other than user, system, tool and assistant before "
      "the last user message are dropped)",
      index, messages.size());
  const json& msg = messages[index];
  const std::string role = role_of(msg);
  const json& content = get(msg, "content");
  const json& tools = get(msg, "tools");
  const json& response_format = get(msg, "response_format");
  const int i = static_cast<int>(index);
  std::string prompt;

  if (role == "system") {
    prompt += str_or_empty(content);
    if (py_truthy(tools)) prompt += "\n\n" + render_tools(tools);
    if (py_truthy(response_format)) prompt += response_format_section(response_format);
  } else if (role == "developer") {
    CTXPAR_CHECK_INPUT(py_truthy(content),
                       "DeepSeek-V3.2 encoder: Invalid message for role `{}`: {}", role,
                       msg.dump());
    std::string developer;
    if (py_truthy(tools)) developer += "\n\n" + render_tools(tools);
    if (py_truthy(response_format)) developer += response_format_section(response_format);
    developer += "\n\n# The user's message is: " + py_str(content);
    prompt += fmt::format("<｜User｜>{}<｜Assistant｜>", developer);
    prompt += (i == last_user && thinking) ? kThinkStart : kThinkEnd;
  } else if (role == "user") {
    prompt += fmt::format("<｜User｜>{}<｜Assistant｜>", py_str(content));
    prompt += (i == last_user && thinking) ? kThinkStart : kThinkEnd;
  } else if (role == "tool") {
    // The assistant message whose tool calls these results answer. Python indexing: at
    // index 0 the "previous" message is messages[-1], the last one.
    const int n = static_cast<int>(messages.size());
    int prev = i - 1;
    auto at = [&](int k) -> const json& { return messages[static_cast<size_t>((k % n + n) % n)]; };
    while (prev >= 0 && role_of(at(prev)) == "tool") --prev;
    const json& assistant = at(prev);
    CTXPAR_CHECK_INPUT(
        i == 0 || (prev >= 0 && role_of(assistant) == "assistant"),
        "DeepSeek-V3.2 encoder: Invalid messages at {}: a tool result must follow an "
        "assistant message with tool calls, got {}",
        i, assistant.dump());
    const int order = i - prev;
    const json& calls = get(assistant, "tool_calls");
    CTXPAR_CHECK_INPUT(
        py_truthy(calls) && calls.is_array() && static_cast<int>(calls.size()) >= order,
        "DeepSeek-V3.2 encoder: No tool calls but found tool output (message {})", i);
    if (order == 1) prompt += "\n\n<function_results>";
    prompt += fmt::format("\n<result>{}</result>", py_str(content));
    if (order == static_cast<int>(calls.size())) {
      prompt += "\n</function_results>";
      prompt += (i >= last_user && thinking) ? fmt::format("\n\n{}", kThinkStart)
                                             : fmt::format("\n\n{}", kThinkEnd);
    }
  } else if (role == "assistant") {
    const json& calls = get(msg, "tool_calls");
    const bool has_calls = py_truthy(calls);
    std::string calls_content;
    if (has_calls) {
      std::string invokes;
      for (const json& call : calls) {
        const json& function = get(call, "function");
        if (!invokes.empty()) invokes += "\n";
        invokes += fmt::format("<{0}invoke name=\"{1}\">\n{2}\n</{0}invoke>", kDsml,
                               py_str(get(function, "name")), encode_arguments(function));
      }
      calls_content =
          fmt::format("\n\n<{0}function_calls>\n{1}\n</{0}function_calls>", kDsml, invokes);
    }
    const std::string summary = str_or_empty(content);
    std::string thinking_part;
    if (thinking && i > last_user) {
      const json& reasoning = get(msg, "reasoning");
      CTXPAR_CHECK_INPUT(py_truthy(reasoning) || has_calls,
                         "DeepSeek-V3.2 encoder: ThinkingMode: thinking, invalid message without "
                         "reasoning/tool_calls `{}` after last user message",
                         msg.dump());
      thinking_part = str_or_empty(reasoning) + std::string(kThinkEnd);
    }
    if (!has_calls && py_truthy(get(msg, "prefix"))) {
      prompt += summary;  // continue this message: no end of sentence
    } else {
      prompt += thinking_part + summary + calls_content + std::string(kEos);
    }
  } else {
    CTXPAR_INPUT_FAIL(
        "DeepSeek-V3.2 encoder: Invalid role: {} (valid: system, developer, user, "
        "assistant, tool)",
        role);
  }
  return prompt;
}

}  // namespace

std::string encode_deepseek_v32(const ChatRequest& request) {
  CTXPAR_CHECK_INPUT(request.messages.is_array() && !request.messages.empty(),
                     "DeepSeek-V3.2 encoder: messages must be a non-empty array");
  const json& kwargs = request.chat_template_kwargs;
  const auto flag = [&](const char* key) { return kwargs.contains(key) && py_truthy(kwargs[key]); };
  const bool thinking = flag("thinking") || flag("enable_thinking");

  std::vector<json> messages(request.messages.begin(), request.messages.end());
  if (request.tools.is_array() && !request.tools.empty()) {
    messages.insert(messages.begin(), json{{"role", "system"}, {"tools", request.tools}});
  }
  const bool drop_thinking = role_of(messages.back()) == "user";

  try {
    const std::vector<json> full =
        thinking && drop_thinking ? drop_thinking_messages(messages) : messages;
    const int last_user = find_last_user_index(full);
    std::string prompt(kBos);
    for (size_t i = 0; i < messages.size(); ++i) {
      prompt += render_message(i, full, thinking, last_user);
    }
    return prompt;
  } catch (const TemplateError& e) {
    // Values JSON cannot hold (json.dumps) or nest too deep.
    CTXPAR_INPUT_FAIL("DeepSeek-V3.2 encoder: {}", e.what());
  }
}

}  // namespace ctxpar::chat_template
