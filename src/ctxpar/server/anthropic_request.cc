#include "ctxpar/server/anthropic_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <string_view>
#include <vector>

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/chat_template_inputs.h"
#include "ctxpar/server/json_fields.h"
#include "ctxpar/server/python_json.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 9> kBlockTypes = {
    "text",           "image",    "tool_use",          "tool_result",
    "tool_reference", "thinking", "redacted_thinking", "tool_addition",
    "tool_removal"};
constexpr std::array<std::string_view, 5> kEfforts = {"low", "medium", "high", "xhigh", "max"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// A message's (or the system field's) content: a string, or a list of typed blocks.
void check_content(const ordered_json& content, const std::string& where, bool system) {
  if (content.is_string()) return;
  if (!content.is_array()) wrong_type(where, "a valid string or a list of content blocks");
  for (size_t k = 0; k < content.size(); ++k) {
    const std::string at = fmt::format("{}[{}]", where, k);
    const ordered_json& block = content[k];
    if (!block.is_object()) wrong_type(at, "a content block object");
    const std::string type = string_field(block, "type", at);
    if (!one_of(kBlockTypes, type)) {
      throw bad_request(
          fmt::format("{}.type: '{}' is not one of {}", at, type, fmt::join(kBlockTypes, ", ")),
          at + ".type");
    }
    if ((type == "tool_addition" || type == "tool_removal") && !system) {
      throw bad_request(
          fmt::format("{}: {} blocks are only allowed in messages with role \"system\"", at, type),
          at);
    }
    if (type == "image") {
      throw bad_request(fmt::format("{}: image blocks are not supported: ctxpar serves text-only "
                                    "models",
                                    at),
                        at);
    }
  }
}

// One content block's "text" when it is a non-empty string (vLLM's `block.text` truthiness).
std::string block_text(const ordered_json& block) {
  const ordered_json& text = field(block, "text");
  return text.is_string() ? text.get<std::string>() : std::string();
}

// /v1/messages drops a whole system block that starts with Claude Code's header (chat
// messages lose only its line, chat_template_inputs.cc).
bool is_billing_header(const std::string& text) {
  return text.starts_with(kClaudeCodeBillingHeader);
}

// A system message's text: its string, or its text blocks joined; billing headers dropped.
std::string system_text(const ordered_json& content) {
  if (content.is_string()) {
    const std::string text = content.get<std::string>();
    return is_billing_header(text) ? std::string() : text;
  }
  std::string out;
  for (const ordered_json& block : content) {
    const std::string text = block_text(block);
    if (string_or(block, "type", "") == "text" && !text.empty() && !is_billing_header(text))
      out += text;
  }
  return out;
}

// A tool_use block as a chat tool call.
ordered_json tool_call(const ordered_json& block, const std::string& where) {
  const ordered_json& input = field(block, "input");
  if (!input.is_null() && !input.is_object()) wrong_type(where + ".input", "a valid dictionary");
  const ordered_json& id = field(block, "id");
  const ordered_json& name = field(block, "name");
  if (!id.is_null() && !id.is_string()) wrong_type(where + ".id", "a valid string");
  if (!name.is_null() && !name.is_string()) wrong_type(where + ".name", "a valid string");
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string call_id = id.is_string() && !id.get<std::string>().empty()
                                  ? id.get<std::string>()
                                  : fmt::format("call_{}", now);
  return {{"id", call_id},
          {"type", "function"},
          {"function",
           {{"name", name.is_string() ? name.get<std::string>() : ""},
            // json.dumps(block.input or {}): ASCII-escaped, ", " and ": " separators.
            {"arguments",
             python_json_text(input.is_null() || input.empty() ? ordered_json::object() : input,
                              /*ensure_ascii=*/true)}}}};
}

// A user turn's tool_result block as the tool message vLLM makes of it.
ordered_json tool_message(const ordered_json& block, const std::string& where) {
  const ordered_json& content = field(block, "content");
  std::string text;
  if (content.is_string()) {
    text = content.get<std::string>();
  } else if (content.is_array()) {
    std::vector<std::string> parts;
    for (size_t k = 0; k < content.size(); ++k) {
      const ordered_json& item = content[k];
      if (!item.is_object()) continue;  // vLLM skips what is not a dict
      const std::string type = string_or(item, "type", "");
      if (type == "text") {
        parts.push_back(string_or(item, "text", ""));
      } else if (type == "image" || type == "tool_reference") {
        throw bad_request(fmt::format("{}.content[{}]: {} items in a tool_result are not "
                                      "supported: ctxpar's chat messages hold text only",
                                      where, k, type),
                          where + ".content");
      }
    }
    for (size_t k = 0; k < parts.size(); ++k) text += (k > 0 ? "\n" : "") + parts[k];
  } else if (!content.is_null()) {
    wrong_type(where + ".content", "a valid string or a list of content items");
  }
  const ordered_json& id = field(block, "tool_use_id");
  if (!id.is_null() && !id.is_string()) wrong_type(where + ".tool_use_id", "a valid string");
  return {{"role", "tool"},
          {"tool_call_id", id.is_string() ? id.get<std::string>() : ""},
          {"content", text}};
}

// Appends message `i` (checked) as vLLM's _convert_messages does.
void add_message(const ordered_json& msg, size_t i, bool merge_inline_system,
                 ordered_json& messages) {
  const std::string where = fmt::format("messages[{}]", i);
  const std::string role = string_or(msg, "role", "");
  const ordered_json& content = field(msg, "content");
  if (role == "system") {
    if (merge_inline_system) return;  // joined the leading system message
    const std::string text = system_text(content);
    if (!text.empty()) messages.push_back({{"role", "system"}, {"content", text}});
    return;
  }
  ordered_json out = {{"role", role}};
  if (content.is_string()) {
    out["content"] = content;
    messages.push_back(std::move(out));
    return;
  }
  ordered_json parts = ordered_json::array(), calls = ordered_json::array();
  std::string reasoning;
  bool has_reasoning = false;
  for (size_t k = 0; k < content.size(); ++k) {
    const ordered_json& block = content[k];
    const std::string at = fmt::format("{}.content[{}]", where, k);
    const std::string type = block["type"].get<std::string>();
    if (type == "text") {
      if (const std::string text = block_text(block); !text.empty())
        parts.push_back({{"type", "text"}, {"text", text}});
    } else if (type == "thinking") {
      const ordered_json& thinking = field(block, "thinking");
      if (!thinking.is_null() && !thinking.is_string()) wrong_type(at + ".thinking", "a string");
      if (thinking.is_string()) {
        reasoning += thinking.get<std::string>();
        has_reasoning = true;
      }
    } else if (type == "tool_use") {
      calls.push_back(tool_call(block, at));
    } else if (type == "tool_result") {
      if (role != "user") {
        // vLLM writes str(content) here, a Python repr for lists; Anthropic's API takes
        // tool results only in user turns.
        throw bad_request(fmt::format("{}: tool_result blocks belong in user messages", at), at);
      }
      messages.push_back(tool_message(block, at));
    }
    // redacted_thinking and tool_reference blocks are accepted and dropped, as vLLM does.
  }
  if (has_reasoning) out["reasoning"] = reasoning;
  if (!calls.empty()) out["tool_calls"] = std::move(calls);
  if (parts.size() == 1) {
    out["content"] = parts[0]["text"];
  } else if (!parts.empty()) {
    out["content"] = std::move(parts);
  }
  // A user turn of tool results only leaves no user message.
  if (!(role == "user" && !out.contains("content"))) messages.push_back(std::move(out));
}

// A tool definition (`tools[i]` or a tool_addition's) as vLLM's AnthropicTool reads it.
void check_tool(const ordered_json& tool, const std::string& where) {
  if (!tool.is_object()) wrong_type(where, "a valid dictionary");
  const std::string type = string_or(tool, "type", "custom");
  if (type != "custom") {
    throw bad_request(fmt::format("{}: tool type '{}' is not supported; only custom tools with an "
                                  "input_schema are supported",
                                  where, type),
                      where + ".type");
  }
  string_field(tool, "name", where);
  const ordered_json& schema = field(tool, "input_schema");
  if (!schema.is_object()) {
    throw bad_request(fmt::format("{}.input_schema: input_schema must be a dictionary", where),
                      where + ".input_schema");
  }
  const ordered_json& description = field(tool, "description");
  if (!description.is_null() && !description.is_string())
    wrong_type(where + ".description", "a valid string");
}

ordered_json function_tool(const ordered_json& tool) {
  ordered_json schema = tool["input_schema"];
  if (!schema.contains("type")) schema["type"] = "object";
  ordered_json function = {{"name", tool["name"]}};
  if (const ordered_json& d = field(tool, "description"); d.is_string())
    function["description"] = d;
  function["parameters"] = std::move(schema);
  if (const ordered_json& s = field(tool, "strict"); s.is_boolean()) function["strict"] = s;
  return {{"type", "function"}, {"function", std::move(function)}};
}

// The tools in effect at the end of the conversation (vLLM's _resolve_tools): tool_addition /
// tool_removal blocks of system messages add a tool by value, or name a declared one to bring
// back or drop.
std::vector<ordered_json> resolve_tools(const ordered_json& tools, const ordered_json& messages) {
  std::vector<std::pair<std::string, ordered_json>> by_name;  // in declaration order
  const auto find = [&](const std::string& name) {
    return std::find_if(by_name.begin(), by_name.end(),
                        [&](const auto& entry) { return entry.first == name; });
  };
  for (const ordered_json& tool : tools) {
    const std::string name = tool["name"].get<std::string>();
    if (auto it = find(name); it != by_name.end()) {
      it->second = tool;  // a dict keyed by name: the last one wins, in the first one's place
    } else {
      by_name.emplace_back(name, tool);
    }
  }
  std::vector<std::string> removed;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ordered_json& content = field(messages[i], "content");
    if (!content.is_array()) continue;
    for (size_t k = 0; k < content.size(); ++k) {
      const ordered_json& block = content[k];
      const std::string type = string_or(block, "type", "");
      if (type != "tool_addition" && type != "tool_removal") continue;
      const std::string at = fmt::format("messages[{}].content[{}].tool", i, k);
      const ordered_json& change = field(block, "tool");
      if (!change.is_object()) {
        throw bad_request(fmt::format("{}: tool is required for {} blocks", at, type), at);
      }
      const std::string change_type = string_or(change, "type", "");
      std::string name;
      if (change_type == "tool_definition" && type == "tool_addition") {
        const ordered_json& definition = field(change, "definition");
        check_tool(definition, at + ".definition");
        name = definition["name"].get<std::string>();
        if (auto it = find(name); it != by_name.end()) {
          it->second = definition;
        } else {
          by_name.emplace_back(name, definition);
        }
      } else if (change_type == "tool_reference") {
        name = string_field(change, "name", at);
        if (find(name) == by_name.end()) {
          throw bad_request(
              fmt::format("{}: {} references tool '{}', which is not declared in tools", at, type,
                          name),
              at);
        }
      } else {
        throw bad_request(
            fmt::format("{}: a {} takes {}", at, type,
                        type == "tool_removal" ? "only a tool_reference"
                                               : "a tool_reference or a tool_definition"),
            at);
      }
      std::erase(removed, name);
      if (type == "tool_removal") removed.push_back(name);
    }
  }
  std::vector<ordered_json> out;
  for (const auto& [name, tool] : by_name) {
    if (std::find(removed.begin(), removed.end(), name) == removed.end()) out.push_back(tool);
  }
  return out;
}

// thinking: checked; returns its type ("" when absent).
std::string thinking_type(const ordered_json& thinking, const ordered_json& max_tokens,
                          bool count_tokens) {
  if (thinking.is_null()) return "";
  if (!thinking.is_object()) wrong_type("thinking", "a valid dictionary");
  const std::string type = string_or(thinking, "type", "");
  if (type == "enabled") {
    const ordered_json& budget = field(thinking, "budget_tokens");
    if (!budget.is_number_integer()) wrong_type("thinking.budget_tokens", "a valid integer");
    if (budget.get<int64_t>() < 1024) {
      throw bad_request("thinking.budget_tokens: Input should be greater than or equal to 1024",
                        "thinking.budget_tokens");
    }
    if (!count_tokens && budget.get<int64_t>() >= max_tokens.get<int64_t>()) {
      throw bad_request("thinking.budget_tokens must be less than max_tokens",
                        "thinking.budget_tokens");
    }
  } else if (type != "disabled" && type != "adaptive" && type != "between_tools") {
    throw bad_request(fmt::format("thinking.type: '{}' is not one of enabled, disabled, adaptive, "
                                  "between_tools",
                                  type),
                      "thinking.type");
  }
  return type;
}

}  // namespace

const std::vector<std::string>& anthropic_disabled_thinking_efforts() {
  static const std::vector<std::string> efforts = {"auto", "none",  "low", "medium",
                                                   "high", "xhigh", "max"};
  return efforts;
}

AnthropicRendering probe_anthropic_rendering(const engine::ChatPrompt& chat,
                                             const std::string& effort_option,
                                             const nlohmann::json& default_kwargs) {
  AnthropicRendering out;
  out.merge_inline_system = !chat.keeps_inline_system();
  if (effort_option != "auto") {
    out.disabled_thinking_effort = effort_option;
    return out;
  }
  // The prompt of one "Hi" at an effort, as a chat request with reasoning_effort renders it;
  // empty when the template refuses it.
  const auto render = [&](const std::string& effort) {
    chat_template::ChatRequest request;
    request.messages = ordered_json::array({{{"role", "user"}, {"content", "Hi"}}});
    request.add_generation_prompt = true;
    request.chat_template_kwargs = ordered_json::parse(default_kwargs.dump());
    request.chat_template_kwargs["reasoning_effort"] = effort;
    request.chat_template_kwargs["enable_thinking"] = effort != "none";
    try {
      return chat.render(std::move(request));
    } catch (const std::exception&) {
      return std::string();
    }
  };
  const std::string none = render("none");
  bool same = none.empty();
  for (const std::string_view effort : kEfforts) same = same || render(std::string(effort)) == none;
  out.disabled_thinking_effort = same ? "low" : "none";
  return out;
}

ordered_json anthropic_chat_request(const ordered_json& body, bool count_tokens,
                                    const AnthropicRendering& rendering) {
  if (!body.is_object()) throw bad_request("The request body must be a JSON object");
  const ordered_json& model = field(body, "model");
  if (model.is_null()) throw bad_request("model: Field required", "model");
  if (!model.is_string()) wrong_type("model", "a valid string");
  if (model.get<std::string>().empty()) throw bad_request("model: Model is required", "model");

  const ordered_json& messages = field(body, "messages");
  if (messages.is_null()) throw bad_request("messages: Field required", "messages");
  if (!messages.is_array()) wrong_type("messages", "a valid list");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = fmt::format("messages[{}]", i);
    if (!messages[i].is_object()) wrong_type(where, "a valid dictionary");
    const std::string role = string_field(messages[i], "role", where);
    if (role != "user" && role != "assistant" && role != "system") {
      throw bad_request(
          fmt::format("{}.role: '{}' is not one of user, assistant, system", where, role),
          where + ".role");
    }
    const ordered_json& content = field(messages[i], "content");
    if (content.is_null()) throw bad_request(where + ".content: Field required", where);
    check_content(content, where + ".content", role == "system");
  }
  const ordered_json& system = field(body, "system");
  if (!system.is_null()) check_content(system, "system", true);

  const ordered_json& max_tokens = field(body, "max_tokens");
  if (!count_tokens) {
    if (max_tokens.is_null()) throw bad_request("max_tokens: Field required", "max_tokens");
    if (!max_tokens.is_number_integer()) wrong_type("max_tokens", "a valid integer");
    if (max_tokens.get<int64_t>() <= 0)
      throw bad_request("max_tokens: max_tokens must be positive", "max_tokens");
  }

  // The system message: the system field's text, then (merging) every inline one's.
  ordered_json chat_messages = ordered_json::array();
  std::string leading = system.is_null() ? std::string() : system_text(system);
  if (rendering.merge_inline_system) {
    for (const ordered_json& m : messages) {
      if (m["role"] == "system") leading += system_text(m["content"]);
    }
  }
  if (!leading.empty()) chat_messages.push_back({{"role", "system"}, {"content", leading}});
  for (size_t i = 0; i < messages.size(); ++i)
    add_message(messages[i], i, rendering.merge_inline_system, chat_messages);

  ordered_json chat = {{"model", model}, {"messages", std::move(chat_messages)}};
  if (!count_tokens) {
    chat["max_tokens"] = max_tokens;
    chat["max_completion_tokens"] = max_tokens;
    if (const ordered_json& stop = field(body, "stop_sequences"); !stop.is_null()) {
      if (!stop.is_array()) wrong_type("stop_sequences", "a valid list");
      for (const ordered_json& s : stop) {
        if (!s.is_string()) wrong_type("stop_sequences", "a list of strings");
      }
      chat["stop"] = stop;
    }
    // The chat parser checks these and names them alike.
    for (const char* key : {"temperature", "top_p", "top_k", "min_tokens"}) {
      if (const ordered_json& v = field(body, key); !v.is_null()) chat[key] = v;
    }
    const ordered_json& stream = field(body, "stream");
    if (!stream.is_null() && !stream.is_boolean()) wrong_type("stream", "a valid boolean");
    if (stream == true) {
      chat["stream"] = true;
      chat["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", true}};
    }
  }
  if (const ordered_json& kwargs = field(body, "chat_template_kwargs"); !kwargs.is_null())
    chat["chat_template_kwargs"] = kwargs;

  // output_config, then thinking (which may override its effort), as vLLM applies them.
  if (const ordered_json& config = field(body, "output_config"); !config.is_null()) {
    if (!config.is_object()) wrong_type("output_config", "a valid dictionary");
    const ordered_json& format = field(config, "format");
    if (!format.is_null()) {
      if (!format.is_object()) wrong_type("output_config.format", "a valid dictionary");
      if (string_or(format, "type", "json_schema") != "json_schema") {
        throw bad_request("output_config.format.type: Input should be 'json_schema'",
                          "output_config.format.type");
      }
      const ordered_json& schema = field(format, "schema");
      if (!schema.is_null() && !schema.is_object())
        wrong_type("output_config.format.schema", "a valid dictionary");
      if (schema.is_object() && !schema.empty()) {
        chat["response_format"] = {{"type", "json_schema"},
                                   {"json_schema", {{"name", "json_schema"}, {"schema", schema}}}};
      }
    }
    const ordered_json& effort = field(config, "effort");
    if (!effort.is_null()) {
      if (!effort.is_string() || !one_of(kEfforts, effort.get<std::string>())) {
        throw bad_request(fmt::format("output_config.effort: Input should be one of {}, got {}",
                                      fmt::join(kEfforts, ", "), effort.dump()),
                          "output_config.effort");
      }
      chat["reasoning_effort"] = effort;
    }
  }
  const std::string thinking = thinking_type(field(body, "thinking"), max_tokens, count_tokens);
  if (thinking == "disabled" || thinking == "between_tools")
    chat["reasoning_effort"] = rendering.disabled_thinking_effort;
  if (thinking == "enabled")
    chat["thinking_token_budget"] = field(body, "thinking")["budget_tokens"];

  const ordered_json& choice = field(body, "tool_choice");
  if (!choice.is_null()) {
    if (!choice.is_object()) wrong_type("tool_choice", "a valid dictionary");
    const std::string type = string_or(choice, "type", "");
    const ordered_json& disable = field(choice, "disable_parallel_tool_use");
    if (!disable.is_null() && !disable.is_boolean())
      wrong_type("tool_choice.disable_parallel_tool_use", "a valid boolean");
    chat["parallel_tool_calls"] = disable != true;
    if (type == "auto" || type == "none") {
      chat["tool_choice"] = type;
    } else if (type == "any") {
      chat["tool_choice"] = "required";
    } else if (type == "tool") {
      const ordered_json& name = field(choice, "name");
      if (!name.is_string() || name.get<std::string>().empty()) {
        throw bad_request("tool_choice.name is required when type is 'tool'", "tool_choice.name");
      }
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
    } else {
      throw bad_request(
          fmt::format("tool_choice.type: '{}' is not one of auto, any, tool, none", type),
          "tool_choice.type");
    }
  }
  const ordered_json& tools = field(body, "tools");
  if (!tools.is_null()) {
    if (!tools.is_array()) wrong_type("tools", "a valid list");
    for (size_t i = 0; i < tools.size(); ++i) check_tool(tools[i], fmt::format("tools[{}]", i));
  }
  bool changes = false;
  for (const ordered_json& m : messages) {
    if (!m["content"].is_array()) continue;
    for (const ordered_json& block : m["content"]) {
      const std::string type = block["type"].get<std::string>();
      changes = changes || type == "tool_addition" || type == "tool_removal";
    }
  }
  if (!tools.is_null() || changes) {
    ordered_json list = ordered_json::array();
    for (const ordered_json& tool :
         resolve_tools(tools.is_null() ? ordered_json::array() : tools, messages)) {
      list.push_back(function_tool(tool));
    }
    chat["tools"] = std::move(list);
    if (!chat.contains("tool_choice")) chat["tool_choice"] = "auto";
  }
  return chat;
}

}  // namespace ctxpar::server
