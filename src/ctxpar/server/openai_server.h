// OpenAiServer: vLLM's OpenAI-compatible HTTP surface over the online engine (cpp-httplib):
//   POST /v1/completions, /v1/chat/completions, /v1/responses   (JSON, or Server-Sent Events)
//   GET  /v1/responses/{id}, POST /v1/responses/{id}/cancel   (404: nothing is stored)
//   GET  /v1/models, /health, /ping, /version, /metrics
//   POST /tokenize, /detokenize
// HTTP worker threads parse and check the JSON, tokenize, render the chat prompt, detokenize
// and write responses; the engine thread only schedules and runs. Errors are vLLM-shaped
// (api_error.h): 400 invalid input, 401 without the API key (paths under /v1), 404 unknown
// model or route, 413 body over the limit, 415 non-JSON body, 503 while loading or once the
// engine failed, 500 when a generation fails. A client that disconnects from a stream aborts
// its requests, which frees their KV blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/engine/chat_prompt.h"
#include "ctxpar/engine/online_engine.h"
#include "ctxpar/server/chat_content_format.h"
#include "ctxpar/server/cors.h"
#include "ctxpar/server/metrics.h"
#include "ctxpar/server/openai_protocol.h"
#include "ctxpar/server/reasoning_parser.h"
#include "ctxpar/server/tls.h"
#include "ctxpar/server/tool_call_parser.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace httplib {
class Server;
}

namespace ctxpar::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (bind() returns it)
  // The model's ids (vLLM's --served-model-name A B ...): requests may name any, /v1/models
  // lists them all, and responses and metrics carry the first.
  std::vector<std::string> served_model_names;
  std::string model_root;  // /v1/models "root": where the model comes from
  // --api-key: a request under /v1, /v2, /inference or /cohere must carry one of these as
  // `Authorization: Bearer KEY` (vLLM's guarded prefixes); empty: no authentication.
  std::vector<std::string> api_keys;
  size_t max_body_bytes = size_t{32} << 20;
  // HTTP worker threads; 0: 2 x max_num_seqs + 16. Each open stream holds one, so this must
  // exceed the streams served at once (running and waiting) plus the probes beside them.
  int worker_threads = 0;
  GenerationDefaults defaults;
  // The ids that end generation (the tokenizer's EOS and generation_config.json's); empty: the
  // engine's, from config.json.
  std::vector<int32_t> eos_token_ids;
  // --chat-template-content-format: how message content reaches the chat template.
  ChatContentFormat chat_content_format = ChatContentFormat::kAuto;
  // --reasoning-parser: chat messages split into reasoning and content.
  ReasoningParser reasoning_parser = ReasoningParser::kNone;
  // --enable-auto-tool-choice with --tool-call-parser: tool calls parsed out of chat outputs
  // (tool_choice "auto"); kNone: outputs stay text.
  ToolCallParser tool_call_parser = ToolCallParser::kNone;
  // While nothing arrives for this long, a stream sends vLLM's SSE comment (": keep-alive"),
  // which clients skip and proxies count as traffic; a write that fails then aborts a request
  // of a client that left. --sse-keep-alive-interval sets it in seconds.
  std::chrono::milliseconds keepalive{2000};
  // responses' system_fingerprint (system_fingerprint.h); nullopt: null.
  std::optional<std::string> system_fingerprint;
  // --enable-per-request-metrics: responses of one choice carry vLLM's timing metrics.
  bool enable_per_request_metrics = false;
  // --trust-request-chat-template: requests may bring their own chat_template.
  bool trust_request_chat_template = false;
  // --response-role: the role of a chat reply's message after a generation prompt.
  std::string response_role = "assistant";
  // --return-tokens-as-token-ids: logprobs name tokens "token_id:<id>" unless a request's
  // return_tokens_as_token_ids says otherwise.
  bool return_tokens_as_token_ids = false;
  // --enable-prompt-tokens-details: usage says how many prompt tokens the prefix cache served.
  bool enable_prompt_tokens_details = false;
  // --exclude-tools-when-tool-choice-none: a request with tool_choice "none" renders its chat
  // prompt without its tools.
  bool exclude_tools_when_tool_choice_none = false;
  // --enable-force-include-usage: every stream carries usage, as stream_options.include_usage
  // and continuous_usage_stats would ask.
  bool force_include_usage = false;
  // --enable-request-id-headers: every response carries X-Request-Id (the request's, or a new
  // one).
  bool request_id_headers = false;
  // --enable-server-load-tracking: GET /load counts the generations being answered.
  bool server_load_tracking = false;
  // --allowed-origins, --allowed-methods, --allowed-headers, --allow-credentials (cors.h).
  CorsOptions cors;
  // --ssl-certfile and the other --ssl-* flags (tls.h); none: plain HTTP.
  TlsOptions tls;
  // --anthropic-disabled-thinking-effort: the reasoning_effort /v1/messages sends for thinking
  // "disabled" or "between_tools"; "auto" asks the chat template (anthropic_request.h).
  std::string anthropic_disabled_thinking_effort = "auto";
  // Which end truncate_prompt_tokens keeps when a request does not say: the tokenizer's
  // truncation_side ("right" keeps the first tokens, "left" the last).
  std::string truncation_side = "right";
};

class OpenAiServer {
 public:
  // `engine`, `tokenizer` and `chat` outlive the server. The engine may still be loading
  // (requests then get 503). Text the server decodes is valid UTF-8 (ValidTextTokenizer).
  OpenAiServer(engine::OnlineEngine& engine, const tokenizer::Tokenizer& tokenizer,
               const engine::ChatPrompt& chat, ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds host:port and returns the port. Throws ctxpar::Error when it cannot.
  int bind();
  // Serves until stop(); call after bind(), on one thread.
  void serve();
  // Any thread: new requests get 503, in-flight generations are aborted (streams end with
  // finish_reason "abort"), and serve() returns once their responses are written. Safe to call
  // more than once, and before serve() starts.
  void stop();

  // What the handlers and stop() share.
  struct State {
    std::atomic<bool> stopping{false};
    std::atomic<int> open_streams{0};  // streaming responses not yet written to the end
    std::atomic<int> server_load{0};   // generations being answered (--enable-server-load-tracking)
  };

 private:
  class Handlers;
  engine::OnlineEngine& engine_;
  const ServerOptions options_;
  ServerMetrics metrics_;
  State state_;
  std::unique_ptr<tokenizer::Tokenizer> text_tokenizer_;  // `tokenizer`, decoding valid UTF-8
  std::unique_ptr<Handlers> handlers_;
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace ctxpar::server
