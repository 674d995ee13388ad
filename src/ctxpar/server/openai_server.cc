#include "ctxpar/server/openai_server.h"

#include <httplib.h>

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <thread>

#include "ctxpar/core/error.h"
#include "ctxpar/server/anthropic_output.h"
#include "ctxpar/server/api_error.h"
#include "ctxpar/server/openai_handlers.h"
#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/valid_text_tokenizer.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;

void write_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(e.to_json().dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

// Runs a handler, answering its ApiError (or any other exception, as a 500) in vLLM's shape.
template <typename F>
httplib::Server::Handler guarded(F handler) {
  return [handler](const httplib::Request& req, httplib::Response& res) {
    try {
      handler(req, res);
    } catch (const ApiError& e) {
      write_error(res, e);
    } catch (const Error& e) {
      write_error(res, bad_request(e.what()));
    } catch (const std::exception& e) {
      write_error(res, internal_error(e.what()));
    }
  };
}

// guarded() for the Anthropic routes: errors in Anthropic's shape.
template <typename F>
httplib::Server::Handler anthropic_guarded(F handler) {
  return [handler](const httplib::Request& req, httplib::Response& res) {
    const auto write = [&res](const ApiError& e) {
      res.status = e.status();
      res.set_content(anthropic_error(e.status(), e.what())
                          .dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
    };
    try {
      handler(req, res);
    } catch (const ApiError& e) {
      write(e);
    } catch (const Error& e) {
      write(bad_request(e.what()));
    } catch (const std::exception& e) {
      write(internal_error(e.what()));
    }
  };
}

// Compares in time independent of where the strings differ (vLLM's secrets.compare_digest).
bool constant_time_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

// vLLM's AuthenticationMiddleware guards these prefixes (routes ctxpar lacks included: their 404
// needs the key too).
bool is_guarded_route(const std::string& path) {
  for (const char* prefix : {"/v1", "/v2", "/inference", "/cohere"}) {
    if (path.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// `Authorization: Bearer KEY` with any of the keys; the scheme in any case, as vLLM reads it.
// Every key is compared, so the time does not tell which one nearly matched.
bool authorized(const std::string& header, const std::vector<std::string>& keys) {
  const size_t space = header.find(' ');
  if (space == std::string::npos) return false;
  std::string scheme = header.substr(0, space);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string token = header.substr(space + 1);
  bool match = false;
  for (const std::string& key : keys) match |= constant_time_equal(token, key);
  return scheme == "bearer" && match;
}

// A CORS preflight: OPTIONS with Origin and Access-Control-Request-Method (cors.h).
bool is_preflight(const httplib::Request& req) {
  return req.method == "OPTIONS" && req.has_header("Origin") &&
         req.has_header("Access-Control-Request-Method");
}

void answer_preflight(const CorsPolicy& cors, const httplib::Request& req, httplib::Response& res) {
  const char* const kHeaders = "Access-Control-Request-Headers";
  const CorsPolicy::Preflight p = cors.preflight(
      req.get_header_value("Origin"), req.get_header_value("Access-Control-Request-Method"),
      req.has_header(kHeaders) ? std::optional(req.get_header_value(kHeaders)) : std::nullopt,
      req.has_header("Access-Control-Request-Private-Network"));
  res.status = p.status;
  for (const auto& [name, value] : p.headers) res.set_header(name, value);
  res.set_content(p.body, "text/plain; charset=utf-8");
}

// The CORS headers of a response to a request from another origin, replacing any set before.
void add_cors_headers(const CorsPolicy& cors, const httplib::Request& req, httplib::Response& res) {
  const HeaderList headers =
      cors.response_headers(req.get_header_value("Origin"), res.get_header_value("Vary"));
  for (const auto& [name, value] : headers) {
    res.headers.erase(name);
    res.set_header(name, value);
  }
}

bool is_json_route(const std::string& path) {
  return path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/responses" ||
         path == "/v1/messages" || path == "/v1/messages/count_tokens" || path == "/tokenize" ||
         path == "/detokenize" || path == "/invocations";
}

}  // namespace

OpenAiServer::OpenAiServer(engine::OnlineEngine& engine, const tokenizer::Tokenizer& tokenizer,
                           const engine::ChatPrompt& chat, ServerOptions options)
    : engine_(engine),
      options_(std::move(options)),
      metrics_(options_.served_model_names.at(0)),
      text_tokenizer_(std::make_unique<ValidTextTokenizer>(tokenizer)),
      handlers_(
          std::make_unique<Handlers>(engine, *text_tokenizer_, chat, options_, metrics_, state_)),
      http_(make_http_server(options_.tls)) {
  httplib::Server& s = *http_;
  const int workers = options_.worker_threads > 0 ? options_.worker_threads
                                                  : 2 * engine.config().scheduler.max_num_seqs + 16;
  s.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
  s.set_payload_max_length(options_.max_body_bytes);
  s.set_keep_alive_max_count(1000);

  const auto cors = std::make_shared<const CorsPolicy>(options_.cors);
  s.set_pre_routing_handler([this, cors](const httplib::Request& req, httplib::Response& res) {
    if (is_preflight(req)) {
      answer_preflight(*cors, req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // vLLM's --api-key guards some prefixes (OPTIONS exempt), with a plain error body.
    if (!options_.api_keys.empty() && req.method != "OPTIONS" && is_guarded_route(req.path) &&
        !authorized(req.get_header_value("Authorization"), options_.api_keys)) {
      res.status = 401;
      res.set_content(R"({"error":"Unauthorized"})", "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "POST" && is_json_route(req.path)) {
      std::string type = req.get_header_value("Content-Type");
      type = type.substr(0, type.find(';'));
      std::transform(type.begin(), type.end(), type.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      type.erase(type.find_last_not_of(" \t") + 1);
      if (type != "application/json") {
        write_error(res,
                    http_error(415, "Unsupported Media Type: Only 'application/json' is allowed"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_post_routing_handler([this, cors](const httplib::Request& req, httplib::Response& res) {
    if (req.has_header("Origin") && !is_preflight(req)) add_cors_headers(*cors, req, res);
    if (!options_.request_id_headers) return;
    res.set_header("X-Request-Id", req.has_header("X-Request-Id")
                                       ? req.get_header_value("X-Request-Id")
                                       : random_hex(32));
  });
  // Statuses httplib sets itself (unknown route, body over the limit, bad request line) get a
  // vLLM-shaped body; responses that already have one keep it.
  s.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string message = res.status == 404 ? "Not Found" : "";
        if (res.status == 413) {
          message = fmt::format("The request body is larger than the limit of {} bytes",
                                options_.max_body_bytes);
        }
        write_error(res, http_error(res.status, message.empty() ? "Request failed" : message));
        return httplib::Server::HandlerResponse::Handled;
      }));
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          write_error(res, internal_error(x.what()));
        } catch (...) {
          write_error(res, internal_error("unknown error"));
        }
      });

  Handlers& h = *handlers_;
  s.Post("/v1/completions", guarded([&h](const auto& req, auto& res) { h.completions(req, res); }));
  s.Post("/v1/chat/completions", guarded([&h](const auto& req, auto& res) { h.chat(req, res); }));
  s.Post("/v1/responses", guarded([&h](const auto& req, auto& res) { h.responses(req, res); }));
  s.Post("/invocations", guarded([&h](const auto& req, auto& res) { h.invocations(req, res); }));
  s.Post("/v1/messages",
         anthropic_guarded([&h](const auto& req, auto& res) { h.messages(req, res); }));
  s.Post("/v1/messages/count_tokens",
         anthropic_guarded([&h](const auto& req, auto& res) { h.count_tokens(req, res); }));
  // Nothing is stored (vLLM's default), so every response id is unknown.
  s.Get(R"(/v1/responses/([^/]+))",
        guarded([&h](const auto& req, auto&) { h.stored_response(req.matches[1]); }));
  s.Post(R"(/v1/responses/([^/]+)/cancel)",
         guarded([&h](const auto& req, auto&) { h.stored_response(req.matches[1]); }));
  s.Post("/tokenize", guarded([&h](const auto& req, auto& res) { h.tokenize(req, res); }));
  s.Post("/detokenize", guarded([&h](const auto& req, auto& res) { h.detokenize(req, res); }));
  s.Get("/v1/models", guarded([&h](const auto&, auto& res) { h.models(res); }));
  for (const char* path : {"/health", "/ping"}) {
    s.Get(path, guarded([&h](const auto&, auto& res) { h.health(res); }));
  }
  s.Post("/ping", guarded([&h](const auto&, auto& res) { h.health(res); }));
  s.Get("/load", guarded([&h](const auto&, auto& res) { h.load(res); }));
  s.Get("/metrics", guarded([&h](const auto&, auto& res) { h.metrics(res); }));
  s.Get("/version", guarded([](const auto&, auto& res) {
          res.set_content(json{{"version", CTXPAR_VERSION}}.dump(), "application/json");
        }));
}

OpenAiServer::~OpenAiServer() = default;

int OpenAiServer::bind() {
  const int port = options_.port == 0
                       ? http_->bind_to_any_port(options_.host)
                       : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  CTXPAR_CHECK_INPUT(port > 0,
                     "cannot listen on {}:{} (address in use, or not an address of this host)",
                     options_.host, options_.port);
  return port;
}

void OpenAiServer::serve() {
  if (!state_.stopping) http_->listen_after_bind();
}

void OpenAiServer::stop() {
  state_.stopping = true;
  engine_.shutdown(engine::ShutdownMode::kAbort);
  // A stopping httplib stops writing chunked responses, so let the aborted streams send their
  // last chunks first (bounded: a client that reads nothing cannot hold the shutdown).
  const auto deadline = engine::Clock::now() + std::chrono::seconds(10);
  while (state_.open_streams > 0 && engine::Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  http_->stop();
}

}  // namespace ctxpar::server
