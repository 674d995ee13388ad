#include "ctxpar/server/responses_request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/json_fields.h"
#include "ctxpar/server/python_json.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Fields that mean the same on both routes and go to the chat body as given (the chat parser
// checks them and names them in its errors).
constexpr std::array<const char*, 18> kSamplingFields = {"model",
                                                         "temperature",
                                                         "top_p",
                                                         "top_k",
                                                         "min_p",
                                                         "seed",
                                                         "stop",
                                                         "stop_token_ids",
                                                         "ignore_eos",
                                                         "repetition_penalty",
                                                         "presence_penalty",
                                                         "frequency_penalty",
                                                         "logit_bias",
                                                         "skip_special_tokens",
                                                         "include_stop_str_in_output",
                                                         "chat_template_kwargs",
                                                         "structured_outputs",
                                                         "user"};

// vLLM's ResponsesRequest.include values.
constexpr std::array<std::string_view, 6> kIncludeValues = {
    "code_interpreter_call.outputs", "computer_call_output.output.image_url",
    "file_search_call.results",      "message.input_image.image_url",
    "message.output_text.logprobs",  "reasoning.encrypted_content"};

constexpr const char* kNamespaceSeparator = "__";

// The schema of the one-string function a custom tool is shown as (vLLM's shim).
ordered_json custom_tool_parameters() {
  return {{"type", "object"},
          {"properties",
           {{"input",
             {{"type", "string"}, {"description", "The freeform text payload for this tool."}}}}},
          {"required", {"input"}},
          {"additionalProperties", false}};
}

// A custom tool call's input as the shim's arguments: json.dumps({"input": input}).
std::string custom_tool_arguments(const std::string& input) {
  return python_json_text(ordered_json{{"input", input}});
}

// The text of one content part of an input item: input_text / output_text (and chat's "text").
std::string part_text(const ordered_json& part, const std::string& where) {
  if (!part.is_object()) wrong_type(where, "a content part object");
  const std::string type = string_or(part, "type", "");
  if (type != "input_text" && type != "output_text" && type != "text") {
    throw bad_request(fmt::format("{}: content part type '{}' is not supported; use input_text "
                                  "or output_text",
                                  where, type),
                      "input");
  }
  return string_field(part, "text", where);
}

// Content as chat messages take it: a string, or {"type": "text"} parts.
ordered_json chat_content(const ordered_json& content, const std::string& where) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) wrong_type(where, "a string or a list of content parts");
  ordered_json parts = ordered_json::array();
  for (size_t k = 0; k < content.size(); ++k) {
    parts.push_back(
        {{"type", "text"}, {"text", part_text(content[k], fmt::format("{}[{}]", where, k))}});
  }
  return parts;
}

// vLLM's assistant text of an input message: the string, or its first part's text.
std::string assistant_text(const ordered_json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array() && !content.empty()) return part_text(content[0], where + "[0]");
  return "";
}

ordered_json* previous_assistant(ordered_json& messages) {
  if (messages.empty() || string_or(messages.back(), "role", "") != "assistant") return nullptr;
  return &messages.back();
}

// Appends input item `i` to `messages` as vLLM's construct_chat_messages_with_tool_call does:
// function calls, reasoning and assistant text that follow an assistant message join it.
void add_input_item(const ordered_json& item, size_t i, ordered_json& messages) {
  const std::string where = fmt::format("input[{}]", i);
  if (!item.is_object()) wrong_type(where, "a valid dictionary");
  const std::string type = item.contains("type") && item["type"].is_string()
                               ? item["type"].get<std::string>()
                               : std::string(item.contains("role") ? "message" : "");
  ordered_json* prev = previous_assistant(messages);
  if (type == "function_call" || type == "custom_tool_call") {
    std::string name = string_field(item, "name", where);
    std::string arguments;
    if (type == "custom_tool_call") {
      arguments = custom_tool_arguments(string_field(item, "input", where));
    } else {
      arguments = string_field(item, "arguments", where);
      if (const ordered_json& ns = field(item, "namespace"); ns.is_string())
        name = ns.get<std::string>() + kNamespaceSeparator + name;
    }
    ordered_json call = {{"id", string_field(item, "call_id", where)},
                         {"type", "function"},
                         {"function", {{"name", name}, {"arguments", arguments}}}};
    if (prev) {
      ordered_json& calls = (*prev)["tool_calls"];
      if (calls.is_null()) calls = ordered_json::array();
      calls.push_back(std::move(call));
      return;
    }
    messages.push_back({{"role", "assistant"}, {"tool_calls", ordered_json::array({call})}});
    return;
  }
  if (type == "function_call_output" || type == "custom_tool_call_output") {
    const ordered_json& output = field(item, "output");
    messages.push_back({{"role", "tool"},
                        {"content", chat_content(output, where + ".output")},
                        {"tool_call_id", string_field(item, "call_id", where)}});
    return;
  }
  if (type == "reasoning") {
    if (!field(item, "encrypted_content").is_null())
      throw bad_request("Encrypted content is not supported.", "input");
    std::string reasoning;
    for (const char* key : {"content", "summary"}) {
      const ordered_json& list = field(item, key);
      if (list.is_array() && !list.empty()) {
        reasoning = string_field(list[0], "text", fmt::format("{}.{}[0]", where, key));
        break;
      }
    }
    if (prev && !prev->contains("reasoning")) {
      (*prev)["reasoning"] = reasoning;
      return;
    }
    messages.push_back({{"role", "assistant"}, {"reasoning", reasoning}});
    return;
  }
  if (type == "message") {
    const std::string role = string_field(item, "role", where);
    const ordered_json& content = field(item, "content");
    if (role == "assistant") {
      const std::string text = assistant_text(content, where + ".content");
      if (prev && (!prev->contains("content") || (*prev)["content"].is_null())) {
        (*prev)["content"] = text;
        return;
      }
      messages.push_back({{"role", "assistant"}, {"content", text}});
      return;
    }
    if (role != "user" && role != "system" && role != "developer") {
      throw bad_request(fmt::format("{}.role: '{}' is not one of user, system, developer, "
                                    "assistant",
                                    where, role),
                        "input");
    }
    messages.push_back({{"role", role}, {"content", chat_content(content, where + ".content")}});
    return;
  }
  throw bad_request(
      fmt::format("Unsupported input item type: {}",
                  type.empty() ? std::string("(none: an item needs a type or a role)") : type),
      "input");
}

// A partial assistant message or reasoning last (status in_progress / incomplete) is continued
// rather than answered (vLLM's should_continue_final_message).
bool continues_final_message(const ordered_json& input) {
  if (!input.is_array() || input.empty() || !input.back().is_object()) return false;
  const ordered_json& last = input.back();
  const std::string type = string_or(last, "type", "message");
  if (type != "message" && type != "reasoning") return false;
  const std::string status = string_or(last, "status", "");
  return status == "in_progress" || status == "incomplete";
}

// A flat Responses function tool as a chat tool: {"type": "function", "function": {name, ...}},
// named `name`.
ordered_json chat_function(const ordered_json& tool, const std::string& name) {
  ordered_json function = ordered_json::object();
  function["name"] = name;
  for (const char* key : {"description", "parameters", "strict"}) {
    if (tool.contains(key) && !tool[key].is_null()) function[key] = tool[key];
  }
  return {{"type", "function"}, {"function", function}};
}

// The chat tools the model is shown for the request's tools (vLLM's get_function_tools).
void add_chat_tools(const ordered_json& tool, size_t i, ordered_json& out,
                    ResponsesToolNames& names) {
  const std::string where = fmt::format("tools[{}]", i);
  if (!tool.is_object()) wrong_type(where, "a valid dictionary");
  const std::string type = string_field(tool, "type", where);
  if (type == "function") {
    out.push_back(chat_function(tool, string_field(tool, "name", where)));
  } else if (type == "custom") {
    const std::string name = string_field(tool, "name", where);
    ordered_json shim = {{"description", field(tool, "description")},
                         {"parameters", custom_tool_parameters()}};
    out.push_back(chat_function(shim, name));
    names.custom.insert(name);
  } else if (type == "namespace") {
    const std::string ns = string_field(tool, "name", where);
    const ordered_json& inner = field(tool, "tools");
    if (!inner.is_array()) wrong_type(where + ".tools", "a valid list");
    for (size_t k = 0; k < inner.size(); ++k) {
      if (!inner[k].is_object() || string_or(inner[k], "type", "") != "function") continue;
      const std::string name =
          string_field(inner[k], "name", fmt::format("{}.tools[{}]", where, k));
      const std::string flat = ns + kNamespaceSeparator + name;
      out.push_back(chat_function(inner[k], flat));
      names.namespaced[flat] = {ns, name};
    }
  }
  // Built-in tools (web_search, file_search, code_interpreter, mcp, ...) need a tool server,
  // which ctxpar has not: vLLM never shows them to the model either.
}

ordered_json chat_tool_choice(const ordered_json& choice) {
  if (choice.is_string()) {
    const std::string s = choice.get<std::string>();
    if (s == "auto" || s == "none" || s == "required") return choice;
    throw bad_request(fmt::format("tool_choice: '{}' is not one of auto, none, required", s),
                      "tool_choice");
  }
  if (choice.is_object() && string_or(choice, "type", "") == "function") {
    return {{"type", "function"},
            {"function", {{"name", string_field(choice, "name", "tool_choice")}}}};
  }
  throw bad_request(fmt::format("tool_choice: {} is not supported; use auto, none, required or "
                                "{{\"type\": \"function\", \"name\": ...}}",
                                choice.dump()),
                    "tool_choice");
}

// text.format as a chat response_format (null: plain text).
ordered_json chat_response_format(const ordered_json& text) {
  if (text.is_null()) return nullptr;
  if (!text.is_object()) wrong_type("text", "a valid dictionary");
  const ordered_json& format = field(text, "format");
  if (format.is_null()) return nullptr;
  if (!format.is_object()) wrong_type("text.format", "a valid dictionary");
  const std::string type = string_or(format, "type", "");
  if (type == "text") return nullptr;
  if (type == "json_object") return {{"type", "json_object"}};
  if (type == "json_schema") {
    const ordered_json& name = field(format, "name");
    if (!name.is_null() && !name.is_string()) wrong_type("text.format.name", "a valid string");
    ordered_json schema = {{"name", name.is_null() ? ordered_json("response") : name}};
    if (!format.contains("schema") || !format["schema"].is_object())
      wrong_type("text.format.schema", "a valid dictionary");
    schema["schema"] = format["schema"];
    if (format.contains("strict")) schema["strict"] = format["strict"];
    return {{"type", "json_schema"}, {"json_schema", schema}};
  }
  throw bad_request(fmt::format("text.format.type: '{}' is not one of text, json_object, "
                                "json_schema",
                                type),
                    "text.format");
}

}  // namespace

ResponsesRequest parse_responses_request(const ordered_json& body) {
  if (!body.is_object()) throw bad_request("The request body must be a JSON object");
  ResponsesRequest r;
  if (const ordered_json& v = field(body, "background"); v.is_boolean() && v.get<bool>()) {
    throw bad_request(
        "This vLLM engine does not support `store=True` and therefore does not support the "
        "background mode. To enable these features, set the environment variable "
        "`VLLM_ENABLE_RESPONSES_API_STORE=1` when launching the vLLM server.",
        "background");
  }
  if (const ordered_json& v = field(body, "previous_response_id"); !v.is_null()) {
    // Nothing is stored (vLLM's default), so no earlier response can be found.
    throw ApiError(404, "invalid_request_error",
                   fmt::format("Response with id '{}' not found.",
                               v.is_string() ? v.get<std::string>() : v.dump()),
                   "response_id");
  }
  if (!field(body, "prompt").is_null()) {
    throw bad_request("prompt: reusable prompt templates are not supported; send input", "prompt");
  }

  ordered_json& chat = r.chat;
  ordered_json messages = ordered_json::array();
  const ordered_json& instructions = field(body, "instructions");
  if (!instructions.is_null() && !instructions.is_string())
    wrong_type("instructions", "a valid string");
  if (instructions.is_string() && !instructions.get<std::string>().empty())
    messages.push_back({{"role", "system"}, {"content", instructions}});
  const ordered_json& input = field(body, "input");
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    for (size_t i = 0; i < input.size(); ++i) add_input_item(input[i], i, messages);
  } else if (input.is_null()) {
    throw bad_request("input: Field required", "input");
  } else {
    wrong_type("input", "a valid string or a list of input items");
  }
  if (messages.empty()) throw bad_request("input: at least one input item is needed", "input");
  chat["messages"] = std::move(messages);
  const bool continue_final = continues_final_message(input);
  chat["add_generation_prompt"] = !continue_final;
  chat["continue_final_message"] = continue_final;

  for (const char* key : kSamplingFields) {
    if (body.contains(key)) chat[key] = body[key];
  }
  if (const ordered_json& v = field(body, "max_output_tokens"); !v.is_null())
    chat["max_tokens"] = v;
  if (const ordered_json& v = field(body, "stream"); !v.is_null()) {
    if (!v.is_boolean()) wrong_type("stream", "a valid boolean");
    chat["stream"] = v;
  }

  const ordered_json& tools = field(body, "tools");
  ordered_json chat_tools = ordered_json::array();
  if (!tools.is_null() && !tools.is_array()) wrong_type("tools", "a valid list");
  if (tools.is_array()) {
    for (size_t i = 0; i < tools.size(); ++i) add_chat_tools(tools[i], i, chat_tools, r.tool_names);
  }
  const ordered_json& choice = field(body, "tool_choice");
  if (!chat_tools.empty()) {
    chat["tools"] = chat_tools;
    chat["tool_choice"] = choice.is_null() ? ordered_json("auto") : chat_tool_choice(choice);
  } else if (!choice.is_null() && choice != "auto" && choice != "none") {
    throw bad_request("When using `tool_choice`, `tools` must be set.", "tool_choice");
  }
  if (const ordered_json& v = field(body, "parallel_tool_calls"); !v.is_null()) {
    if (!v.is_boolean()) wrong_type("parallel_tool_calls", "a valid boolean");
    r.parallel_tool_calls = v.get<bool>();
  }
  if (const ordered_json& v = field(body, "include_reasoning"); !v.is_null()) {
    if (!v.is_boolean()) wrong_type("include_reasoning", "a valid boolean");
    r.include_reasoning = v.get<bool>();
  }

  const ordered_json& include = field(body, "include");
  if (!include.is_null() && !include.is_array()) wrong_type("include", "a valid list");
  if (include.is_array()) {
    for (const ordered_json& v : include) {
      const std::string value = v.is_string() ? v.get<std::string>() : v.dump();
      if (std::find(kIncludeValues.begin(), kIncludeValues.end(), value) == kIncludeValues.end()) {
        throw bad_request(
            fmt::format("include: '{}' is not one of {}", value, fmt::join(kIncludeValues, ", ")),
            "include");
      }
      if (value == "message.output_text.logprobs") r.output_logprobs = true;
    }
  }
  if (r.output_logprobs) {
    chat["logprobs"] = true;
    const ordered_json& top = field(body, "top_logprobs");
    chat["top_logprobs"] = top.is_null() ? ordered_json(0) : top;
  }

  const ordered_json& text = field(body, "text");
  if (ordered_json format = chat_response_format(text); !format.is_null())
    chat["response_format"] = std::move(format);
  const ordered_json& reasoning = field(body, "reasoning");
  if (!reasoning.is_null() && !reasoning.is_object()) wrong_type("reasoning", "a valid dictionary");
  if (reasoning.is_object() && reasoning.contains("effort") && !reasoning["effort"].is_null()) {
    // As chat's reasoning_effort: to the template, with enable_thinking (vLLM's
    // build_chat_params does the same for both routes).
    chat["reasoning_effort"] = reasoning["effort"];
  }
  const ordered_json& truncation = field(body, "truncation");
  if (!truncation.is_null() && truncation != "auto" && truncation != "disabled") {
    throw bad_request(fmt::format("truncation: {} is not one of auto, disabled", truncation.dump()),
                      "truncation");
  }

  const auto given = [&](const char* key, json fallback) {
    const ordered_json& v = field(body, key);
    return v.is_null() ? fallback : json::parse(v.dump());
  };
  r.echo = {{"instructions", given("instructions", nullptr)},
            {"metadata", given("metadata", nullptr)},
            {"parallel_tool_calls", r.parallel_tool_calls},
            {"tool_choice", given("tool_choice", "auto")},
            {"tools", given("tools", json::array())},
            {"background", false},
            {"max_tool_calls", given("max_tool_calls", nullptr)},
            {"previous_response_id", nullptr},
            {"prompt", nullptr},
            {"prompt_cache_key", given("prompt_cache_key", nullptr)},
            {"prompt_cache_retention", given("prompt_cache_retention", nullptr)},
            {"reasoning", given("reasoning", nullptr)},
            {"safety_identifier", given("safety_identifier", nullptr)},
            {"service_tier", given("service_tier", "auto")},
            {"text", given("text", nullptr)},
            {"truncation", given("truncation", "disabled")},
            {"user", given("user", nullptr)}};
  return r;
}

}  // namespace ctxpar::server
