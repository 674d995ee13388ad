#include "ctxpar/server/openai_protocol.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/python_space.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;

std::string type_name(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number_float()) return "a number";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  return "null";
}

// Typed access to a request body's fields; a wrong type is a 400 naming the field.
class Fields {
 public:
  explicit Fields(const json& body) : body_(body) {
    if (!body.is_object()) {
      throw bad_request(
          fmt::format("The request body must be a JSON object, got {}", type_name(body)));
    }
  }

  // The field's value, or null when absent.
  const json& raw(const char* name) const {
    static const json null_value;
    const auto it = body_.find(name);
    return it == body_.end() ? null_value : *it;
  }
  bool given(const char* name) const { return !raw(name).is_null(); }

  [[noreturn]] void wrong_type(const char* name, const char* want) const {
    throw bad_request(
        fmt::format("{}: Input should be {}, got {} ({})", name, want, type_name(raw(name)),
                    raw(name).dump(-1, ' ', false, json::error_handler_t::replace)),
        name);
  }

  std::optional<bool> boolean(const char* name) const {
    const json& v = raw(name);
    if (v.is_null()) return std::nullopt;
    if (!v.is_boolean()) wrong_type(name, "a valid boolean");
    return v.get<bool>();
  }

  // Integers; a float with no fractional part is accepted, as pydantic does.
  std::optional<int64_t> integer(const char* name) const {
    const json& v = raw(name);
    if (v.is_null()) return std::nullopt;
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        throw bad_request(fmt::format("{}: Input should be less than or equal to {}", name,
                                      std::numeric_limits<int64_t>::max()),
                          name);
      }
      return static_cast<int64_t>(v.get<uint64_t>());
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && std::floor(d) == d && std::abs(d) < 9.0e18) {
        return static_cast<int64_t>(d);
      }
      throw bad_request(
          fmt::format("{}: Input should be a valid integer, got a number with a fractional part",
                      name),
          name);
    }
    wrong_type(name, "a valid integer");
  }

  std::optional<int32_t> int32(const char* name) const {
    const auto v = integer(name);
    if (v &&
        (*v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max())) {
      throw bad_request(fmt::format("{}: {} is out of range", name, *v), name);
    }
    return v ? std::optional<int32_t>(static_cast<int32_t>(*v)) : std::nullopt;
  }

  std::optional<double> number(const char* name) const {
    const json& v = raw(name);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) wrong_type(name, "a valid number");
    return v.get<double>();
  }

  std::optional<std::string> string(const char* name) const {
    const json& v = raw(name);
    if (v.is_null()) return std::nullopt;
    if (!v.is_string()) wrong_type(name, "a valid string");
    return v.get<std::string>();
  }

  // A list of integers >= 0 (token ids).
  std::vector<int32_t> token_ids(const json& v, const std::string& what, const char* param) const {
    std::vector<int32_t> ids;
    ids.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const json& t = v[i];
      if (!t.is_number_integer() && !t.is_number_unsigned()) {
        throw bad_request(
            fmt::format("{}[{}]: Input should be a valid integer, got {}", what, i, type_name(t)),
            param);
      }
      if (t.is_number_integer() && t.get<int64_t>() < 0) {
        throw bad_request(fmt::format("{}[{}]: Input should be greater than or equal to 0, got {}",
                                      what, i, t.get<int64_t>()),
                          param);
      }
      if (t.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
        throw bad_request(fmt::format("{}[{}]: token id {} is out of range", what, i, t.dump()),
                          param);
      }
      ids.push_back(t.get<int32_t>());
    }
    return ids;
  }

  // A field ctxpar does not implement: accepted at its "off" value only.
  void unsupported(const char* name, const json& off = json()) const {
    const json& v = raw(name);
    if (v.is_null() || v == off) return;
    throw ApiError(400, "BadRequestError",
                   fmt::format("{} is not supported by ctxpar; leave it out (or {})", name,
                               off.is_null() ? "null" : off.dump()),
                   name);
  }

 private:
  const json& body_;
};

// A sampling params problem, with its field as param (the message starts with it).
void check_params(engine::SamplingParams params) {
  // -1 logprobs (the whole vocabulary) are valid here; the handler resolves them.
  if (params.logprobs == -1) params.logprobs = 0;
  if (params.prompt_logprobs == -1) params.prompt_logprobs = 0;
  const auto problem = params.problem();
  if (!problem) return;
  const std::string& m = *problem;
  throw bad_request(m, m.substr(0, m.find(' ')));
}

void parse_sampling(const Fields& f, const GenerationDefaults& defaults, SamplingRequest& r) {
  r.model = f.string("model");
  engine::SamplingParams& p = r.params;
  p.temperature =
      static_cast<float>(f.number("temperature").value_or(defaults.temperature.value_or(1.0f)));
  // vLLM raises a tiny positive temperature to 0.01 (the division would overflow).
  if (p.temperature > 0.0f && p.temperature < 0.01f) p.temperature = 0.01f;
  p.top_p = static_cast<float>(f.number("top_p").value_or(defaults.top_p.value_or(1.0f)));
  p.top_k = f.int32("top_k").value_or(defaults.top_k.value_or(0));
  p.min_p = static_cast<float>(f.number("min_p").value_or(defaults.min_p.value_or(0.0f)));
  p.repetition_penalty = static_cast<float>(
      f.number("repetition_penalty").value_or(defaults.repetition_penalty.value_or(1.0f)));
  p.frequency_penalty = static_cast<float>(f.number("frequency_penalty").value_or(0.0));
  p.presence_penalty = static_cast<float>(f.number("presence_penalty").value_or(0.0));
  if (const auto seed = f.integer("seed"); seed && *seed != -1) {
    p.seed = static_cast<uint64_t>(*seed);
  }
  p.ignore_eos = f.boolean("ignore_eos").value_or(false);
  p.min_tokens = f.integer("min_tokens").value_or(0);
  if (const json& budget = f.raw("thinking_token_budget"); !budget.is_null()) {
    if (!budget.is_number_integer() || budget.get<int64_t>() < -1) {
      throw bad_request(fmt::format("`thinking_token_budget` must be a non-negative integer or -1 "
                                    "for unlimited, got {}.",
                                    budget.dump()),
                        "thinking_token_budget");
    }
    if (budget.get<int64_t>() >= 0) r.thinking_token_budget = budget.get<int64_t>();
  }
  // vLLM's logit_bias: {"<token id>": bias}, each bias clamped to [-100, 100].
  if (const json& bias = f.raw("logit_bias"); !bias.is_null()) {
    if (!bias.is_object()) f.wrong_type("logit_bias", "a valid dictionary");
    std::vector<std::string> bad_keys;
    for (const auto& [key, value] : bias.items()) {
      if (!value.is_number()) f.wrong_type("logit_bias", "a dictionary of numbers");
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != key.size() || used == 0 || id < 0 || id > std::numeric_limits<int32_t>::max()) {
        bad_keys.push_back("'" + key + "'");
        continue;
      }
      p.logit_bias.emplace_back(static_cast<int32_t>(id),
                                std::clamp(value.get<float>(), -100.0f, 100.0f));
    }
    if (!bad_keys.empty()) {
      throw bad_request(fmt::format("logit_bias contains key(s) that cannot be converted to "
                                    "integer token IDs: [{}]",
                                    fmt::join(bad_keys, ", ")),
                        "logit_bias");
    }
  }
  if (f.given("allowed_token_ids")) {
    const json& allowed = f.raw("allowed_token_ids");
    if (!allowed.is_array()) f.wrong_type("allowed_token_ids", "a valid list");
    if (allowed.empty()) {
      throw bad_request("allowed_token_ids is not None and empty!", "allowed_token_ids");
    }
    p.allowed_token_ids = f.token_ids(allowed, "allowed_token_ids", "allowed_token_ids");
  }
  if (f.given("stop_token_ids")) {
    if (!f.raw("stop_token_ids").is_array()) f.wrong_type("stop_token_ids", "a valid list");
    p.stop_token_ids = f.token_ids(f.raw("stop_token_ids"), "stop_token_ids", "stop_token_ids");
  }
  const auto n = f.integer("n").value_or(1);
  constexpr int64_t kMaxN = 128;
  if (n < 1) throw bad_request(fmt::format("n must be at least 1, got {}.", n), "n");
  if (n > kMaxN) throw bad_request(fmt::format("n must be at most {}, got {}.", kMaxN, n), "n");
  r.n = static_cast<int32_t>(n);
  if (r.n > 1 && p.is_greedy()) {
    throw bad_request(fmt::format("n must be 1 when using greedy sampling, got {}.", r.n), "n");
  }

  const json& stop = f.raw("stop");
  if (stop.is_string()) {
    r.stop.strings.push_back(stop.get<std::string>());
  } else if (stop.is_array()) {
    for (const json& s : stop) {
      if (!s.is_string()) f.wrong_type("stop", "a string or a list of strings");
      r.stop.strings.push_back(s.get<std::string>());
    }
  } else if (!stop.is_null()) {
    f.wrong_type("stop", "a string or a list of strings");
  }
  for (const std::string& s : r.stop.strings) {
    if (s.empty()) throw bad_request("stop cannot contain an empty string.", "stop");
  }
  r.stop.include_in_output = f.boolean("include_stop_str_in_output").value_or(false);
  r.stop.min_tokens = p.min_tokens;
  r.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  r.add_special_tokens = f.boolean("add_special_tokens");
  r.return_token_ids = f.boolean("return_token_ids").value_or(false);
  r.return_tokens_as_token_ids = f.boolean("return_tokens_as_token_ids");
  r.echo = f.boolean("echo").value_or(false);

  r.stream = f.boolean("stream").value_or(false);
  p.prompt_logprobs = f.int32("prompt_logprobs");
  if (p.prompt_logprobs) {
    if (r.stream && *p.prompt_logprobs != 0) {
      throw bad_request("`prompt_logprobs` are not available when `stream=True`.",
                        "prompt_logprobs");
    }
    if (*p.prompt_logprobs < -1) {
      throw bad_request("`prompt_logprobs` must be a positive value or -1.", "prompt_logprobs");
    }
  }
  const json& options = f.raw("stream_options");
  if (!options.is_null()) {
    if (!options.is_object()) f.wrong_type("stream_options", "a valid object");
    if (!r.stream) {
      throw bad_request("Stream options can only be defined when `stream=True`.", "stream_options");
    }
    const Fields o(options);
    r.include_usage = o.boolean("include_usage").value_or(true);
    r.continuous_usage_stats =
        r.include_usage && o.boolean("continuous_usage_stats").value_or(false);
  }

  f.unsupported("use_beam_search", false);
  f.unsupported("best_of", 1);
  if (const json& words = f.raw("bad_words"); !words.is_null()) {
    if (!words.is_array()) f.wrong_type("bad_words", "a valid list");
    for (const json& w : words) {
      if (!w.is_string()) f.wrong_type("bad_words", "a list of strings");
      if (w.get<std::string>().empty()) {
        throw bad_request(fmt::format("bad_words cannot contain an empty string. Got "
                                      "bad_words={}",
                                      words.dump()),
                          "bad_words");
      }
      if (std::find(r.bad_words.begin(), r.bad_words.end(), w) == r.bad_words.end())
        r.bad_words.push_back(w.get<std::string>());
    }
  }
  r.truncate_prompt_tokens = f.integer("truncate_prompt_tokens");
  if (r.truncate_prompt_tokens && *r.truncate_prompt_tokens < -1) {
    throw bad_request(fmt::format("truncate_prompt_tokens: Input should be greater than or equal "
                                  "to -1, got {}",
                                  *r.truncate_prompt_tokens),
                      "truncate_prompt_tokens");
  }
  r.truncation_side = f.string("truncation_side");
  if (r.truncation_side && *r.truncation_side != "left" && *r.truncation_side != "right") {
    throw bad_request("`truncation_side` must be either 'left' or 'right'.", "truncation_side");
  }
  f.unsupported("suffix");
  // response_format and structured_outputs: output_constraint.h (they need the schema's key
  // order, which this parse does not keep).
}

}  // namespace

CompletionRequest parse_completion_request(const json& body, const GenerationDefaults& defaults) {
  const Fields f(body);
  CompletionRequest r;
  parse_sampling(f, defaults, r);
  // vLLM's default of 16 (a null max_tokens means the default too); generation_config's
  // max_new_tokens caps it later (add_choices), as every request's.
  r.max_tokens = f.integer("max_tokens").value_or(16);
  if (const auto logprobs = f.int32("logprobs")) {
    if (*logprobs < -1) throw bad_request("`logprobs` must be a positive value or -1.", "logprobs");
    r.logprobs = *logprobs;
  }
  r.params.logprobs = r.logprobs;

  const json& prompt = f.raw("prompt");
  const auto empty_prompt = [] {
    return bad_request("Either prompt or prompt_embeds must be provided and non-empty.", "prompt");
  };
  if (prompt.is_null() || (prompt.is_string() && prompt.get<std::string>().empty())) {
    throw empty_prompt();
  }
  if (prompt.is_string()) {
    r.prompts.emplace_back(prompt.get<std::string>());
  } else if (prompt.is_array()) {
    if (prompt.empty()) throw empty_prompt();
    if (prompt[0].is_number()) {
      r.prompts.emplace_back(f.token_ids(prompt, "prompt", "prompt"));
    } else {
      for (size_t i = 0; i < prompt.size(); ++i) {
        const json& p = prompt[i];
        if (p.is_string()) {
          if (p.get<std::string>().empty()) throw empty_prompt();
          r.prompts.emplace_back(p.get<std::string>());
        } else if (p.is_array()) {
          if (p.empty()) throw empty_prompt();
          r.prompts.emplace_back(f.token_ids(p, fmt::format("prompt[{}]", i), "prompt"));
        } else {
          throw bad_request(fmt::format("prompt[{}]: Input should be a string or a list of "
                                        "token ids, got {}",
                                        i, type_name(p)),
                            "prompt");
        }
      }
    }
  } else {
    f.wrong_type("prompt", "a string, a list of strings, a list of token ids or a list of lists");
  }
  // echo with max_tokens 0 returns the prompt alone (vLLM generates one token and drops it).
  r.params.max_tokens = r.echo && *r.max_tokens == 0 ? 1 : *r.max_tokens;
  check_params(r.params);
  return r;
}

ChatRequest parse_chat_request(const json& body, const GenerationDefaults& defaults) {
  const Fields f(body);
  ChatRequest r;
  parse_sampling(f, defaults, r);
  // max_completion_tokens, else the deprecated max_tokens; none: what the context leaves (and
  // generation_config's max_new_tokens caps either, in add_choices).
  r.max_tokens = f.integer("max_completion_tokens");
  if (!r.max_tokens) r.max_tokens = f.integer("max_tokens");
  if (r.max_tokens && *r.max_tokens < 1) {
    throw bad_request(fmt::format("max_tokens must be at least 1, got {}.", *r.max_tokens),
                      f.given("max_completion_tokens") ? "max_completion_tokens" : "max_tokens");
  }
  r.logprobs = f.boolean("logprobs").value_or(false);
  r.top_logprobs = f.int32("top_logprobs");
  if (r.top_logprobs) {
    if (*r.top_logprobs < -1) {
      throw bad_request("`top_logprobs` must be a positive value or -1.", "top_logprobs");
    }
    if (*r.top_logprobs != 0 && !r.logprobs) {
      throw bad_request("when using `top_logprobs`, `logprobs` must be set to true.",
                        "top_logprobs");
    }
  }
  if (r.logprobs) r.params.logprobs = r.top_logprobs.value_or(0);
  r.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  r.continue_final_message = f.boolean("continue_final_message").value_or(false);
  if (r.add_generation_prompt && r.continue_final_message) {
    throw bad_request(
        "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
        "continue_final_message");
  }
  r.messages = f.raw("messages");
  if (r.messages.is_null()) throw bad_request("messages: Field required", "messages");
  if (!r.messages.is_array()) f.wrong_type("messages", "a valid list");
  if (r.messages.empty())
    throw bad_request("messages: List should have at least 1 item", "messages");
  for (size_t i = 0; i < r.messages.size(); ++i) {
    const json& m = r.messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      throw bad_request(
          fmt::format("messages[{}]: a message is an object with a string \"role\"", i),
          "messages");
    }
    message_text(m, i);  // checks the content
  }
  r.tools = f.raw("tools");
  if (!r.tools.is_null() && !r.tools.is_array()) f.wrong_type("tools", "a valid list");
  r.chat_template = f.string("chat_template");
  r.return_prompt_text = f.boolean("return_prompt_text").value_or(false);
  r.chat_template_kwargs = f.raw("chat_template_kwargs");
  if (!r.chat_template_kwargs.is_null() && !r.chat_template_kwargs.is_object()) {
    f.wrong_type("chat_template_kwargs", "a valid object");
  }
  r.passes_chat_template = r.chat_template.has_value() ||
                           (r.chat_template_kwargs.is_object() &&
                            !r.chat_template_kwargs.value("chat_template", json()).is_null());
  // vLLM's reasoning_effort: the template's reasoning_effort, and enable_thinking (effort not
  // "none") unless the request's kwargs set it; it wins over a reasoning_effort kwarg.
  if (const std::optional<std::string> effort = f.string("reasoning_effort")) {
    static constexpr std::array<std::string_view, 7> kEfforts = {"none", "minimal", "low", "medium",
                                                                 "high", "xhigh",   "max"};
    if (std::find(kEfforts.begin(), kEfforts.end(), *effort) == kEfforts.end()) {
      throw bad_request(fmt::format("reasoning_effort: Input should be 'none', 'minimal', 'low', "
                                    "'medium', 'high', 'xhigh' or 'max', got '{}'",
                                    *effort),
                        "reasoning_effort");
    }
    const auto mapped = defaults.reasoning_effort_map.find(*effort);
    const std::string& given =
        mapped != defaults.reasoning_effort_map.end() ? mapped->second : *effort;
    if (r.chat_template_kwargs.is_null()) r.chat_template_kwargs = json::object();
    r.chat_template_kwargs["reasoning_effort"] = given;
    if (!r.chat_template_kwargs.contains("enable_thinking"))
      r.chat_template_kwargs["enable_thinking"] = given != "none";
  }
  // vLLM's with_defaults, after the request's own additions (reasoning_effort's above).
  if (!defaults.chat_template_kwargs.empty()) {
    json merged = defaults.chat_template_kwargs;
    if (r.chat_template_kwargs.is_object()) {
      for (const auto& [key, value] : r.chat_template_kwargs.items()) {
        if (!value.is_null() && value != "auto") merged[key] = value;
      }
    }
    r.chat_template_kwargs = std::move(merged);
  }
  r.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  const json& choice = f.raw("tool_choice");
  if (choice.is_null()) {
    r.tool_choice = r.tools.is_array() && !r.tools.empty() ? "auto" : "none";
  } else if (choice == "none") {
    r.tool_choice = "none";
  } else {
    // vLLM's check_tool_usage: "auto", "required" or a named function, with tools.
    if (r.tools.is_null()) {
      throw bad_request("When using `tool_choice`, `tools` must be set.", "tool_choice");
    }
    if (choice == "auto" || choice == "required") {
      r.tool_choice = choice.get<std::string>();
    } else if (choice.is_object()) {
      const std::string usage =
          "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`";
      const json& function = choice.contains("function") ? choice["function"] : json();
      if (!function.is_object()) {
        throw bad_request(fmt::format("Invalid value for `function`: `{}` in `tool_choice`! {}",
                                      function.dump(), usage),
                          "tool_choice.function");
      }
      if (!function.contains("name")) {
        throw bad_request(
            fmt::format("Expected field `name` in `function` in `tool_choice`! {}", usage),
            "tool_choice.function.name");
      }
      const json& name = function["name"];
      if (!name.is_string() || name.get<std::string>().empty()) {
        throw bad_request(fmt::format("Invalid `name` in `function`: `{}` in `tool_choice`! {}",
                                      name.dump(), usage),
                          "tool_choice.function.name");
      }
      bool known = false;
      for (const json& tool : r.tools) {
        known =
            known || (tool.is_object() && tool.contains("function") &&
                      tool["function"].is_object() && tool["function"].value("name", "") == name);
      }
      if (!known) {
        throw bad_request(
            "The tool specified in `tool_choice` does not match any of the "
            "specified `tools`",
            "tool_choice");
      }
      r.tool_choice = "named";
      r.tool_choice_name = name.get<std::string>();
    } else {
      throw bad_request(fmt::format("Invalid value for `tool_choice`: {}! Only named tools, "
                                    "\"none\", \"auto\" or \"required\" are supported.",
                                    choice.dump()),
                        "tool_choice");
    }
  }
  // Checked with a placeholder length: the real one comes after the template.
  r.params.max_tokens = r.max_tokens.value_or(std::max<int64_t>(1, r.params.min_tokens));
  check_params(r.params);
  return r;
}

std::string message_text(const json& message, size_t index) {
  const auto it = message.find("content");
  if (it == message.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    std::string text;
    for (size_t k = 0; k < it->size(); ++k) {
      const json& part = (*it)[k];
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
          !part["text"].is_string()) {
        throw bad_request(fmt::format("messages[{}].content[{}]: only {{\"type\": \"text\", "
                                      "\"text\": ...}} parts are supported",
                                      index, k),
                          "messages");
      }
      if (!text.empty()) text += "\n";
      text += part["text"].get<std::string>();
    }
    return text;
  }
  throw bad_request(fmt::format("messages[{}].content: Input should be a string, a list of "
                                "parts or null, got {}",
                                index, type_name(*it)),
                    "messages");
}

int64_t resolve_max_tokens(std::optional<int64_t> requested, int64_t prompt_len,
                           int64_t max_model_len, const char* max_tokens_param) {
  const int64_t wanted = requested.value_or(0);
  if (wanted > max_model_len) {
    throw bad_request(fmt::format("{}={} cannot be greater than max_model_len={}. Please request "
                                  "fewer output tokens.",
                                  max_tokens_param, wanted, max_model_len),
                      max_tokens_param);
  }
  if (prompt_len > max_model_len) {
    throw bad_request(fmt::format("This model's maximum context length is {} tokens. However, "
                                  "your prompt contains {} input tokens, which exceeds this "
                                  "limit even without any output tokens. Please reduce the "
                                  "length of the input prompt.",
                                  max_model_len, prompt_len),
                      "input_tokens");
  }
  // A prompt that leaves less than max_tokens gets what is left (vLLM 0.34 clamps; older
  // versions refused it).
  const int64_t left = max_model_len - prompt_len;
  if (left < 1) {
    throw bad_request(
        fmt::format("You passed {} input tokens, which leaves no room for output in the model's "
                    "context length of {} tokens. Please reduce the length of the input prompt.",
                    prompt_len, max_model_len),
        "input_tokens");
  }
  return requested ? std::min(*requested, left) : left;
}

std::vector<std::vector<int32_t>> bad_words_token_ids(const std::vector<std::string>& words,
                                                      const tokenizer::Tokenizer& tokenizer) {
  std::vector<std::vector<int32_t>> out;
  for (const std::string& word : words) {
    // Python's str.lstrip(): leading whitespace off.
    const std::string bare = word.substr(skip_python_space(word, 0));
    for (const bool prefix_space : {false, true}) {
      const std::vector<int32_t> ids =
          tokenizer.encode(prefix_space ? " " + bare : bare, /*add_special_tokens=*/false);
      if (ids.empty()) {
        if (!prefix_space) {
          throw bad_request("bad_words entries must tokenize to at least one token.", "bad_words");
        }
        continue;
      }
      // The spaced form only when it starts with another token and is as long (a word token
      // with its space, not a space token before the same word).
      if (!prefix_space || (ids.front() != out.back().front() && ids.size() == out.back().size()))
        out.push_back(ids);
    }
  }
  return out;
}

void truncate_prompt(std::vector<int32_t>& prompt, std::optional<int64_t> limit,
                     const std::string& side, int64_t max_model_len) {
  if (!limit) return;
  if (*limit > max_model_len) {
    throw bad_request(fmt::format("truncate_prompt_tokens={} cannot be greater than "
                                  "max_model_len = {}. Please request a smaller truncation size.",
                                  *limit, max_model_len),
                      "truncate_prompt_tokens");
  }
  const int64_t keep = *limit < 0 ? std::max<int64_t>(0, max_model_len - 1) : *limit;
  if (keep >= static_cast<int64_t>(prompt.size())) return;
  if (side == "left") {
    prompt.erase(prompt.begin(), prompt.end() - keep);
  } else {
    prompt.resize(static_cast<size_t>(keep));
  }
}

}  // namespace ctxpar::server
