#include "ctxpar/server/openai_handlers.h"

#include <httplib.h>

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <span>

#include "ctxpar/core/error.h"
#include "ctxpar/server/api_error.h"
#include "ctxpar/server/chat_template_inputs.h"
#include "ctxpar/server/generation.h"
#include "ctxpar/server/generation_responder.h"
#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/output_constraint.h"
#include "ctxpar/tokenizer/chat_template/chat_template.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;
using Clock = engine::Clock;

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json parse_body(const httplib::Request& req) {
  try {
    return json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw bad_request(fmt::format("JSON decode error: {}", e.what()));
  }
}

// The body with its keys in the client's order (schemas and tool definitions keep it).
nlohmann::ordered_json parse_ordered_body(const httplib::Request& req) {
  try {
    return nlohmann::ordered_json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw bad_request(fmt::format("JSON decode error: {}", e.what()));
  }
}

void respond_json(httplib::Response& res, const json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// vLLM's base of a response id: the X-Request-Id header, else the body's `request_id`, else a
// fresh uuid's hex.
std::string base_request_id(const httplib::Request& req, const json& body) {
  if (req.has_header("X-Request-Id")) return req.get_header_value("X-Request-Id");
  if (body.is_object() && body.contains("request_id") && !body["request_id"].is_null()) {
    const json& id = body["request_id"];
    if (!id.is_string()) throw bad_request("request_id must be a string", "request_id");
    return id.get<std::string>();
  }
  return random_hex(32);
}

// Submits the plan and answers with the whole response, or streams it.
void run_generation(engine::OnlineEngine& engine, ServerMetrics& metrics,
                    const tokenizer::Tokenizer& tokenizer, const ServerOptions& options,
                    OpenAiServer::State& server_state, std::unique_ptr<GenerationPlan> plan,
                    const SamplingRequest& request, bool skip_special_tokens,
                    Clock::time_point arrival, httplib::Response& res) {
  // --enable-server-load-tracking: counted from here until the response's last byte. The
  // shared count goes down when the last holder (this call, or the stream) lets go.
  std::shared_ptr<void> load;
  if (options.server_load_tracking) {
    ++server_state.server_load;
    load = std::shared_ptr<void>(nullptr, [&server_state](void*) { --server_state.server_load; });
  }
  auto generation =
      // The engine's ids get a suffix: a client may send one id for requests that overlap.
      std::make_shared<Generation>(engine, metrics, tokenizer, plan->id + "-" + random_hex(8),
                                   plan->choices, request.stop, skip_special_tokens, arrival);
  try {
    generation->submit();
  } catch (const Error& e) {
    const engine::OnlineEngine::State state = engine.state();
    if (state != engine::OnlineEngine::State::kRunning) throw unavailable(e.what());
    throw bad_request(e.what());
  }
  if (!request.stream) {
    GenerationResponder responder(*plan, request, tokenizer);
    while (!generation->done())
      responder.add(generation->next(std::chrono::milliseconds(500)), false);
    if (responder.error()) throw internal_error(*responder.error());
    respond_json(res, responder.whole_response());
    return;
  }
  // The provider runs on this worker thread, chunk after chunk, until it calls sink.done().
  struct Stream {
    std::shared_ptr<Generation> generation;
    std::unique_ptr<GenerationPlan> plan;
    SamplingRequest request;
    std::unique_ptr<GenerationResponder> responder;
    std::shared_ptr<void> load;
    bool finished = false;
  };
  auto stream = std::make_shared<Stream>();
  stream->generation = generation;
  stream->plan = std::move(plan);
  stream->request = request;
  stream->load = load;
  stream->responder =
      std::make_unique<GenerationResponder>(*stream->plan, stream->request, tokenizer);
  const auto keepalive = options.keepalive;
  // stop() waits for this to drop back: httplib cuts streams short once it is stopping.
  ++server_state.open_streams;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [stream, keepalive](size_t, httplib::DataSink& sink) {
        if (stream->finished) {
          sink.done();
          return true;
        }
        // Responses open with response.created at once, as vLLM's, and messages with
        // message_start (vLLM's waits for the first output, which a long prompt's prefill holds
        // back; Anthropic's API sends it at once); chat's role chunks wait for the first output.
        const Endpoint endpoint = stream->plan->endpoint;
        std::string out = endpoint == Endpoint::kResponses || endpoint == Endpoint::kMessages
                              ? stream->responder->first_events()
                              : std::string();
        const auto deadline = Clock::now() + keepalive;
        while (out.empty() && Clock::now() < deadline && !stream->generation->done()) {
          const auto deltas = stream->generation->next(std::chrono::milliseconds(200));
          if (!deltas.empty()) out += stream->responder->first_events();
          out += stream->responder->add(deltas, true);
        }
        if (stream->generation->done()) {
          out += stream->responder->final_events();
          stream->finished = true;
        } else if (out.empty()) {
          out = ": keep-alive\n\n";  // nothing for a while: is the client still there?
        }
        if (!sink.write(out.data(), out.size())) {
          stream->generation->abort();  // the client left: free its requests
          return false;
        }
        if (stream->finished) sink.done();
        return true;
      },
      [stream, &server_state](bool success) {
        if (!success) stream->generation->abort();
        stream->load.reset();
        --server_state.open_streams;
      });
}

}  // namespace

OpenAiServer::Handlers::Handlers(engine::OnlineEngine& engine,
                                 const tokenizer::Tokenizer& tokenizer,
                                 const engine::ChatPrompt& chat, const ServerOptions& options,
                                 ServerMetrics& metrics, State& state)
    : engine_(engine),
      tokenizer_(tokenizer),
      chat_(chat),
      options_(options),
      metrics_(metrics),
      state_(state),
      created_(unix_now()),
      anthropic_(probe_anthropic_rendering(chat, options.anthropic_disabled_thinking_effort,
                                           options.defaults.chat_template_kwargs)) {}

std::optional<engine::SamplingParams::ThinkingBudget> OpenAiServer::Handlers::thinking_budget(
    const SamplingRequest& r) const {
  if (!r.thinking_token_budget) return std::nullopt;
  if (options_.reasoning_parser == ReasoningParser::kNone) {
    throw bad_request(
        "thinking_token_budget is set but reasoning_config is not configured. Please set "
        "--reasoning-parser and/or --reasoning-config to use thinking_token_budget.",
        "thinking_token_budget");
  }
  // Every parser ctxpar has reads <think> ... </think>, vLLM's markers for them.
  return engine::SamplingParams::ThinkingBudget{*r.thinking_token_budget,
                                                tokenizer_.encode("<think>", false),
                                                tokenizer_.encode("</think>", false)};
}

int64_t OpenAiServer::Handlers::cache_block_tokens() const {
  const engine::SchedulerConfig& s = engine_.config().scheduler;
  return s.enable_prefix_caching ? s.layout.tokens_per_virtual_block() : 0;
}

std::unique_ptr<GenerationPlan> OpenAiServer::Handlers::new_plan(Endpoint endpoint, std::string id,
                                                                 const SamplingRequest& r) const {
  auto plan = std::make_unique<GenerationPlan>();
  plan->endpoint = endpoint;
  plan->id = std::move(id);
  plan->created = unix_now();
  plan->model = options_.served_model_names.at(0);
  plan->prompt_tokens_details = options_.enable_prompt_tokens_details;
  plan->cache_block_tokens = cache_block_tokens();
  plan->num_top_logprobs = r.params.logprobs.value_or(-1);
  plan->logprobs_as_token_ids =
      r.return_tokens_as_token_ids.value_or(options_.return_tokens_as_token_ids);
  plan->system_fingerprint = options_.system_fingerprint;
  plan->per_request_metrics = options_.enable_per_request_metrics;
  return plan;
}

void OpenAiServer::Handlers::check_serving() const {
  if (state_.stopping) throw unavailable("The server is shutting down");
  switch (engine_.state()) {
    case engine::OnlineEngine::State::kLoading:
      throw unavailable("Loading model");
    case engine::OnlineEngine::State::kRunning:
      return;
    case engine::OnlineEngine::State::kStopped:
      throw unavailable("The engine has stopped");
    case engine::OnlineEngine::State::kFailed:
      throw unavailable("The engine failed: " + engine_.failure());
  }
}

void OpenAiServer::Handlers::check_model(const std::optional<std::string>& model) const {
  const std::vector<std::string>& names = options_.served_model_names;
  if (model && !model->empty() && std::find(names.begin(), names.end(), *model) == names.end()) {
    throw model_not_found(*model);
  }
}

std::vector<int32_t> OpenAiServer::Handlers::checked_ids(std::vector<int32_t> ids) const {
  const int64_t vocab = engine_.config().model.vocab_size;
  for (const int32_t id : ids) {
    if (id >= vocab)
      throw bad_request(fmt::format("Token id {} is out of vocabulary", id), "prompt");
  }
  return ids;
}

std::vector<int32_t> OpenAiServer::Handlers::prompt_tokens(const Prompt& prompt,
                                                           bool add_special_tokens) const {
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&prompt)) return checked_ids(*ids);
  return tokenizer_.encode(std::get<std::string>(prompt), add_special_tokens);
}

std::vector<int32_t> OpenAiServer::Handlers::chat_prompt_tokens(
    const ChatRequest& r, const nlohmann::ordered_json& ordered, std::string* rendered) const {
  if (r.passes_chat_template && !options_.trust_request_chat_template) {
    throw bad_request(
        "Chat template is passed with request, but --trust-request-chat-template is not set. "
        "Refused request with untrusted chat template.");
  }
  std::optional<chat_template::ChatTemplate> own_template;
  if (r.chat_template) {
    try {
      own_template = chat_template::ChatTemplate::parse(*r.chat_template, "chat_template");
    } catch (const InputError& e) {
      throw bad_request(e.what(), "chat_template");
    }
  }
  const chat_template::ChatTemplate* request_template = own_template ? &*own_template : nullptr;
  // --exclude-tools-when-tool-choice-none: the template sees no tools when the request says none.
  const bool shows_tools = !r.tools.is_null() && !(options_.exclude_tools_when_tool_choice_none &&
                                                   r.tool_choice == "none");
  // --chat-template-content-format: "auto" asks the template this request renders with.
  const bool has_tools = shows_tools && r.tools.is_array() && !r.tools.empty();
  ChatContentFormat format = options_.chat_content_format;
  if (format == ChatContentFormat::kAuto) {
    format = chat_.loops_over_message_content(has_tools, request_template)
                 ? ChatContentFormat::kOpenAi
                 : ChatContentFormat::kString;
  }
  chat_template::ChatRequest request;
  for (size_t i = 0; i < r.messages.size(); ++i) {
    request.messages.push_back(
        template_message(r.messages[i], ordered.at("messages").at(i), i, format));
  }
  if (shows_tools) request.tools = template_tools(ordered.at("tools"));
  if (!r.chat_template_kwargs.is_null()) {
    request.chat_template_kwargs = nlohmann::ordered_json::parse(r.chat_template_kwargs.dump());
  }
  request.add_generation_prompt = r.add_generation_prompt;
  request.continue_final_message = r.continue_final_message;
  std::string prompt;
  try {
    prompt = chat_.render(std::move(request), request_template);
  } catch (const InputError& e) {
    throw bad_request(e.what());  // vLLM answers template errors with 400
  }
  if (rendered != nullptr) *rendered = prompt;
  return tokenizer_.encode(prompt,
                           r.add_special_tokens.value_or(chat_.tokenize_with_special_tokens()));
}

std::shared_ptr<const structured::TokenVocabulary> OpenAiServer::Handlers::token_vocabulary()
    const {
  std::call_once(vocabulary_once_, [&] {
    std::vector<std::optional<std::string>> bytes;
    for (int32_t id = 0; id < tokenizer_.vocab_size(); ++id) {
      bytes.push_back(tokenizer_.token_bytes(id));
    }
    vocabulary_ = std::make_shared<structured::TokenVocabulary>(std::move(bytes));
  });
  return vocabulary_;
}

void OpenAiServer::Handlers::constrain(const std::string& body, bool chat,
                                       GenerationPlan& plan) const {
  // Parsed again keeping its key order: a schema's property order is the output's.
  const OutputConstraint c = parse_output_constraint(nlohmann::ordered_json::parse(body), chat);
  plan.forced_tools = c.tools;
  plan.forced_tool_name = c.tool_name;
  if (!c.automaton) return;
  // A thinking model reasons first, unconstrained; the grammar starts after its </think>.
  std::vector<int32_t> after;
  if (chat && plan.reasoning_parser != ReasoningParser::kNone) {
    constexpr size_t kTailTokens = 32;  // the prompt's end decides (reasoning_parser.h)
    const std::vector<int32_t>& prompt = plan.prompts[0];
    const size_t n = std::min(prompt.size(), kTailTokens);
    const ReasoningSplit split(
        plan.reasoning_parser, plan.thinking,
        tokenizer_.decode(std::span<const int32_t>(prompt).subspan(prompt.size() - n), false));
    if (split.reasoning_first()) after = tokenizer_.encode("</think>", false);
  }
  const auto vocabulary = token_vocabulary();
  for (ChoiceRequest& choice : plan.choices) {
    choice.params.structured_output = c.automaton;
    choice.params.token_vocabulary = vocabulary;
    choice.params.structured_output_after = after;
  }
}

namespace {

// Fills the choices of `plan` (prompts already set): n per prompt, each with its max_tokens and,
// for n > 1, seed + k (vLLM's child requests).
void add_choices(GenerationPlan& plan, const SamplingRequest& r, const ServerOptions& options,
                 int64_t max_model_len, const char* max_tokens_param) {
  for (size_t p = 0; p < plan.prompts.size(); ++p) {
    const auto len = static_cast<int64_t>(plan.prompts[p].size());
    if (len == 0) throw bad_request("The prompt is empty after tokenization", "prompt");
    plan.prompt_tokens += len;
    engine::SamplingParams params = r.params;
    params.eos_token_ids = options.eos_token_ids;
    params.max_tokens = resolve_max_tokens(r.max_tokens, len, max_model_len, max_tokens_param);
    // generation_config's max_new_tokens is a server-wide cap: vLLM's get_max_tokens takes the
    // least of it, the request's and what the context leaves.
    if (options.defaults.max_tokens)
      params.max_tokens = std::min(params.max_tokens, *options.defaults.max_tokens);
    if (const auto problem = params.problem()) throw bad_request(*problem, "max_tokens");
    for (int32_t k = 0; k < r.n; ++k) {
      ChoiceRequest c{.prompt_index = p, .prompt_token_ids = plan.prompts[p], .params = params};
      if (r.params.seed) c.params.seed = *r.params.seed + static_cast<uint64_t>(k);
      plan.choices.push_back(std::move(c));
    }
  }
}

// Resolves -1 logprobs counts to the whole vocabulary and holds them to --max-logprobs, with
// vLLM's message.
void resolve_logprobs_counts(engine::SamplingParams& params,
                             const engine::ResolvedEngineConfig& config,
                             const char* logprobs_param) {
  const int64_t max_allowed = config.max_logprobs();
  const auto resolve = [&](std::optional<int32_t>& n, const char* kind, const char* param) {
    if (!n) return;
    if (*n == -1) n = static_cast<int32_t>(config.model.vocab_size);
    if (*n > max_allowed) {
      throw bad_request(fmt::format("Requested {} logprobs of {}, which is greater than max "
                                    "allowed: {}",
                                    kind, *n, max_allowed),
                        param);
    }
  };
  resolve(params.logprobs, "sample", logprobs_param);
  resolve(params.prompt_logprobs, "prompt", "prompt_logprobs");
}

}  // namespace

void OpenAiServer::Handlers::completions(const httplib::Request& req, httplib::Response& res) {
  const auto arrival = Clock::now();
  check_serving();
  run_completion(req, parse_body(req), arrival, res);
}

void OpenAiServer::Handlers::run_completion(const httplib::Request& req, const json& body,
                                            Clock::time_point arrival, httplib::Response& res) {
  CompletionRequest r = parse_completion_request(body, options_.defaults);
  check_model(r.model);
  force_usage(r);
  // vLLM's echo: logprobs cover the prompt too, and max_tokens 0 returns the prompt alone
  // (one token is generated and dropped).
  if (r.echo && !r.params.prompt_logprobs) r.params.prompt_logprobs = r.params.logprobs;
  const bool echo_only = r.echo && r.max_tokens == 0;
  if (echo_only) r.max_tokens = 1;
  resolve_logprobs_counts(r.params, engine_.config(), "logprobs");
  r.params.bad_words_token_ids = bad_words_token_ids(r.bad_words, tokenizer_);
  r.params.thinking_budget = thinking_budget(r);
  auto plan = new_plan(Endpoint::kCompletion, "cmpl-" + base_request_id(req, body), r);
  plan->echo_only = echo_only;
  const int64_t max_model_len = engine_.config().scheduler.max_model_len;
  for (const Prompt& p : r.prompts) {
    std::vector<int32_t> ids = prompt_tokens(p, r.add_special_tokens.value_or(true));
    const size_t given = ids.size();
    truncate_prompt(ids, r.truncate_prompt_tokens,
                    r.truncation_side.value_or(options_.truncation_side), max_model_len);
    // Echo the prompt as given, or what truncation left of it.
    plan->echo.push_back(std::holds_alternative<std::string>(p) && ids.size() == given
                             ? std::get<std::string>(p)
                             : tokenizer_.decode(ids, false));
    plan->prompts.push_back(std::move(ids));
  }
  add_choices(*plan, r, options_, engine_.config().scheduler.max_model_len, "max_tokens");
  constrain(req.body, false, *plan);
  run_generation(engine_, metrics_, tokenizer_, options_, state_, std::move(plan), r,
                 r.skip_special_tokens, arrival, res);
}

void OpenAiServer::Handlers::chat(const httplib::Request& req, httplib::Response& res) {
  const auto arrival = Clock::now();
  check_serving();
  const json body = parse_body(req);
  run_chat(body, req.body, Endpoint::kChat, "chatcmpl-" + base_request_id(req, body), nullptr,
           arrival, res);
}

void OpenAiServer::Handlers::force_usage(SamplingRequest& r) const {
  if (!options_.force_include_usage) return;
  r.include_usage = true;
  r.continuous_usage_stats = true;
}

void OpenAiServer::Handlers::load(httplib::Response& res) const {
  respond_json(res, {{"server_load", state_.server_load.load()}});
}

void OpenAiServer::Handlers::invocations(const httplib::Request& req, httplib::Response& res) {
  // vLLM validates the body as each request type in turn and runs the first that fits; a body
  // with `messages` that the chat parser refuses gets that parser's 400 here, which names the
  // field, where vLLM's falls through to the message below.
  const auto arrival = Clock::now();
  check_serving();
  const json body = parse_body(req);
  if (body.is_object() && body.contains("messages")) {
    return run_chat(body, req.body, Endpoint::kChat, "chatcmpl-" + base_request_id(req, body),
                    nullptr, arrival, res);
  }
  if (body.is_object() && body.contains("prompt")) return run_completion(req, body, arrival, res);
  throw bad_request(
      "Cannot find suitable handler for request. Expected one of: ['ChatCompletionRequest', "
      "'CompletionRequest']");
}

void OpenAiServer::Handlers::responses(const httplib::Request& req, httplib::Response& res) {
  const auto arrival = Clock::now();
  check_serving();
  auto request =
      std::make_shared<const ResponsesRequest>(parse_responses_request(parse_ordered_body(req)));
  const std::string chat_body = request->chat.dump();
  run_chat(json::parse(chat_body), chat_body, Endpoint::kResponses, "resp_" + random_hex(32),
           std::move(request), arrival, res);
}

void OpenAiServer::Handlers::messages(const httplib::Request& req, httplib::Response& res) {
  const auto arrival = Clock::now();
  check_serving();
  const std::string chat_body =
      anthropic_chat_request(parse_ordered_body(req), false, anthropic_).dump();
  // vLLM runs it as a chat completion, whose id the message carries.
  run_chat(json::parse(chat_body), chat_body, Endpoint::kMessages,
           "chatcmpl-" + base_request_id(req, json()), nullptr, arrival, res);
}

void OpenAiServer::Handlers::count_tokens(const httplib::Request& req, httplib::Response& res) {
  check_serving();
  const nlohmann::ordered_json ordered =
      anthropic_chat_request(parse_ordered_body(req), true, anthropic_);
  const ChatRequest r = parse_chat_request(json::parse(ordered.dump()), options_.defaults);
  check_model(r.model);
  // Counted whatever the context length, as vLLM's count_tokens counts.
  const size_t n = chat_prompt_tokens(r, ordered).size();
  respond_json(res, {{"input_tokens", n}, {"context_management", {{"original_input_tokens", n}}}});
}

void OpenAiServer::Handlers::stored_response(const std::string& id) const {
  throw ApiError(404, "invalid_request_error", fmt::format("Response with id '{}' not found.", id),
                 "response_id");
}

void OpenAiServer::Handlers::run_chat(const json& body, const std::string& raw, Endpoint endpoint,
                                      std::string id,
                                      std::shared_ptr<const ResponsesRequest> responses,
                                      Clock::time_point arrival, httplib::Response& res) {
  ChatRequest r = parse_chat_request(body, options_.defaults);
  check_model(r.model);
  if (endpoint == Endpoint::kChat) force_usage(r);
  // vLLM's chat echo: the last message's content starts the reply when it has the reply's
  // role (continue_final_message), and top_logprobs score the prompt.
  if (r.echo && !r.params.prompt_logprobs && r.logprobs) {
    r.params.prompt_logprobs = r.params.logprobs;
  }
  resolve_logprobs_counts(r.params, engine_.config(), "top_logprobs");
  r.params.bad_words_token_ids = bad_words_token_ids(r.bad_words, tokenizer_);
  r.params.thinking_budget = thinking_budget(r);
  auto plan = new_plan(endpoint, std::move(id), r);
  plan->reasoning_parser = options_.reasoning_parser;
  plan->thinking = thinking_requested(options_.reasoning_parser, r.chat_template_kwargs);
  // Responses without a tool call parser leave calls in the text (vLLM's): no 400 there.
  if (r.tool_choice == "auto" && options_.tool_call_parser == ToolCallParser::kNone && !responses) {
    throw bad_request(
        "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
        "tool_choice");
  }
  if (r.tool_choice == "auto" && r.tools.is_array() && !r.tools.empty()) {
    plan->tool_call_parser = options_.tool_call_parser;
    plan->tools = r.tools;
  }
  plan->parallel_tool_calls = r.parallel_tool_calls;
  // vLLM's get_chat_request_role: --response-role after a generation prompt, else the role of
  // the message the output continues.
  const nlohmann::json& last = r.messages.back();
  plan->response_role =
      r.add_generation_prompt ? options_.response_role : last.value("role", std::string());
  if (r.echo && last.value("role", "") == plan->response_role) {
    plan->echo.push_back(message_text(last, r.messages.size() - 1));
  }
  std::string prompt_text;
  plan->prompts.push_back(chat_prompt_tokens(r, nlohmann::ordered_json::parse(raw), &prompt_text));
  if (r.return_prompt_text) plan->prompt_text = std::move(prompt_text);
  truncate_prompt(plan->prompts.back(), r.truncate_prompt_tokens,
                  r.truncation_side.value_or(options_.truncation_side),
                  engine_.config().scheduler.max_model_len);
  add_choices(*plan, r, options_, engine_.config().scheduler.max_model_len,
              responses                         ? "max_output_tokens"
              : endpoint == Endpoint::kMessages ? "max_tokens"
                                                : "max_completion_tokens");
  constrain(raw, true, *plan);
  plan->responses = std::move(responses);
  // As vLLM's tool call parsers that ask for it: their tags may be special tokens.
  const bool skip_special =
      r.skip_special_tokens && !tool_call_parser_keeps_special_tokens(plan->tool_call_parser);
  run_generation(engine_, metrics_, tokenizer_, options_, state_, std::move(plan), r, skip_special,
                 arrival, res);
}

void OpenAiServer::Handlers::tokenize(const httplib::Request& req, httplib::Response& res) {
  check_serving();
  const json body = parse_body(req);
  if (!body.is_object()) throw bad_request("The request body must be a JSON object");
  if (body.contains("model") && body["model"].is_string()) {
    check_model(body["model"].get<std::string>());
  }
  std::vector<int32_t> ids;
  if (body.contains("messages")) {
    json chat = body;
    chat.erase("model");
    const ChatRequest r = parse_chat_request(chat, options_.defaults);
    ids = chat_prompt_tokens(r, parse_ordered_body(req));
  } else {
    const auto it = body.find("prompt");
    if (it == body.end() || !it->is_string()) {
      throw bad_request("prompt: Input should be a valid string", "prompt");
    }
    const auto add = body.find("add_special_tokens");
    if (add != body.end() && !add->is_boolean()) {
      throw bad_request("add_special_tokens: Input should be a valid boolean",
                        "add_special_tokens");
    }
    ids = tokenizer_.encode(it->get<std::string>(), add == body.end() || add->get<bool>());
  }
  json out = {{"count", ids.size()},
              {"max_model_len", engine_.config().scheduler.max_model_len},
              {"tokens", ids},
              {"token_strs", nullptr}};
  const auto strs = body.find("return_token_strs");
  if (strs != body.end() && strs->is_boolean() && strs->get<bool>()) {
    json list = json::array();
    for (const int32_t id : ids)
      list.push_back(tokenizer::utf8::repair(tokenizer_.id_to_token(id).value_or("")));
    out["token_strs"] = list;
  }
  respond_json(res, out);
}

void OpenAiServer::Handlers::detokenize(const httplib::Request& req, httplib::Response& res) {
  check_serving();
  const json body = parse_body(req);
  if (!body.is_object() || !body.contains("tokens") || !body["tokens"].is_array()) {
    throw bad_request("tokens: Input should be a valid list", "tokens");
  }
  std::vector<int32_t> ids;
  for (const json& t : body["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() >= engine_.config().model.vocab_size) {
      throw bad_request(fmt::format("tokens: {} is not a token id of this model", t.dump()),
                        "tokens");
    }
    ids.push_back(t.get<int32_t>());
  }
  respond_json(res, {{"prompt", tokenizer_.decode(ids, true)}});
}

void OpenAiServer::Handlers::models(httplib::Response& res) const {
  const json permission = {{"id", "modelperm-" + random_hex(32)},
                           {"object", "model_permission"},
                           {"created", created_},
                           {"allow_create_engine", false},
                           {"allow_sampling", true},
                           {"allow_logprobs", true},
                           {"allow_search_indices", false},
                           {"allow_view", true},
                           {"allow_fine_tuning", false},
                           {"organization", "*"},
                           {"group", nullptr},
                           {"is_blocking", false}};
  json cards = json::array();
  for (const std::string& name : options_.served_model_names) {
    cards.push_back({{"id", name},
                     {"object", "model"},
                     {"created", created_},
                     {"owned_by", "vllm"},
                     {"root", options_.model_root},
                     {"parent", nullptr},
                     {"max_model_len", engine_.config().scheduler.max_model_len},
                     {"permission", json::array({permission})}});
  }
  respond_json(res, {{"object", "list"}, {"data", cards}});
}

void OpenAiServer::Handlers::health(httplib::Response& res) const {
  // 200 with an empty body, or 503 while loading, stopping or once the engine failed.
  check_serving();
  res.status = 200;
}

void OpenAiServer::Handlers::metrics(httplib::Response& res) const {
  res.set_content(metrics_.render(engine_.snapshot(), engine_.stats(), engine_.config()),
                  "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace ctxpar::server
