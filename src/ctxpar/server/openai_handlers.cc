#include "ctxpar/server/openai_handlers.h"

#include <httplib.h>

#include <fmt/format.h>
#include <chrono>
#include <memory>
#include <random>

#include "ctxpar/core/error.h"
#include "ctxpar/server/api_error.h"
#include "ctxpar/server/chat_format.h"
#include "ctxpar/server/generation.h"
#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/utf8.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;
using Clock = engine::Clock;

enum class Endpoint { kCompletion, kChat };

std::string random_hex(size_t n) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string out;
  while (out.size() < n) out += fmt::format("{:016x}", rng());
  out.resize(n);
  return out;
}

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

// What one HTTP request asks of the engine, after tokenization and the length checks.
struct GenerationPlan {
  Endpoint endpoint = Endpoint::kCompletion;
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> echo;       // per prompt: the text to echo first (completions, echo)
  std::vector<ChoiceRequest> choices;  // prompt-major: choice k of prompt p is p·n + k
  int32_t num_top_logprobs = -1;       // -1: no logprobs
  int64_t prompt_tokens = 0;
};

// Everything a choice produced so far, for whole responses and usage.
struct ChoiceState {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<engine::SampledLogprobs> logprobs;
  std::string finish_reason;
  json stop_reason;
  bool sent_first = false;  // streams: the first chunk (role, prompt token ids) went out
};

json completion_choice_logprobs(const tokenizer::Tokenizer& tok, const GenerationPlan& plan,
                                const std::vector<int32_t>& tokens,
                                const std::vector<engine::SampledLogprobs>& logprobs,
                                int64_t text_offset) {
  if (plan.num_top_logprobs < 0) return nullptr;
  if (plan.endpoint == Endpoint::kChat) {
    return chat_logprobs(tok, tokens, logprobs, plan.num_top_logprobs);
  }
  return completion_logprobs(tok, tokens, logprobs, plan.num_top_logprobs, text_offset);
}

class GenerationResponder {
 public:
  GenerationResponder(const GenerationPlan& plan, const SamplingRequest& request,
                      const tokenizer::Tokenizer& tokenizer)
      : plan_(plan), request_(request), tokenizer_(tokenizer), states_(plan.choices.size()) {}

  // Folds deltas into the choices; returns the stream events they make (when streaming).
  std::string add(const std::vector<ChoiceDelta>& deltas, bool streaming);
  std::string first_events();        // chat: the role chunk of every choice
  std::string final_events() const;  // usage chunk (include_usage) and [DONE]
  json whole_response() const;
  const std::optional<std::string>& error() const { return error_; }
  int64_t completion_tokens() const;

 private:
  json chunk_base() const {
    return {
        {"id", plan_.id},
        {"object", plan_.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
        {"created", plan_.created},
        {"model", plan_.model}};
  }
  json stream_choice(size_t i, const ChoiceDelta& d, int64_t text_offset);

  const GenerationPlan& plan_;
  const SamplingRequest& request_;
  const tokenizer::Tokenizer& tokenizer_;
  std::vector<ChoiceState> states_;
  std::optional<std::string> error_;
  bool sent_roles_ = false;
};

int64_t GenerationResponder::completion_tokens() const {
  int64_t n = 0;
  for (const ChoiceState& s : states_) n += static_cast<int64_t>(s.token_ids.size());
  return n;
}

std::string GenerationResponder::first_events() {
  if (sent_roles_ || plan_.endpoint != Endpoint::kChat) return {};
  sent_roles_ = true;
  std::string out;
  for (size_t i = 0; i < states_.size(); ++i) {
    json chunk = chunk_base();
    chunk["choices"] = json::array({{{"index", i},
                                     {"delta", {{"role", "assistant"}, {"content", ""}}},
                                     {"logprobs", nullptr},
                                     {"finish_reason", nullptr}}});
    if (request_.return_token_ids) {
      chunk["prompt_token_ids"] = plan_.prompts[plan_.choices[i].prompt_index];
    }
    out += sse_event(chunk);
  }
  return out;
}

json GenerationResponder::stream_choice(size_t i, const ChoiceDelta& d, int64_t text_offset) {
  ChoiceState& s = states_[i];
  const ChoiceRequest& c = plan_.choices[i];
  std::string text = d.text;
  if (!s.sent_first && request_.echo && plan_.endpoint == Endpoint::kCompletion) {
    text = plan_.echo[c.prompt_index] + text;
  }
  const json logprobs =
      completion_choice_logprobs(tokenizer_, plan_, d.token_ids, d.logprobs, text_offset);
  const json finish = d.finish_reason ? json(*d.finish_reason) : json(nullptr);
  const json token_ids = request_.return_token_ids ? json(d.token_ids) : json(nullptr);
  json choice;
  if (plan_.endpoint == Endpoint::kChat) {
    choice = {{"index", i},
              {"delta", {{"content", text}}},
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
    const auto offset = static_cast<int64_t>(utf8_length(s.text));
    s.text += d.text;
    s.token_ids.insert(s.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
    s.logprobs.insert(s.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
    if (d.finish_reason) {
      s.finish_reason = *d.finish_reason;
      s.stop_reason = d.stop_reason;
    }
    if (!streaming) continue;
    // vLLM skips a chunk with nothing in it before a choice's first token.
    if (d.text.empty() && d.token_ids.empty() && !d.finish_reason && !s.sent_first) continue;
    json chunk = chunk_base();
    chunk["choices"] = json::array({stream_choice(i, d, offset)});
    if (request_.continuous_usage_stats) {
      chunk["usage"] =
          usage_json(static_cast<int64_t>(plan_.prompts[plan_.choices[i].prompt_index].size()),
                     static_cast<int64_t>(s.token_ids.size()));
    }
    out += sse_event(chunk);
  }
  return out;
}

std::string GenerationResponder::final_events() const {
  std::string out;
  if (error_) {
    out += sse_event(internal_error(*error_).to_json());
  } else if (request_.include_usage) {
    json chunk = chunk_base();
    chunk["choices"] = json::array();
    chunk["usage"] = usage_json(plan_.prompt_tokens, completion_tokens());
    out += sse_event(chunk);
  }
  return out + kSseDone;
}

json GenerationResponder::whole_response() const {
  json choices = json::array();
  for (size_t i = 0; i < states_.size(); ++i) {
    const ChoiceState& s = states_[i];
    const ChoiceRequest& c = plan_.choices[i];
    const json logprobs = completion_choice_logprobs(tokenizer_, plan_, s.token_ids, s.logprobs, 0);
    const json token_ids = request_.return_token_ids ? json(s.token_ids) : json(nullptr);
    if (plan_.endpoint == Endpoint::kChat) {
      choices.push_back({{"index", i},
                         {"message", {{"role", "assistant"}, {"content", s.text}}},
                         {"logprobs", logprobs},
                         {"finish_reason", s.finish_reason},
                         {"stop_reason", s.stop_reason},
                         {"token_ids", token_ids}});
    } else {
      const std::string text = request_.echo ? plan_.echo[c.prompt_index] + s.text : s.text;
      choices.push_back(
          {{"index", i},
           {"text", text},
           {"logprobs", logprobs},
           {"finish_reason", s.finish_reason},
           {"stop_reason", s.stop_reason},
           {"prompt_logprobs", nullptr},
           {"prompt_token_ids",
            request_.return_token_ids ? json(plan_.prompts[c.prompt_index]) : json(nullptr)},
           {"token_ids", token_ids}});
    }
  }
  json usage = usage_json(plan_.prompt_tokens, completion_tokens());
  usage["prompt_tokens_details"] = nullptr;
  return {{"id", plan_.id},
          {"object", plan_.endpoint == Endpoint::kChat ? "chat.completion" : "text_completion"},
          {"created", plan_.created},
          {"model", plan_.model},
          {"choices", choices},
          {"usage", usage},
          {"system_fingerprint", nullptr},
          {"kv_transfer_params", nullptr}};
}

void respond_json(httplib::Response& res, const json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// Submits the plan and answers with the whole response, or streams it.
void run_generation(engine::OnlineEngine& engine, ServerMetrics& metrics,
                    const tokenizer::Tokenizer& tokenizer, const ServerOptions& options,
                    std::atomic<int>& open_streams, std::unique_ptr<GenerationPlan> plan,
                    const SamplingRequest& request, bool skip_special_tokens,
                    Clock::time_point arrival, httplib::Response& res) {
  auto generation =
      std::make_shared<Generation>(engine, metrics, tokenizer, plan->id, plan->choices,
                                   request.stop, skip_special_tokens, arrival);
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
    bool finished = false;
  };
  auto stream = std::make_shared<Stream>();
  stream->generation = generation;
  stream->plan = std::move(plan);
  stream->request = request;
  stream->responder =
      std::make_unique<GenerationResponder>(*stream->plan, stream->request, tokenizer);
  const auto keepalive = options.keepalive;
  // stop() waits for this to drop back: httplib cuts streams short once it is stopping.
  ++open_streams;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [stream, keepalive](size_t, httplib::DataSink& sink) {
        if (stream->finished) {
          sink.done();
          return true;
        }
        std::string out;
        const auto deadline = Clock::now() + keepalive;
        while (out.empty() && Clock::now() < deadline && !stream->generation->done()) {
          const auto deltas = stream->generation->next(std::chrono::milliseconds(200));
          if (!deltas.empty()) out = stream->responder->first_events();
          out += stream->responder->add(deltas, true);
        }
        if (stream->generation->done()) {
          out += stream->responder->final_events();
          stream->finished = true;
        } else if (out.empty()) {
          out = ": ping\n\n";  // nothing for a while: see whether the client is still there
        }
        if (!sink.write(out.data(), out.size())) {
          stream->generation->abort();  // the client left: free its requests
          return false;
        }
        if (stream->finished) sink.done();
        return true;
      },
      [stream, &open_streams](bool success) {
        if (!success) stream->generation->abort();
        --open_streams;
      });
}

}  // namespace

OpenAiServer::Handlers::Handlers(engine::OnlineEngine& engine,
                                 const tokenizer::Tokenizer& tokenizer,
                                 const ServerOptions& options, ServerMetrics& metrics, State& state)
    : engine_(engine),
      tokenizer_(tokenizer),
      options_(options),
      metrics_(metrics),
      state_(state),
      created_(unix_now()) {}

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
  if (model && !model->empty() && *model != options_.served_model_name) {
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

std::string OpenAiServer::Handlers::chat_prompt(const ChatRequest& r) const {
  return builtin_chat_prompt(r.messages, r.add_generation_prompt, r.continue_final_message);
}

namespace {

// Fills the choices of `plan` (prompts already set): n per prompt, each with its max_tokens and,
// for n > 1, seed + k (vLLM's child requests).
void add_choices(GenerationPlan& plan, const SamplingRequest& r, int64_t max_model_len,
                 const char* max_tokens_param) {
  for (size_t p = 0; p < plan.prompts.size(); ++p) {
    const auto len = static_cast<int64_t>(plan.prompts[p].size());
    if (len == 0) throw bad_request("The prompt is empty after tokenization", "prompt");
    plan.prompt_tokens += len;
    engine::SamplingParams params = r.params;
    params.max_tokens = resolve_max_tokens(r.max_tokens, len, max_model_len, max_tokens_param);
    if (const auto problem = params.problem()) throw bad_request(*problem, "max_tokens");
    for (int32_t k = 0; k < r.n; ++k) {
      ChoiceRequest c{.prompt_index = p, .prompt_token_ids = plan.prompts[p], .params = params};
      if (r.params.seed) c.params.seed = *r.params.seed + static_cast<uint64_t>(k);
      plan.choices.push_back(std::move(c));
    }
  }
}

}  // namespace

void OpenAiServer::Handlers::completions(const httplib::Request& req, httplib::Response& res) {
  const auto arrival = Clock::now();
  check_serving();
  const CompletionRequest r = parse_completion_request(parse_body(req), options_.defaults);
  check_model(r.model);
  if (r.echo && r.logprobs) {
    throw bad_request("echo with logprobs needs prompt logprobs, which ctxpar does not compute",
                      "echo");
  }
  auto plan = std::make_unique<GenerationPlan>();
  plan->endpoint = Endpoint::kCompletion;
  plan->id = "cmpl-" + random_hex(32);
  plan->created = unix_now();
  plan->model = options_.served_model_name;
  plan->num_top_logprobs = r.logprobs.value_or(-1);
  for (const Prompt& p : r.prompts) {
    plan->prompts.push_back(prompt_tokens(p, r.add_special_tokens.value_or(true)));
    plan->echo.push_back(std::holds_alternative<std::string>(p)
                             ? valid_utf8(std::get<std::string>(p))
                             : valid_utf8(tokenizer_.decode(plan->prompts.back(), false)));
  }
  add_choices(*plan, r, engine_.config().scheduler.max_model_len, "max_tokens");
  run_generation(engine_, metrics_, tokenizer_, options_, state_.open_streams, std::move(plan), r,
                 r.skip_special_tokens, arrival, res);
}

void OpenAiServer::Handlers::chat(const httplib::Request& req, httplib::Response& res) {
  const auto arrival = Clock::now();
  check_serving();
  const ChatRequest r = parse_chat_request(parse_body(req), options_.defaults);
  check_model(r.model);
  if (r.echo) throw bad_request("echo is not supported for chat completions by ctxpar", "echo");
  auto plan = std::make_unique<GenerationPlan>();
  plan->endpoint = Endpoint::kChat;
  plan->id = "chatcmpl-" + random_hex(32);
  plan->created = unix_now();
  plan->model = options_.served_model_name;
  plan->num_top_logprobs = r.logprobs ? r.top_logprobs.value_or(0) : -1;
  // In chat the template emits BOS, so special tokens are not added by default.
  plan->prompts.push_back(tokenizer_.encode(chat_prompt(r), r.add_special_tokens.value_or(false)));
  add_choices(*plan, r, engine_.config().scheduler.max_model_len, "max_completion_tokens");
  run_generation(engine_, metrics_, tokenizer_, options_, state_.open_streams, std::move(plan), r,
                 r.skip_special_tokens, arrival, res);
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
    ids = tokenizer_.encode(chat_prompt(r), r.add_special_tokens.value_or(false));
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
      list.push_back(valid_utf8(tokenizer_.id_to_token(id).value_or("")));
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
  respond_json(res, {{"prompt", valid_utf8(tokenizer_.decode(ids, true))}});
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
  const json card = {{"id", options_.served_model_name},
                     {"object", "model"},
                     {"created", created_},
                     {"owned_by", "vllm"},
                     {"root", options_.model_root},
                     {"parent", nullptr},
                     {"max_model_len", engine_.config().scheduler.max_model_len},
                     {"permission", json::array({permission})}};
  respond_json(res, {{"object", "list"}, {"data", json::array({card})}});
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
