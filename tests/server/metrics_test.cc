// The Prometheus text: vLLM's names, label order and buckets, cumulative counts with le
// inclusive, and ctxpar's DCP gauges.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "ctxpar/engine/engine_config.h"
#include "ctxpar/server/metrics.h"

namespace ctxpar::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

TEST(Metrics, HistogramBucketsAreCumulativeAndInclusive) {
  Histogram h({0.25, 1.0, 10.0});
  for (const double v : {0.125, 0.25, 0.5, 1.0, 3.0, 50.0}) h.observe(v);
  const std::string text = h.render("x", "a=\"b\"");
  EXPECT_TRUE(has_line(text, "x_bucket{a=\"b\",le=\"0.25\"} 2.0")) << text;
  EXPECT_TRUE(has_line(text, "x_bucket{a=\"b\",le=\"1.0\"} 4.0")) << text;
  EXPECT_TRUE(has_line(text, "x_bucket{a=\"b\",le=\"10.0\"} 5.0")) << text;
  EXPECT_TRUE(has_line(text, "x_bucket{a=\"b\",le=\"+Inf\"} 6.0")) << text;
  EXPECT_TRUE(has_line(text, "x_count{a=\"b\"} 6.0")) << text;
  EXPECT_TRUE(has_line(text, "x_sum{a=\"b\"} 54.875")) << text;
}

TEST(Metrics, VllmNamesLabelsAndDcpGauges) {
  ServerMetrics m("my-model");
  m.first_token(0.03, 12);
  m.first_token(0.5, 8);
  m.generated(9);
  m.inter_token(0.02);
  m.finished("length", 1.2);
  m.finished("stop", 0.4);
  engine::EngineSnapshot snap;
  snap.num_running = 3;
  snap.num_waiting = 1;
  snap.num_blocks = 200;
  snap.num_used_blocks = 50;
  snap.num_preemptions = 7;
  engine::EngineStats stats;
  stats.kv_bytes_per_rank = 4096;
  stats.token_capacity = 1000;
  stats.token_capacity_without_dcp = 500;
  stats.prefix_cache.queries = 300;
  stats.prefix_cache.hits = 128;
  stats.prefix_cache.preempted_hits = 64;  // not in vLLM's counters
  engine::ResolvedEngineConfig config;
  config.raw.tensor_parallel_size = 4;
  config.raw.decode_context_parallel_size = 2;
  const std::string text = m.render(snap, stats, config);
  const std::string l = "{model_name=\"my-model\",engine=\"0\"}";
  for (const std::string& line :
       {"vllm:num_requests_running" + l + " 3.0",
        "vllm:num_requests_waiting" + l + " 1.0",
        "vllm:kv_cache_usage_perc" + l + " 0.25",
        "vllm:num_preemptions_total" + l + " 7.0",
        "vllm:prompt_tokens_total" + l + " 20.0",
        "vllm:generation_tokens_total" + l + " 9.0",
        "vllm:prefix_cache_queries_total" + l + " 300.0",
        "vllm:prefix_cache_hits_total" + l + " 128.0",
        std::string("vllm:request_success_total{model_name=\"my-model\",engine=\"0\","
                    "finished_reason=\"length\"} 1.0"),
        std::string("vllm:request_success_total{model_name=\"my-model\",engine=\"0\","
                    "finished_reason=\"abort\"} 0.0"),
        std::string("vllm:time_to_first_token_seconds_bucket{model_name=\"my-model\","
                    "engine=\"0\",le=\"0.04\"} 1.0"),
        std::string("vllm:time_to_first_token_seconds_bucket{model_name=\"my-model\","
                    "engine=\"0\",le=\"2560.0\"} 2.0"),
        "vllm:inter_token_latency_seconds_count" + l + " 1.0",
        "vllm:e2e_request_latency_seconds_count" + l + " 2.0",
        "ctxpar:kv_cache_bytes_per_rank" + l + " 4096.0",
        "ctxpar:kv_cache_token_capacity" + l + " 1000.0",
        "ctxpar:kv_cache_token_capacity_without_dcp" + l + " 500.0",
        "ctxpar:decode_context_parallel_size" + l + " 2.0",
        std::string("# TYPE vllm:prompt_tokens counter"),
        std::string("# TYPE vllm:time_to_first_token_seconds histogram")}) {
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  }
}

}  // namespace
}  // namespace ctxpar::server
