// Prometheus metrics of GET /metrics, with vLLM's names, labels (model_name, engine="0") and
// histogram buckets (vllm/v1/metrics/loggers.py), plus ctxpar's DCP gauges: the KV cache bytes
// per rank and the token capacity the same memory holds with and without DCP. Written in the
// Prometheus text format by hand (Debian has no prometheus-cpp). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/engine/engine_config.h"
#include "ctxpar/engine/engine_stats.h"
#include "ctxpar/engine/online_engine.h"

namespace ctxpar::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // The _bucket (cumulative, then +Inf), _count and _sum lines of `name` with `labels`.
  std::string render(std::string_view name, std::string_view labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // [bounds + 1], not cumulative
  double sum_ = 0;
  int64_t count_ = 0;
};

class ServerMetrics {
 public:
  explicit ServerMetrics(std::string model_name);

  // A request's first output token, `ttft` seconds after it arrived.
  void first_token(double ttft_seconds, int64_t prompt_tokens);
  // The time between two outputs of a request.
  void inter_token(double seconds);
  void generated(int64_t tokens);
  // A request ended: finished_reason is "stop", "length", "abort" or "error".
  void finished(std::string_view finished_reason, double e2e_seconds);

  std::string render(const engine::EngineSnapshot& snapshot, const engine::EngineStats& stats,
                     const engine::ResolvedEngineConfig& config) const;

 private:
  std::string labels_;  // model_name="...",engine="0" (vLLM's label order)
  mutable std::mutex mu_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  std::map<std::string, int64_t, std::less<>> success_;  // by finished_reason
  Histogram ttft_;
  Histogram itl_;
  Histogram e2e_;
};

}  // namespace ctxpar::server
