#include "ctxpar/server/generation_responder.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <string>

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/openai_responses.h"

namespace ctxpar::server {

using nlohmann::json;

GenerationResponder::GenerationResponder(const GenerationPlan& plan, const SamplingRequest& request,
                                         const tokenizer::Tokenizer& tokenizer)
    : plan_(plan), request_(request), tokenizer_(tokenizer), states_(plan.choices.size()) {
  for (ChoiceState& s : states_) {
    s.tools = ToolCallStream(plan.tool_call_parser, &plan.tools);
    s.forced = ForcedToolStream(plan.forced_tools, plan.forced_tool_name);
    if (plan.responses) {
      s.events =
          ResponsesEventStream(plan.responses->parallel_tool_calls, &plan.responses->tool_names);
    }
  }
  if (!chat_like() || plan.reasoning_parser == ReasoningParser::kNone) return;
  // Only the prompt's end matters (whether it closes the thinking): decode its last tokens, not
  // a long prompt whole on every request.
  constexpr size_t kTailTokens = 32;
  std::vector<std::string> prompt_tails;
  for (const auto& prompt : plan.prompts) {
    const size_t n = std::min(prompt.size(), kTailTokens);
    prompt_tails.push_back(
        tokenizer.decode(std::span<const int32_t>(prompt).subspan(prompt.size() - n), false));
  }
  for (size_t i = 0; i < states_.size(); ++i) {
    states_[i].reasoning = ReasoningSplit(plan.reasoning_parser, plan.thinking,
                                          prompt_tails[plan.choices[i].prompt_index]);
    states_[i].reasoning_count = states_[i].reasoning;
  }
}

namespace {

json or_null(const std::optional<std::string>& text) {
  return text ? json(*text) : json(nullptr);
}

json tool_call_json(const ToolCall& call) {
  return {{"id", call.id},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

// A call's first piece as vLLM's hermes parser sends it (id, type and name; arguments only when
// some came), then pieces of arguments alone.
json tool_call_piece_json(const ToolCallPiece& piece) {
  if (piece.id.empty()) {
    return {{"index", piece.index}, {"function", {{"arguments", piece.arguments}}}};
  }
  json function = {{"name", piece.name}};
  if (!piece.arguments.empty()) function["arguments"] = piece.arguments;
  return {{"index", piece.index}, {"id", piece.id}, {"type", "function"}, {"function", function}};
}

}  // namespace

json GenerationResponder::chunk_base() const {
  return {
      {"id", plan_.id},
      {"object", plan_.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
      {"created", plan_.created},
      {"model", plan_.model}};
}

json GenerationResponder::choice_logprobs(const ChoiceState& s, const std::vector<int32_t>& tokens,
                                          const std::vector<engine::SampledLogprobs>& logprobs,
                                          int64_t text_offset, bool echo_prompt) const {
  if (plan_.num_top_logprobs < 0) return nullptr;
  if (chat_like()) {
    return chat_logprobs(logprob_names(), tokens, logprobs, plan_.num_top_logprobs);
  }
  if (!echo_prompt) {
    return completion_logprobs(logprob_names(), tokens, logprobs, plan_.num_top_logprobs,
                               text_offset);
  }
  const size_t choice = static_cast<size_t>(&s - states_.data());
  std::vector<int32_t> all = plan_.prompts[plan_.choices[choice].prompt_index];
  std::vector<engine::SampledLogprobs> scores = s.prompt_logprobs;
  if (!plan_.echo_only) {
    all.insert(all.end(), tokens.begin(), tokens.end());
    scores.insert(scores.end(), logprobs.begin(), logprobs.end());
  }
  return completion_logprobs(logprob_names(), all, scores, plan_.num_top_logprobs, text_offset,
                             /*num_unscored=*/1);
}

json GenerationResponder::prompt_logprobs_field(size_t i) const {
  const ChoiceRequest& c = plan_.choices[i];
  if (!c.params.prompt_logprobs) return nullptr;
  return prompt_logprobs_json(tokenizer_, plan_.prompts[c.prompt_index],
                              states_[i].prompt_logprobs);
}

std::pair<int64_t, int64_t> GenerationResponder::cache_tokens() const {
  int64_t cached = 0, created = 0;
  for (size_t i = 0; i < states_.size(); ++i) {
    const size_t p = plan_.choices[i].prompt_index;
    if (i > 0 && plan_.choices[i - 1].prompt_index == p) continue;
    cached += states_[i].num_cached_tokens;
    // As vLLM's estimate: the prompt's full blocks are in the cache once it is prefilled.
    const int64_t b = plan_.cache_block_tokens;
    const int64_t full = b > 0 ? static_cast<int64_t>(plan_.prompts[p].size()) / b * b : 0;
    created += std::max<int64_t>(0, full - states_[i].num_cached_tokens);
  }
  return {cached, created};
}

json GenerationResponder::usage() const {
  json out = usage_json(plan_.prompt_tokens, completion_tokens());
  out["prompt_tokens_details"] = nullptr;
  if (plan_.prompt_tokens_details) {
    const auto [cached, created] = cache_tokens();
    out["prompt_tokens_details"] = {{"cached_tokens", cached},
                                    {"created_cache_tokens", created},
                                    {"multimodal_tokens", nullptr}};
  }
  return out;
}

int64_t GenerationResponder::completion_tokens() const {
  int64_t n = 0;
  for (const ChoiceState& s : states_) n += static_cast<int64_t>(s.token_ids.size());
  return n;
}

std::string GenerationResponder::first_events() {
  if (sent_roles_ || plan_.endpoint == Endpoint::kCompletion) return {};
  sent_roles_ = true;
  if (plan_.endpoint == Endpoint::kMessages) {
    return states_.at(0).anthropic.start(plan_.id, plan_.model,
                                         anthropic_usage(plan_.prompt_tokens, std::nullopt, 0));
  }
  if (plan_.endpoint == Endpoint::kResponses) {
    const json response = responses_response("in_progress", json::array(), false);
    std::string out = responses_event({{"type", "response.created"}, {"response", response}});
    return out + responses_event({{"type", "response.in_progress"}, {"response", response}});
  }
  // vLLM's continuous usage counts the prompt in these chunks too, and no output yet.
  const auto add_usage = [&](json& chunk, size_t i) {
    if (!request_.continuous_usage_stats) return;
    chunk["usage"] =
        usage_json(static_cast<int64_t>(plan_.prompts[plan_.choices[i].prompt_index].size()), 0);
  };
  std::string out;
  for (size_t i = 0; i < states_.size(); ++i) {
    json chunk = chunk_base();
    chunk["choices"] = json::array({{{"index", i},
                                     {"delta", {{"role", plan_.response_role}, {"content", ""}}},
                                     {"logprobs", nullptr},
                                     {"finish_reason", nullptr}}});
    // vLLM sets both on its role chunks (so they are dumped, null when not asked for).
    chunk["prompt_token_ids"] = request_.return_token_ids
                                    ? json(plan_.prompts[plan_.choices[i].prompt_index])
                                    : json(nullptr);
    chunk["prompt_text"] = plan_.prompt_text ? json(*plan_.prompt_text) : json(nullptr);
    add_usage(chunk, i);
    out += sse_event(chunk);
  }
  // vLLM's chat echo: the last message's content, a chunk per choice after the roles.
  if (!plan_.echo.empty() && !plan_.echo[0].empty()) {
    for (size_t i = 0; i < states_.size(); ++i) {
      json chunk = chunk_base();
      chunk["choices"] = json::array({{{"index", i},
                                       {"delta", {{"content", plan_.echo[0]}}},
                                       {"logprobs", nullptr},
                                       {"finish_reason", nullptr}}});
      add_usage(chunk, i);
      out += sse_event(chunk);
    }
  }
  return out;
}

std::optional<json> GenerationResponder::chat_delta(ChoiceState& s, const std::string& text,
                                                    bool finished) {
  std::string reasoning, content = text;
  if (s.reasoning.enabled()) {
    ReasoningSplit::Delta part = s.reasoning.add(text, finished);
    reasoning = std::move(part.reasoning);
    content = std::move(part.content);
  }
  json calls = json::array();
  const bool forced = plan_.forced_tools != ForcedToolChoice::kNone;
  const bool parse_tools = plan_.tool_call_parser != ToolCallParser::kNone || forced;
  if (forced) {
    calls = s.forced.add(content, finished);
    content.clear();
  } else if (parse_tools) {
    ToolCallStream::Delta part = s.tools.add(content, finished);
    content = std::move(part.content);
    for (const ToolCallPiece& piece : part.calls) calls.push_back(tool_call_piece_json(piece));
  }
  if (!plan_.parallel_tool_calls) {
    json first = json::array();
    for (json& piece : calls) {
      if (piece.value("index", 0) == 0) first.push_back(std::move(piece));
    }
    calls = std::move(first);
  }
  if (!s.reasoning.enabled() && !parse_tools) return json{{"content", content}};
  if (reasoning.empty() && content.empty() && calls.empty()) return std::nullopt;
  json delta = json::object();
  if (!reasoning.empty()) delta["reasoning"] = reasoning;
  if (!content.empty() || (reasoning.empty() && calls.empty())) delta["content"] = content;
  if (!calls.empty()) delta["tool_calls"] = calls;
  return delta;
}

std::string GenerationResponder::chat_finish_reason(const std::string& finish_reason,
                                                    bool calls_made) const {
  if (calls_made && finish_reason == "stop" && plan_.forced_tools != ForcedToolChoice::kNamed) {
    return "tool_calls";
  }
  return finish_reason;
}

json GenerationResponder::stream_choice(size_t i, const ChoiceDelta& d, const json& delta) {
  ChoiceState& s = states_[i];
  const ChoiceRequest& c = plan_.choices[i];
  const bool echo_prompt =
      !s.sent_first && request_.echo && plan_.endpoint == Endpoint::kCompletion;
  std::string text = plan_.echo_only ? std::string() : d.text;
  if (echo_prompt) text = plan_.echo[c.prompt_index] + text;
  json logprobs = choice_logprobs(s, d.token_ids, d.logprobs, s.logprob_offset, echo_prompt);
  if (plan_.echo_only && !echo_prompt && logprobs.is_object()) {
    logprobs = completion_logprobs(logprob_names(), {}, {}, 0, s.logprob_offset);
  }
  if (logprobs.is_object() && !logprobs["tokens"].empty()) {
    s.logprob_offset = logprobs["text_offset"].back().get<int64_t>() +
                       text_length(logprobs["tokens"].back().get<std::string>());
  }
  const json finish =
      d.finish_reason ? json(chat_finish_reason(*d.finish_reason, s.tools.calls_sent() > 0 ||
                                                                      s.forced.calls_sent() > 0))
                      : json(nullptr);
  const json token_ids = request_.return_token_ids ? json(d.token_ids) : json(nullptr);
  json choice;
  if (plan_.endpoint == Endpoint::kChat) {
    choice = {{"index", i},
              {"delta", delta},
              {"logprobs", logprobs},
              {"finish_reason", finish},
              {"token_ids", token_ids}};
    if (d.finish_reason) choice["stop_reason"] = d.stop_reason;
  } else {
    const json prompt_ids = request_.return_token_ids && !s.sent_first
                                ? json(plan_.prompts[c.prompt_index])
                                : json(nullptr);
    choice = {{"index", i},
              {"text", text},
              {"logprobs", logprobs},
              {"finish_reason", finish},
              {"stop_reason", d.stop_reason},
              {"prompt_token_ids", prompt_ids},
              {"token_ids", token_ids}};
  }
  s.sent_first = true;
  return choice;
}

std::string GenerationResponder::add(const std::vector<ChoiceDelta>& deltas, bool streaming) {
  std::string out;
  for (const ChoiceDelta& d : deltas) {
    const size_t i = d.choice;
    ChoiceState& s = states_[i];
    if (d.error) {
      error_ = *d.error;
      continue;
    }
    s.text += d.text;
    s.token_ids.insert(s.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
    s.logprobs.insert(s.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
    s.prompt_logprobs.insert(s.prompt_logprobs.end(), d.prompt_logprobs.begin(),
                             d.prompt_logprobs.end());
    s.num_cached_tokens = std::max(s.num_cached_tokens, d.num_cached_tokens);
    if (d.timing) s.timing = d.timing;
    if (d.finish_reason) {
      s.finish_reason = *d.finish_reason;
      s.stop_reason = d.stop_reason;
    }
    if (plan_.endpoint == Endpoint::kResponses) {
      out += add_responses(s, d, streaming);
      continue;
    }
    if (plan_.endpoint == Endpoint::kMessages) {
      if (!streaming) continue;
      if (const std::optional<json> delta = chat_delta(s, d.text, d.finish_reason.has_value()))
        out += s.anthropic.add(*delta);
      continue;
    }
    if (!streaming) continue;
    // vLLM skips a chunk with nothing in it before a choice's first token.
    if (d.text.empty() && d.token_ids.empty() && !d.finish_reason && !s.sent_first) continue;
    json delta = {{"content", d.text}};
    if (plan_.endpoint == Endpoint::kChat) {
      const std::optional<json> split = chat_delta(s, d.text, d.finish_reason.has_value());
      // As vLLM: a delta that was only a tag, or part of a tool call, sends nothing.
      if (!split && !d.finish_reason) continue;
      delta = split ? *split : json{{"content", ""}};
    }
    json chunk = chunk_base();
    chunk["choices"] = json::array({stream_choice(i, d, delta)});
    if (d.finish_reason && !request_.include_usage && plan_.system_fingerprint) {
      chunk["system_fingerprint"] = *plan_.system_fingerprint;
    }
    if (request_.continuous_usage_stats) {
      chunk["usage"] =
          usage_json(static_cast<int64_t>(plan_.prompts[plan_.choices[i].prompt_index].size()),
                     static_cast<int64_t>(s.token_ids.size()));
    }
    out += sse_event(chunk);
  }
  return out;
}

std::string GenerationResponder::final_events() {
  if (plan_.endpoint == Endpoint::kMessages) {
    ChoiceState& s = states_.at(0);
    if (error_) return s.anthropic.fail(*error_);
    const bool calls = s.tools.calls_sent() > 0 || s.forced.calls_sent() > 0;
    return s.anthropic.finish(chat_finish_reason(s.finish_reason, calls), s.stop_reason,
                              anthropic_usage_now());
  }
  if (plan_.endpoint == Endpoint::kResponses) {
    if (error_) {
      return responses_event({{"type", "error"},
                              {"code", "internal_error"},
                              {"message", *error_},
                              {"param", nullptr}});
    }
    ChoiceState& s = states_.at(0);
    const std::string status = responses_status(s.finish_reason);
    std::string out;
    for (json& event : s.events.close(status)) out += responses_event(std::move(event));
    const char* type = status == "incomplete" ? "response.incomplete" : "response.completed";
    return out +
           responses_event(
               {{"type", type}, {"response", responses_response(status, s.events.items(), true)}});
  }
  std::string out;
  if (error_) {
    out += sse_event(internal_error(*error_).to_json());
  } else if (request_.include_usage) {
    json chunk = chunk_base();
    chunk["choices"] = json::array();
    chunk["usage"] = usage();
    // The usage chunk leaves nulls out (vLLM's exclude_none).
    if (chunk["usage"]["prompt_tokens_details"].is_null()) {
      chunk["usage"].erase("prompt_tokens_details");
    }
    if (plan_.system_fingerprint) chunk["system_fingerprint"] = *plan_.system_fingerprint;
    if (const json metrics = request_metrics(true); !metrics.is_null()) chunk["metrics"] = metrics;
    out += sse_event(chunk);
  }
  return out + kSseDone;
}

std::string GenerationResponder::add_responses(ChoiceState& s, const ChoiceDelta& d,
                                               bool streaming) {
  const bool finished = d.finish_reason.has_value();
  // Reasoning tokens: those before the first content (a tag held back counts with its side).
  if (s.reasoning_count.enabled() && !s.reasoning_ended) {
    const ReasoningSplit::Delta part = s.reasoning_count.add(d.text, finished);
    s.reasoning_ended = !part.content.empty();
    if (!s.reasoning_ended) s.reasoning_tokens += static_cast<int64_t>(d.token_ids.size());
  }
  if (!streaming) return {};
  std::optional<json> delta = chat_delta(s, d.text, finished);
  if (!delta) return {};
  if (!plan_.responses->include_reasoning) delta->erase("reasoning");
  json logprobs = nullptr;
  if (plan_.num_top_logprobs >= 0 && !d.token_ids.empty()) {
    logprobs = responses_stream_logprobs(
        chat_logprobs(logprob_names(), d.token_ids, d.logprobs, plan_.num_top_logprobs)["content"]);
  }
  std::string out;
  for (json& event : s.events.add(*delta, logprobs)) out += responses_event(std::move(event));
  return out;
}

std::string GenerationResponder::responses_event(json event) {
  event["sequence_number"] = sequence_number_++;
  return responses_sse_event(event);
}

json GenerationResponder::responses_sampling() const {
  const engine::SamplingParams& p = plan_.choices.at(0).params;
  // Floats as their shortest decimal, the value the request wrote (0.7, not 0.699999988).
  const auto number = [](float v) { return std::stod(fmt::format("{}", v)); };
  return {{"temperature", number(p.temperature)},
          {"top_p", number(p.top_p)},
          {"max_output_tokens", p.max_tokens},
          {"top_logprobs", p.logprobs ? json(*p.logprobs) : json(nullptr)},
          {"presence_penalty", number(p.presence_penalty)},
          {"frequency_penalty", number(p.frequency_penalty)}};
}

json GenerationResponder::responses_response(const std::string& status, json output,
                                             bool with_usage) const {
  json usage = nullptr;
  if (with_usage) {
    const ChoiceState& s = states_.at(0);
    usage = responses_usage(plan_.prompt_tokens, s.num_cached_tokens, completion_tokens(),
                            s.reasoning_tokens);
  }
  return responses_object(*plan_.responses, plan_.id, plan_.created, plan_.model, status,
                          std::move(output), responses_sampling(), std::move(usage));
}

GenerationResponder::WholeMessage GenerationResponder::whole_message(const ChoiceState& s) const {
  WholeMessage m;
  m.content = s.text;
  m.finish_reason = s.finish_reason;
  if (s.reasoning.enabled()) {
    ReasoningSplit::Part part = s.reasoning.whole(s.text);
    m.content = std::move(part.content);
    m.reasoning = std::move(part.reasoning);
    m.has_reasoning = true;
  }
  if (plan_.forced_tools != ForcedToolChoice::kNone) {
    // vLLM's message for a forced tool choice: content "", the calls parsed from the text.
    m.calls = forced_tool_calls(plan_.forced_tools, plan_.forced_tool_name, m.content.value_or(""));
    m.content = "";
  } else if (plan_.tool_call_parser != ToolCallParser::kNone && m.content) {
    ToolCallSplit split = split_tool_calls(plan_.tool_call_parser, *m.content, plan_.tools);
    m.content = std::move(split.content);
    m.calls = std::move(split.calls);
  }
  m.finish_reason = chat_finish_reason(m.finish_reason, !m.calls.empty());
  if (!plan_.parallel_tool_calls && m.calls.size() > 1) m.calls.resize(1);
  return m;
}

nlohmann::ordered_json GenerationResponder::anthropic_usage_now() const {
  if (!plan_.prompt_tokens_details)
    return anthropic_usage(plan_.prompt_tokens, std::nullopt, completion_tokens());
  const auto [cached, created] = cache_tokens();
  return anthropic_usage(plan_.prompt_tokens, AnthropicCache{cached, created}, completion_tokens());
}

json GenerationResponder::whole_response() const {
  if (plan_.endpoint == Endpoint::kMessages) {
    const ChoiceState& s = states_.at(0);
    WholeMessage whole = whole_message(s);
    const AnthropicMessage m{.reasoning = std::move(whole.reasoning),
                             .content = std::move(whole.content),
                             .calls = std::move(whole.calls),
                             .finish_reason = whole.finish_reason,
                             .stop_reason = s.stop_reason};
    return json::parse(anthropic_message(plan_.id, plan_.model, m, anthropic_usage_now()).dump());
  }
  if (plan_.endpoint == Endpoint::kResponses) {
    const ChoiceState& s = states_.at(0);
    const ResponsesRequest& r = *plan_.responses;
    WholeMessage whole = whole_message(s);
    ResponsesMessage m{.reasoning = std::move(whole.reasoning),
                       .content = std::move(whole.content),
                       .calls = std::move(whole.calls),
                       .logprobs = nullptr,
                       .finish_reason = s.finish_reason,
                       .parsed = whole.has_reasoning ||
                                 plan_.tool_call_parser != ToolCallParser::kNone ||
                                 plan_.forced_tools != ForcedToolChoice::kNone};
    if (!r.include_reasoning) m.reasoning.reset();
    if (!r.parallel_tool_calls && m.calls.size() > 1) m.calls.resize(1);
    if (plan_.num_top_logprobs >= 0 && (r.include_reasoning || !m.parsed)) {
      m.logprobs = chat_logprobs(logprob_names(), s.token_ids, s.logprobs,
                                 plan_.num_top_logprobs)["content"];
    }
    const std::string status = responses_status(s.finish_reason);
    return responses_response(status, responses_output_items(m, r.tool_names), true);
  }
  json choices = json::array();
  for (size_t i = 0; i < states_.size(); ++i) {
    const ChoiceState& s = states_[i];
    const ChoiceRequest& c = plan_.choices[i];
    const bool echo_prompt = request_.echo && plan_.endpoint == Endpoint::kCompletion;
    const json logprobs = choice_logprobs(s, s.token_ids, s.logprobs, 0, echo_prompt);
    const json token_ids = request_.return_token_ids ? json(s.token_ids) : json(nullptr);
    if (plan_.endpoint == Endpoint::kChat) {
      json message = {{"role", plan_.response_role}};
      WholeMessage whole = whole_message(s);
      if (whole.has_reasoning) message["reasoning"] = or_null(whole.reasoning);
      if (!whole.calls.empty()) {
        json calls = json::array();
        for (const ToolCall& call : whole.calls) calls.push_back(tool_call_json(call));
        message["tool_calls"] = calls;
      }
      std::optional<std::string> content = std::move(whole.content);
      const std::string& finish_reason = whole.finish_reason;
      if (!plan_.echo.empty()) content = plan_.echo[0] + content.value_or("");
      message["content"] = or_null(content);
      choices.push_back({{"index", i},
                         {"message", message},
                         {"logprobs", logprobs},
                         {"finish_reason", finish_reason},
                         {"stop_reason", s.stop_reason},
                         {"token_ids", token_ids},
                         {"routed_experts", nullptr},
                         {"weight_versions", nullptr}});
    } else {
      const std::string output_text = plan_.echo_only ? std::string() : s.text;
      const std::string text =
          request_.echo ? plan_.echo[c.prompt_index] + output_text : output_text;
      choices.push_back(
          {{"index", i},
           {"text", text},
           {"logprobs", logprobs},
           {"finish_reason", s.finish_reason},
           {"stop_reason", s.stop_reason},
           {"prompt_logprobs", prompt_logprobs_field(i)},
           {"prompt_token_ids",
            request_.return_token_ids ? json(plan_.prompts[c.prompt_index]) : json(nullptr)},
           {"token_ids", token_ids},
           {"routed_experts", nullptr},
           {"weight_versions", nullptr}});
    }
  }
  json response = {
      {"id", plan_.id},
      {"object", plan_.endpoint == Endpoint::kChat ? "chat.completion" : "text_completion"},
      {"created", plan_.created},
      {"model", plan_.model},
      {"choices", choices},
      {"service_tier", nullptr},
      {"system_fingerprint", fingerprint_or_null()},
      {"usage", usage()}};
  // Chat has one prompt: vLLM gives its scores, ids and text once, beside the choices.
  if (plan_.endpoint == Endpoint::kChat) {
    response["prompt_logprobs"] = states_.empty() ? json(nullptr) : prompt_logprobs_field(0);
    response["prompt_token_ids"] = request_.return_token_ids && !plan_.prompts.empty()
                                       ? json(plan_.prompts[0])
                                       : json(nullptr);
    response["prompt_text"] = plan_.prompt_text ? json(*plan_.prompt_text) : json(nullptr);
  }
  response["kv_transfer_params"] = nullptr;
  response["ec_transfer_params"] = nullptr;
  response["metrics"] = request_metrics(false);
  return response;
}

json GenerationResponder::request_metrics(bool drop_nulls) const {
  if (!plan_.per_request_metrics || states_.size() != 1 || !states_[0].timing) return nullptr;
  // vLLM's build_per_request_timing_metrics, in milliseconds.
  const ChoiceTiming& t = *states_[0].timing;
  const auto ms = [](engine::Clock::time_point a, engine::Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto n = static_cast<double>(states_[0].token_ids.size());
  json out = {{"time_to_first_token_ms", nullptr}, {"generation_time_ms", nullptr},
              {"queue_time_ms", nullptr},          {"mean_itl_ms", nullptr},
              {"tokens_per_second", nullptr},      {"speculative_decoding", nullptr}};
  if (t.scheduled && t.first_token)
    out["time_to_first_token_ms"] = ms(*t.scheduled, *t.first_token);
  if (t.first_token && t.last_token) {
    out["generation_time_ms"] = ms(*t.first_token, *t.last_token);
    if (n > 1) out["mean_itl_ms"] = ms(*t.first_token, *t.last_token) / (n - 1);
  }
  if (t.scheduled) out["queue_time_ms"] = ms(t.queued, *t.scheduled);
  if (t.scheduled && t.last_token && ms(*t.scheduled, *t.last_token) > 0) {
    out["tokens_per_second"] = n / ms(*t.scheduled, *t.last_token) * 1000;
  }
  if (drop_nulls) {
    for (auto it = out.begin(); it != out.end();)
      it = it->is_null() ? out.erase(it) : std::next(it);
  }
  return out;
}

}  // namespace ctxpar::server
