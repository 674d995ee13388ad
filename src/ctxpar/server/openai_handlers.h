// The route handlers of OpenAiServer (private to the server layer). Each takes a parsed request
// and fills a response; they throw ApiError for what the client must hear, which the server
// turns into vLLM's error JSON.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ctxpar/engine/online_engine.h"
#include "ctxpar/server/metrics.h"
#include "ctxpar/server/openai_server.h"
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
  void tokenize(const httplib::Request& req, httplib::Response& res);
  void detokenize(const httplib::Request& req, httplib::Response& res);
  void models(httplib::Response& res) const;
  void health(httplib::Response& res) const;
  void metrics(httplib::Response& res) const;

  // 503 unless the engine runs and the server is not stopping.
  void check_serving() const;

 private:
  // 404 for a model name that is not the served one (none given: the served one).
  void check_model(const std::optional<std::string>& model) const;
  // Token ids of a prompt; 400 for ids outside the vocabulary.
  std::vector<int32_t> prompt_tokens(const Prompt& prompt, bool add_special_tokens) const;
  std::vector<int32_t> checked_ids(std::vector<int32_t> ids) const;
  // The chat template's prompt for `r`, tokenized as vLLM does (no special tokens unless the
  // request asks or the template writes no BOS); 400 for a template that refuses it.
  std::vector<int32_t> chat_prompt_tokens(const ChatRequest& r) const;

  engine::OnlineEngine& engine_;
  const tokenizer::Tokenizer& tokenizer_;
  const engine::ChatPrompt& chat_;
  const ServerOptions& options_;
  ServerMetrics& metrics_;
  State& state_;
  const int64_t created_;  // unix time the server started, for /v1/models
};

}  // namespace ctxpar::server
