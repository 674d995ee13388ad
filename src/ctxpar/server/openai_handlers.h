// The route handlers of OpenAiServer (private to the server layer). Each takes a parsed request
// and fills a response; they throw ApiError for what the client must hear, which the server
// turns into vLLM's error JSON.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ctxpar/engine/online_engine.h"
#include "ctxpar/engine/structured/token_vocabulary.h"
#include "ctxpar/server/anthropic_request.h"
#include "ctxpar/server/generation_responder.h"
#include "ctxpar/server/metrics.h"
#include "ctxpar/server/openai_server.h"
#include "ctxpar/server/responses_request.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ctxpar::server {

class OpenAiServer::Handlers {
 public:
  Handlers(engine::OnlineEngine& engine, const tokenizer::Tokenizer& tokenizer,
           const engine::ChatPrompt& chat, const ServerOptions& options, ServerMetrics& metrics,
           State& state);

  void completions(const httplib::Request& req, httplib::Response& res);
  void chat(const httplib::Request& req, httplib::Response& res);
  void responses(const httplib::Request& req, httplib::Response& res);
  // POST /invocations (SageMaker's route, which vLLM serves by default): the body runs as a chat
  // request when it has `messages`, else as a completion when it has `prompt`; else 400.
  void invocations(const httplib::Request& req, httplib::Response& res);
  // POST /v1/messages and /v1/messages/count_tokens (anthropic_request.h). Their errors take
  // Anthropic's shape (the server's anthropic routes write them).
  void messages(const httplib::Request& req, httplib::Response& res);
  void count_tokens(const httplib::Request& req, httplib::Response& res);
  // GET /v1/responses/{id} and its cancel: 404, as vLLM without a response store.
  [[noreturn]] void stored_response(const std::string& id) const;
  void tokenize(const httplib::Request& req, httplib::Response& res);
  void detokenize(const httplib::Request& req, httplib::Response& res);
  void models(httplib::Response& res) const;
  void health(httplib::Response& res) const;
  // GET /load: {"server_load": generation requests being answered} (0 without
  // --enable-server-load-tracking, as vLLM).
  void load(httplib::Response& res) const;
  void metrics(httplib::Response& res) const;

  // 503 unless the engine runs and the server is not stopping.
  void check_serving() const;

 private:
  // The request's thinking_token_budget with the reasoning parser's markers tokenized; 400
  // without --reasoning-parser, as vLLM.
  std::optional<engine::SamplingParams::ThinkingBudget> thinking_budget(
      const SamplingRequest& r) const;
  // Prompt tokens one prefix-cache block holds (B·N); 0 with prefix caching off.
  int64_t cache_block_tokens() const;
  // A plan with what every endpoint sets the same way: id, time, model, the server's usage,
  // logprob-name and fingerprint options, and r's logprobs.
  std::unique_ptr<GenerationPlan> new_plan(Endpoint endpoint, std::string id,
                                           const SamplingRequest& r) const;
  // 404 for a model name that is not the served one (none given: the served one).
  void check_model(const std::optional<std::string>& model) const;
  // Token ids of a prompt; 400 for ids outside the vocabulary.
  std::vector<int32_t> prompt_tokens(const Prompt& prompt, bool add_special_tokens) const;
  std::vector<int32_t> checked_ids(std::vector<int32_t> ids) const;
  // The chat template's prompt for `r`, tokenized as vLLM does (no special tokens unless the
  // request asks or the template writes no BOS); 400 for a template that refuses it. `ordered`:
  // the same request body in the client's key order, whose messages and tools the template sees
  // (chat_template_inputs.h). `rendered`, when given, receives the prompt text.
  std::vector<int32_t> chat_prompt_tokens(const ChatRequest& r,
                                          const nlohmann::ordered_json& ordered,
                                          std::string* rendered = nullptr) const;
  // Runs the completion request `body` (parsed from req's).
  void run_completion(const httplib::Request& req, const nlohmann::json& body,
                      engine::Clock::time_point arrival, httplib::Response& res);
  // Runs the chat request `body` (`raw`: its text, whose key order schemas keep) and answers
  // as `endpoint` (kChat, kMessages, or kResponses with the request it came from), with the
  // response id `id`.
  void run_chat(const nlohmann::json& body, const std::string& raw, Endpoint endpoint,
                std::string id, std::shared_ptr<const ResponsesRequest> responses,
                engine::Clock::time_point arrival, httplib::Response& res);
  // --enable-force-include-usage: a stream reports usage in every chunk and at its end.
  void force_usage(SamplingRequest& r) const;
  // Structured outputs (output_constraint.h) of the request `body`: the grammar on every choice
  // of `plan`, and on chat the forced tool choice.
  void constrain(const std::string& body, bool chat, GenerationPlan& plan) const;
  // The tokenizer's tokens as bytes, built on first use (structured outputs only).
  std::shared_ptr<const structured::TokenVocabulary> token_vocabulary() const;

  engine::OnlineEngine& engine_;
  const tokenizer::Tokenizer& tokenizer_;
  const engine::ChatPrompt& chat_;
  const ServerOptions& options_;
  ServerMetrics& metrics_;
  State& state_;
  const int64_t created_;  // unix time the server started, for /v1/models
  const AnthropicRendering anthropic_;
  mutable std::once_flag vocabulary_once_;
  mutable std::shared_ptr<const structured::TokenVocabulary> vocabulary_;
};

}  // namespace ctxpar::server
