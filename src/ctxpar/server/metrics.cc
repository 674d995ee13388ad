#include "ctxpar/server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ctxpar::server {
namespace {

std::string escape_label(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Prometheus prints numbers as Python's float repr does; integral values as "12.0".
std::string number(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v)) && std::abs(v) < 1e15) {
    return fmt::format("{}.0", static_cast<int64_t>(v));
  }
  return fmt::format("{}", v);
}

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[static_cast<size_t>(at)];
  sum_ += value;
  ++count_;
}

std::string Histogram::render(std::string_view name, std::string_view labels) const {
  std::string out;
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out +=
        fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le, number(double(cumulative)));
  }
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, number(double(count_)));
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, number(sum_));
  return out;
}

ServerMetrics::ServerMetrics(std::string model_name)
    : labels_(fmt::format("model_name=\"{}\",engine=\"0\"", escape_label(model_name))),
      ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
             1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      itl_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
            20.0, 40.0, 80.0}),
      e2e_({0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
            30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}) {
  for (const char* reason : {"stop", "length", "abort", "error"}) success_[reason] = 0;
}

void ServerMetrics::first_token(double ttft_seconds, int64_t prompt_tokens) {
  std::lock_guard lock(mu_);
  ttft_.observe(ttft_seconds);
  prompt_tokens_ += prompt_tokens;
}

void ServerMetrics::inter_token(double seconds) {
  std::lock_guard lock(mu_);
  itl_.observe(seconds);
}

void ServerMetrics::generated(int64_t tokens) {
  std::lock_guard lock(mu_);
  generation_tokens_ += tokens;
}

void ServerMetrics::finished(std::string_view finished_reason, double e2e_seconds) {
  std::lock_guard lock(mu_);
  ++success_[std::string(finished_reason)];
  e2e_.observe(e2e_seconds);
}

std::string ServerMetrics::render(const engine::EngineSnapshot& snapshot,
                                  const engine::EngineStats& stats,
                                  const engine::ResolvedEngineConfig& config) const {
  std::lock_guard lock(mu_);
  std::string out;
  const auto gauge = [&](std::string_view name, std::string_view help, double value) {
    family(out, name, "gauge", help);
    out += fmt::format("{}{{{}}} {}\n", name, labels_, number(value));
  };
  const auto counter = [&](std::string_view name, std::string_view help, double value) {
    family(out, name, "counter", help);
    out += fmt::format("{}_total{{{}}} {}\n", name, labels_, number(value));
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        snapshot.num_running);
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        snapshot.num_waiting);
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        snapshot.num_blocks > 0 ? double(snapshot.num_used_blocks) / snapshot.num_blocks : 0.0);
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
          double(snapshot.num_preemptions));
  // In tokens, as vLLM counts them; requests resumed after preemption are not counted.
  counter("vllm:prefix_cache_queries",
          "Prefix cache queries, in terms of number of queried tokens.",
          double(stats.prefix_cache.queries));
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          double(stats.prefix_cache.hits));
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", double(prompt_tokens_));
  counter("vllm:generation_tokens", "Number of generation tokens processed.",
          double(generation_tokens_));
  family(out, "vllm:request_success", "counter", "Count of successfully processed requests.");
  for (const auto& [reason, n] : success_) {
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels_,
                       reason, number(double(n)));
  }
  family(out, "vllm:time_to_first_token_seconds", "histogram",
         "Histogram of time to first token in seconds.");
  out += ttft_.render("vllm:time_to_first_token_seconds", labels_);
  family(out, "vllm:inter_token_latency_seconds", "histogram",
         "Histogram of inter-token latency in seconds.");
  out += itl_.render("vllm:inter_token_latency_seconds", labels_);
  family(out, "vllm:e2e_request_latency_seconds", "histogram",
         "Histogram of e2e request latency in seconds.");
  out += e2e_.render("vllm:e2e_request_latency_seconds", labels_);

  // ctxpar's DCP gauges: what DCP buys with the same memory.
  gauge("ctxpar:kv_cache_bytes_per_rank", "KV cache bytes allocated on each rank, all layers.",
        double(stats.kv_bytes_per_rank));
  gauge("ctxpar:kv_cache_blocks_per_rank", "KV cache blocks on each rank (the same ids on all).",
        stats.blocks_per_rank);
  gauge("ctxpar:kv_cache_token_capacity",
        "Tokens the KV cache of a DCP group holds (blocks x block size x DCP size).",
        double(stats.token_capacity));
  gauge("ctxpar:kv_cache_token_capacity_without_dcp",
        "Tokens the same KV memory would hold without DCP (DCP size 1).",
        double(stats.token_capacity_without_dcp));
  gauge("ctxpar:tensor_parallel_size", "Tensor-parallel size T.", config.raw.tensor_parallel_size);
  gauge("ctxpar:decode_context_parallel_size", "Decode-context-parallel size N.",
        config.raw.decode_context_parallel_size);
  return out;
}

}  // namespace ctxpar::server
