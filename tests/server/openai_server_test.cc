// OpenAiServer against engine states a running server cannot be put in from outside: still
// loading (503 "Loading model" for /health and generation), and an engine that failed in a
// step (the request in flight ends with a 500, /health turns 503, new requests get 503, and the
// run returns with the failure).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/chat_prompt.h"
#include "ctxpar/engine/online_engine.h"
#include "ctxpar/engine/tokenizer_loader.h"
#include "ctxpar/server/openai_server.h"
#include "ctxpar/tokenizer/byte_tokenizer.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;

engine::EngineConfig tiny_config() {
  engine::EngineConfig c;
  c.model = "builtin:tiny-llama";
  c.tensor_parallel_size = 2;
  c.max_model_len = 256;
  c.kv_cache_memory = int64_t{8} << 20;
  c.dtype = "float32";
  c.threads_per_rank = 1;
  return c;
}

// Serves on a free port on its own thread until destroyed.
class Running {
 public:
  Running(engine::OnlineEngine& engine, const tokenizer::Tokenizer& tok)
      : chat_(engine::load_tokenizer("builtin:tiny-llama"),
              model::resolve_model_config("builtin:tiny-llama"), ""),
        server_(engine, tok, chat_, options()),
        port_(server_.bind()),
        thread_([this] { server_.serve(); }) {}
  ~Running() {
    server_.stop();
    thread_.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60);
    return c;
  }

 private:
  static ServerOptions options() {
    ServerOptions o;
    o.port = 0;
    o.served_model_names = {"tiny"};
    return o;
  }
  engine::ChatPrompt chat_;
  OpenAiServer server_;
  int port_;
  std::thread thread_;
};

json error_of(const httplib::Result& r, int status) {
  EXPECT_TRUE(r) << "no response";
  if (!r) return {};
  EXPECT_EQ(r->status, status) << r->body;
  return json::parse(r->body)["error"];
}

const std::string kRequest = R"({"prompt": [1, 2, 3], "max_tokens": 40, "ignore_eos": true})";

TEST(OpenAiServer, AnswersServiceUnavailableWhileLoading) {
  const engine::ResolvedEngineConfig cfg = engine::resolve_engine_config(tiny_config());
  engine::OnlineEngine engine(cfg, {});  // never run: it stays loading
  const tokenizer::ByteTokenizer tok(512, 256);
  Running server(engine, tok);
  httplib::Client c = server.client();
  json e = error_of(c.Get("/health"), 503);
  EXPECT_EQ(e["message"], "Loading model");
  EXPECT_EQ(e["code"], 503);
  e = error_of(c.Post("/v1/completions", kRequest, "application/json"), 503);
  EXPECT_EQ(e["message"], "Loading model");
  // Routes that need no engine answer anyway.
  const auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "tiny");
}

TEST(OpenAiServer, AFailedEngineEndsRequestsWithAnErrorAndTurnsHealthUnavailable) {
  engine::OnlineEngineOptions options;
  std::atomic<int> steps{0};
  options.on_step = [&](const engine::StepReport&) {
    if (++steps == 3) CTXPAR_FAIL("injected engine failure");
  };
  const tokenizer::ByteTokenizer tok(512, 256);
  std::string ran_out;
  try {
    engine::run_online_engine(
        tiny_config(),
        [&](engine::OnlineEngine& engine) {
          Running server(engine, tok);
          ASSERT_TRUE(engine.wait_until_loaded());
          httplib::Client c = server.client();
          ASSERT_EQ(c.Get("/health")->status, 200);
          json e = error_of(c.Post("/v1/completions", kRequest, "application/json"), 500);
          EXPECT_EQ(e["type"], "InternalServerError");
          EXPECT_NE(e["message"].get<std::string>().find("injected engine failure"),
                    std::string::npos);
          e = error_of(c.Get("/health"), 503);
          EXPECT_NE(e["message"].get<std::string>().find("injected engine failure"),
                    std::string::npos);
          e = error_of(c.Post("/v1/completions", kRequest, "application/json"), 503);
          EXPECT_NE(e["message"].get<std::string>().find("The engine failed"), std::string::npos);
        },
        options);
  } catch (const Error& e) {
    ran_out = e.what();
  }
  EXPECT_NE(ran_out.find("injected engine failure"), std::string::npos) << ran_out;
}

}  // namespace
}  // namespace ctxpar::server
