// `ctxpar serve MODEL`: the OpenAI-compatible HTTP server over the online engine, with vLLM's
// flags (`vllm serve MODEL --host --port --served-model-name --api-key` plus the engine flags
// of generate). Rank 0 serves HTTP; under mpirun the other ranks run the worker loop.
// SIGINT / SIGTERM stop taking requests, abort the ones in flight (streams end with
// finish_reason "abort"), stop every rank and exit 0.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "commands.h"
#include "ctxpar/core/error.h"
#include "ctxpar/engine/chat_prompt.h"
#include "ctxpar/engine/online_engine.h"
#include "ctxpar/engine/tokenizer_loader.h"
#include "ctxpar/model/model_config.h"
#include "ctxpar/server/anthropic_request.h"
#include "ctxpar/server/openai_server.h"
#include "ctxpar/server/system_fingerprint.h"
#include "engine_flags.h"

namespace ctxpar::app {
namespace {

struct ServeOptions {
  EngineFlags engine;
  std::string model_tag;  // the positional MODEL
  server::ServerOptions server;
  std::string max_body = "32MiB";
  std::string chat_template;  // --chat-template: a file or the template text
  std::string chat_template_content_format = "auto";
  std::string tokenizer_mode = "auto";
  std::string reasoning_parser;
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;
  // Where requests' sampling defaults come from (vLLM's): "auto" the model's
  // generation_config.json, "vllm" none, else a directory holding one; then
  // --override-generation-config's JSON object on top.
  std::string generation_config = "auto";
  std::string override_generation_config;
  std::string default_chat_template_kwargs;  // a JSON object, or empty
  bool enable_ssl_refresh = false;           // refused: the certificate files are read once
  // CORS lists as JSON text (vLLM's json.loads); cors.h's defaults.
  std::string allowed_origins = "[]";
  std::string allowed_methods = R"(["*"])";
  std::string allowed_headers = R"(["*"])";
  // --sse-keep-alive-interval in seconds; 0: ServerOptions::keepalive's 2 s (ctxpar writes to
  // idle streams to notice clients that left, so it has no "off").
  int64_t sse_keep_alive_interval = 0;
  std::string fingerprint_mode = "full";  // system_fingerprint.h
  std::string reasoning_effort_map;       // a JSON object of strings, or empty
  std::optional<std::string> fingerprint_value;
};

// A flag whose value is a JSON object, as vLLM's json.loads reads it ("" gives {}). Throws
// InputError naming the flag for text that is not one; `example` shows one.
nlohmann::json json_object_flag(const char* flag, const std::string& text, const char* example) {
  if (text.empty()) return nlohmann::json::object();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    CTXPAR_INPUT_FAIL("{} '{}' is not JSON: {}", flag, text, e.what());
  }
  CTXPAR_CHECK_INPUT(j.is_object(), "{} '{}' is not a JSON object (e.g. '{}')", flag, text,
                     example);
  return j;
}

// --reasoning-effort-map: vLLM's dict[str, str].
std::map<std::string, std::string> reasoning_effort_map_flag(const std::string& text) {
  const nlohmann::json map =
      json_object_flag("--reasoning-effort-map", text, R"({"medium": "low", "xhigh": "max"})");
  std::map<std::string, std::string> out;
  for (const auto& [effort, as] : map.items()) {
    CTXPAR_CHECK_INPUT(as.is_string(),
                       "--reasoning-effort-map: the value of \"{}\" is {}, not a string", effort,
                       as.dump());
    out[effort] = as.get<std::string>();
  }
  return out;
}

// The sampling defaults --generation-config and --override-generation-config give, over the
// model's own (`model`, read with its tokenizer). Throws InputError naming a bad flag value.
tokenizer::GenerationDefaults sampling_defaults(const ServeOptions& o,
                                                const tokenizer::GenerationDefaults& model) {
  tokenizer::GenerationDefaults d;
  if (o.generation_config == "auto") {
    d = model;
  } else if (o.generation_config != "vllm") {
    CTXPAR_CHECK_INPUT(std::filesystem::is_directory(o.generation_config),
                       "--generation-config '{}' is neither auto, vllm, nor a directory holding "
                       "generation_config.json",
                       o.generation_config);
    d = tokenizer::read_generation_config(o.generation_config).defaults;
  }
  if (o.override_generation_config.empty()) return d;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(o.override_generation_config);
  } catch (const nlohmann::json::exception& e) {
    CTXPAR_INPUT_FAIL("--override-generation-config '{}' is not JSON: {}",
                      o.override_generation_config, e.what());
  }
  const tokenizer::GenerationDefaults over =
      tokenizer::parse_generation_config(j, "--override-generation-config").defaults;
  for (auto [dst, src] : {std::pair{&d.temperature, &over.temperature},
                          std::pair{&d.top_p, &over.top_p}, std::pair{&d.min_p, &over.min_p},
                          std::pair{&d.repetition_penalty, &over.repetition_penalty}}) {
    if (*src) *dst = *src;
  }
  if (over.top_k) d.top_k = over.top_k;
  if (over.max_new_tokens) d.max_new_tokens = over.max_new_tokens;
  return d;
}

// generation_config.json's sampling defaults, as requests fall back on them.
server::GenerationDefaults defaults_of(const tokenizer::GenerationDefaults& g) {
  server::GenerationDefaults d;
  const auto as_float = [](const std::optional<double>& v) {
    return v ? std::optional<float>(static_cast<float>(*v)) : std::nullopt;
  };
  d.temperature = as_float(g.temperature);
  d.top_p = as_float(g.top_p);
  d.min_p = as_float(g.min_p);
  d.repetition_penalty = as_float(g.repetition_penalty);
  if (g.top_k) d.top_k = static_cast<int32_t>(*g.top_k);
  d.max_tokens = g.max_new_tokens;
  return d;
}

// SIGINT and SIGTERM, whichever thread of the process they reach (MPI's threads included):
// the handler only writes the signal number to a pipe, which the stopper thread reads.
class StopSignals {
 public:
  StopSignals() {
    CTXPAR_CHECK(pipe(fds_) == 0, "cannot create the signal pipe: {}", std::strerror(errno));
    write_end() = fds_[1];
    struct sigaction action {};
    action.sa_handler = [](int sig) {
      const auto byte = static_cast<char>(sig);
      [[maybe_unused]] const ssize_t n = write(write_end(), &byte, 1);
    };
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    write_end() = -1;
    close(fds_[0]);
    close(fds_[1]);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal that arrived within `timeout`, or 0.
  int wait(std::chrono::milliseconds timeout) const {
    pollfd p{fds_[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return 0;
    char byte = 0;
    return read(fds_[0], &byte, 1) == 1 ? byte : 0;
  }

 private:
  static int& write_end() {
    static int fd = -1;
    return fd;
  }
  int fds_[2] = {-1, -1};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Waits for SIGINT or SIGTERM or for the engine to fail while loading, then stops the server
// until serve() has returned.
void stop_on_signal_or_load_failure(server::OpenAiServer& server, const StopSignals& signals,
                                    const std::atomic<bool>& load_failed,
                                    const std::atomic<bool>& served) {
  while (!served && !load_failed) {
    const int got = signals.wait(std::chrono::milliseconds(100));
    if (got != 0) {
      std::fprintf(stderr, "ctxpar serve: %s received, shutting down\n",
                   got == SIGINT ? "SIGINT" : "SIGTERM");
      break;
    }
  }
  // stop() before serve() has started listening would be lost: repeat until it returned.
  while (!served) {
    server.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void run(ServeOptions& o) {
  if (!o.model_tag.empty()) {
    CTXPAR_CHECK_INPUT(
        o.engine.config.model == engine::EngineConfig{}.model ||
            o.engine.config.model == o.model_tag,
        "the model is given twice ({} and --model {}); give it once, as the positional "
        "argument (vLLM's `serve MODEL`) or with --model",
        o.model_tag, o.engine.config.model);
    o.engine.config.model = o.model_tag;
  }
  engine::EngineConfig config;
  tokenizer::LoadedTokenizer tok;
  std::unique_ptr<engine::ChatPrompt> chat;
  validate_on_every_rank([&] {
    config = finish_engine_config(o.engine);
    o.server.max_body_bytes = static_cast<size_t>(engine::parse_memory_size(o.max_body));
    CTXPAR_CHECK_INPUT(!o.enable_ssl_refresh,
                       "--enable-ssl-refresh is not supported: ctxpar reads the certificate "
                       "files once, at start (restart it to load new ones)");
    server::check_tls(o.server.tls);
    // The bound keeps the interval's deadline (now + interval, in steady_clock ticks) from
    // overflowing; a day is past any proxy's read timeout.
    CTXPAR_CHECK_INPUT(o.sse_keep_alive_interval >= 0 && o.sse_keep_alive_interval <= 86400,
                       "--sse-keep-alive-interval {} must be a non-negative integer of at most "
                       "86400 (seconds; 0: ctxpar's default, every 2 s)",
                       o.sse_keep_alive_interval);
    if (o.sse_keep_alive_interval > 0) {
      o.server.keepalive = std::chrono::seconds(o.sse_keep_alive_interval);
    }
    // vLLM refuses the pair (its metrics come from the stats logger); ctxpar's would be served,
    // but a line that vLLM stops should not start here as if it ran.
    CTXPAR_CHECK_INPUT(!o.server.enable_per_request_metrics ||
                           !ignored_flag_given(o.engine, "--disable-log-stats"),
                       "--enable-per-request-metrics needs the engine's statistics, which "
                       "--disable-log-stats turns off (as vLLM); give one of them");
    o.server.system_fingerprint =
        server::system_fingerprint(o.fingerprint_mode, o.fingerprint_value, config);
    o.server.cors.origins = server::parse_cors_list("--allowed-origins", o.allowed_origins);
    o.server.cors.methods = server::parse_cors_list("--allowed-methods", o.allowed_methods);
    o.server.cors.headers = server::parse_cors_list("--allowed-headers", o.allowed_headers);
    const engine::TokenizerMode mode = engine::parse_tokenizer_mode(o.tokenizer_mode);
    o.server.chat_content_format =
        server::parse_chat_content_format(o.chat_template_content_format);
    o.server.reasoning_parser = server::parse_reasoning_parser(o.reasoning_parser);
    const server::ToolCallParser tools = server::parse_tool_call_parser(o.tool_call_parser);
    CTXPAR_CHECK_INPUT(!o.enable_auto_tool_choice || tools != server::ToolCallParser::kNone,
                       "--enable-auto-tool-choice needs --tool-call-parser ({})",
                       server::tool_call_parser_names());
    if (o.enable_auto_tool_choice) o.server.tool_call_parser = tools;
    const engine::ResolvedEngineConfig resolved = engine::resolve_engine_config(config);
    // Every rank reads the tokenizer files (small), so a bad one stops all ranks alike.
    tok = engine::load_tokenizer(config.model, config.tokenizer);
    chat = std::make_unique<engine::ChatPrompt>(tok, resolved.model, o.chat_template, mode);
  });
  o.server.defaults = defaults_of(sampling_defaults(o, tok.generation));
  o.server.defaults.reasoning_effort_map = reasoning_effort_map_flag(o.reasoning_effort_map);
  o.server.defaults.chat_template_kwargs =
      json_object_flag("--default-chat-template-kwargs", o.default_chat_template_kwargs,
                       R"({"enable_thinking": false})");
  o.server.eos_token_ids = tok.eos_token_ids;
  // vLLM: the flag's keys, else VLLM_API_KEY; empty keys guard nothing.
  if (o.server.api_keys.empty()) {
    if (const char* env = std::getenv("VLLM_API_KEY")) o.server.api_keys = {env};
  }
  std::erase(o.server.api_keys, std::string());
  o.server.truncation_side = tok.truncation_side;
  // Named as given: a repo id, not the cache directory it was found in (vLLM's names).
  if (o.server.served_model_names.empty()) o.server.served_model_names = {o.engine.config.model};
  o.server.model_root = o.engine.config.model;

  // On every rank: the other ranks ignore the signals too (rank 0 stops them).
  const StopSignals signals;
  engine::run_online_engine(config, [&](engine::OnlineEngine& engine) {
    server::OpenAiServer server(engine, *tok.tokenizer, *chat, o.server);
    const int port = server.bind();
    std::fprintf(stderr, "ctxpar serve: %s on %s://%s:%d (T=%d N=%d), loading\n",
                 o.server.served_model_names.front().c_str(),
                 o.server.tls.enabled() ? "https" : "http", o.server.host.c_str(), port,
                 config.tensor_parallel_size, config.decode_context_parallel_size);
    std::atomic<bool> served{false}, load_failed{false};
    std::thread stopper(
        [&] { stop_on_signal_or_load_failure(server, signals, load_failed, served); });
    std::thread announce([&] {
      if (!engine.wait_until_loaded()) {
        load_failed = true;  // run_online_engine reports why once the server stopped
      } else {
        const engine::EngineStats s = engine.stats();
        std::fprintf(stderr,
                     "ctxpar serve: ready: KV cache %ld blocks per rank, %ld tokens per DCP group "
                     "(%ld without DCP)\n",
                     static_cast<long>(s.blocks_per_rank), static_cast<long>(s.token_capacity),
                     static_cast<long>(s.token_capacity_without_dcp));
      }
    });
    server.serve();
    served = true;
    stopper.join();
    announce.join();
  });
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "an OpenAI-compatible HTTP server (vLLM's API) over the engine with TP and DCP");
  cmd->add_option("model_tag", o->model_tag, "the model (vLLM's positional MODEL; or --model)");
  add_engine_flags(cmd, o->engine);
  cmd->add_option("--host", o->server.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", o->server.port, "port to listen on (0: any free port)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", o->server.served_model_names,
                  "the model's name(s) in the API: requests may use any, responses give the "
                  "first (default: the model)");
  cmd->add_option("--api-key", o->server.api_keys,
                  "require `Authorization: Bearer KEY` (any of the keys given) on routes under "
                  "/v1, /v2, /inference and /cohere (default: the VLLM_API_KEY variable)");
  cmd->add_option("--chat-template", o->chat_template,
                  "the chat template: a file, or the template itself (default: the tokenizer's)");
  cmd->add_option("--tokenizer-mode", o->tokenizer_mode,
                  "auto, hf or deepseek_v32 (DeepSeek-V3.2's chat encoder for any model)")
      ->capture_default_str();
  cmd->add_option("--chat-template-content-format", o->chat_template_content_format,
                  "how message content reaches the chat template: string (text), openai (a list "
                  "of {type, text} parts) or auto (openai when the template loops over "
                  "message.content)")
      ->capture_default_str();
  cmd->add_option("--reasoning-parser", o->reasoning_parser,
                  "deepseek_r1, qwen3, deepseek_v3 or glm45: chat messages get the text between "
                  "<think> and </think> as `reasoning`");
  cmd->add_flag("--enable-auto-tool-choice", o->enable_auto_tool_choice,
                "parse tool calls out of chat outputs (tool_choice auto) with --tool-call-parser");
  cmd->add_option("--tool-call-parser", o->tool_call_parser,
                  "hermes (Qwen, Hermes: JSON calls), glm45 or glm47 (GLM-4.5 / GLM-4.7, GLM-5: "
                  "<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>), "
                  "deepseek_v32 (DeepSeek-V3.2: DSML invokes), deepseek_v31 or deepseek_v3 "
                  "(DeepSeek-V3.1, V3 / R1: <｜tool▁call▁begin｜> calls), llama3_json (Llama "
                  "3.1-3.3: {\"name\": ..., \"parameters\": {...}} objects, `;` between them), "
                  "qwen3_coder (Qwen3-Coder: <tool_call><function=name><parameter=k>v</parameter>"
                  "</function></tool_call>), pythonic (Llama 3.2, Llama 4: [f(k=v), g()])");
  cmd->add_option("--generation-config", o->generation_config,
                  "requests' sampling defaults: auto (the model's generation_config.json), vllm "
                  "(none) or a directory holding a generation_config.json")
      ->capture_default_str();
  cmd->add_option("--override-generation-config", o->override_generation_config,
                  "JSON object of defaults on top (temperature, top_p, top_k, min_p, "
                  "repetition_penalty, max_new_tokens)");
  cmd->add_flag("--enable-prompt-tokens-details", o->server.enable_prompt_tokens_details,
                "usage.prompt_tokens_details.cached_tokens: the prompt tokens the prefix cache "
                "served");
  cmd->add_flag("--exclude-tools-when-tool-choice-none",
                o->server.exclude_tools_when_tool_choice_none,
                "a chat request with tool_choice none renders its prompt without its tools");
  cmd->add_flag("--enable-force-include-usage", o->server.force_include_usage,
                "every stream reports usage, in each chunk and at its end");
  cmd->add_flag("--enable-per-request-metrics", o->server.enable_per_request_metrics,
                "responses of one choice report their queue time, time to first token, "
                "inter-token latency and tokens/s (metrics)");
  cmd->add_flag("--trust-request-chat-template", o->server.trust_request_chat_template,
                "requests may bring their own chat_template (Jinja text), which else is refused");
  cmd->add_option("--reasoning-effort-map", o->reasoning_effort_map,
                  "JSON object rewriting requests' reasoning efforts for the template, e.g. "
                  "'{\"medium\": \"low\"}'");
  cmd->add_option("--response-role", o->server.response_role,
                  "the role of a chat reply's message after a generation prompt")
      ->capture_default_str();
  cmd->add_flag("--return-tokens-as-token-ids", o->server.return_tokens_as_token_ids,
                "logprobs name tokens token_id:<id> (a request's return_tokens_as_token_ids "
                "overrides)");
  cmd->add_option("--fingerprint-mode", o->fingerprint_mode,
                  "responses' system_fingerprint: full (version, parallel sizes and a hash of "
                  "the model's configuration), hash (without the sizes), custom "
                  "(--fingerprint-value) or none")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
      "--fingerprint-value", [o](const std::string& v) { o->fingerprint_value = v; },
      "the system_fingerprint of --fingerprint-mode custom");
  cmd->add_option("--sse-keep-alive-interval", o->sse_keep_alive_interval,
                  "seconds an idle stream waits before an SSE comment (: keep-alive) that "
                  "proxies count as traffic; 0: every 2 s")
      ->capture_default_str();
  cmd->add_option("--allowed-origins", o->allowed_origins,
                  "JSON list of the origins a browser page may call from, e.g. '[\"*\"]' "
                  "(default: none)");
  cmd->add_option("--allowed-methods", o->allowed_methods,
                  "JSON list of the methods cross-origin requests may use")
      ->capture_default_str();
  cmd->add_option("--allowed-headers", o->allowed_headers,
                  "JSON list of the headers cross-origin requests may send")
      ->capture_default_str();
  cmd->add_flag("--allow-credentials", o->server.cors.credentials,
                "cross-origin requests may carry credentials");
  cmd->add_option("--ssl-certfile", o->server.tls.certfile,
                  "serve HTTPS with this PEM certificate chain (and the key of --ssl-keyfile, "
                  "else the one in this file)");
  cmd->add_option("--ssl-keyfile", o->server.tls.keyfile, "the PEM private key for HTTPS");
  cmd->add_option("--ssl-ca-certs", o->server.tls.ca_certs,
                  "PEM CA certificates client certificates must chain to");
  cmd->add_option("--ssl-cert-reqs", o->server.tls.cert_reqs,
                  "client certificates: 0 not asked for, 1 optional, 2 required")
      ->capture_default_str();
  cmd->add_option("--ssl-ciphers", o->server.tls.ciphers,
                  "OpenSSL cipher list for TLS 1.2 and below");
  cmd->add_flag("--enable-ssl-refresh", o->enable_ssl_refresh,
                "(vLLM's reload of changed certificate files; not supported: restart instead)");
  cmd->add_flag("--enable-server-load-tracking", o->server.server_load_tracking,
                "GET /load counts the generation requests being answered");
  cmd->add_flag("--enable-request-id-headers", o->server.request_id_headers,
                "every response carries X-Request-Id (the request's, or a new one)");
  cmd->add_option("--default-chat-template-kwargs", o->default_chat_template_kwargs,
                  "JSON object of chat template arguments every chat request gets unless it "
                  "sets them itself, e.g. '{\"enable_thinking\": false}'");
  cmd->add_option("--anthropic-disabled-thinking-effort",
                  o->server.anthropic_disabled_thinking_effort,
                  "the reasoning_effort /v1/messages sends for thinking disabled or between_tools: "
                  "auto (low when the chat template ignores or refuses none, else none), none, "
                  "low, medium, high, xhigh or max")
      ->check(CLI::IsMember(server::anthropic_disabled_thinking_efforts()))
      ->capture_default_str();
  cmd->add_option("--max-request-body-bytes", o->max_body,
                  "larger request bodies get 413 (e.g. 32MiB)")
      ->capture_default_str();
  cmd->callback([o] { run(*o); });
}

}  // namespace ctxpar::app
