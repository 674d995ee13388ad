#include "output_format.h"

#include <fmt/format.h>

namespace ctxpar::app {

std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string human_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

namespace {

double hit_rate(int64_t hits, int64_t queries) {
  return queries > 0 ? static_cast<double>(hits) / static_cast<double>(queries) : 0.0;
}

}  // namespace

nlohmann::json stats_json(const engine::EngineStats& s, const engine::EngineConfig& c) {
  nlohmann::json kv = {{"bytes_per_rank", s.kv_bytes_per_rank},
                       {"blocks_per_rank", s.blocks_per_rank},
                       {"block_size", c.block_size},
                       {"token_capacity", s.token_capacity},
                       {"token_capacity_without_dcp", s.token_capacity_without_dcp},
                       {"bytes_per_token_per_rank", s.kv_bytes_per_token_per_rank},
                       {"tensor_parallel_size", c.tensor_parallel_size},
                       {"decode_context_parallel_size", c.decode_context_parallel_size}};
  auto rate = [](int64_t tokens, double seconds) {
    return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  };
  nlohmann::json timing = {{"load_seconds", s.load_seconds},
                           {"prefill_tokens", s.prefill_tokens},
                           {"prefill_seconds", s.prefill_seconds},
                           {"prefill_tokens_per_second", rate(s.prefill_tokens, s.prefill_seconds)},
                           {"decode_tokens", s.decode_tokens},
                           {"decode_seconds", s.decode_seconds},
                           {"decode_tokens_per_second", rate(s.decode_tokens, s.decode_seconds)},
                           {"steps", s.steps},
                           {"preemptions", s.preemptions},
                           {"prefill_only", c.prefill_only}};
  const engine::PrefixCacheStats& pc = s.prefix_cache;
  nlohmann::json prefix_cache = {{"enabled", c.enable_prefix_caching},
                                 {"requests", pc.requests},
                                 {"queries", pc.queries},
                                 {"hits", pc.hits},
                                 {"hit_rate", hit_rate(pc.hits, pc.queries)},
                                 {"preempted_requests", pc.preempted_requests},
                                 {"preempted_queries", pc.preempted_queries},
                                 {"preempted_hits", pc.preempted_hits}};
  return {{"kv", kv}, {"timing", timing}, {"prefix_cache", prefix_cache}};
}

std::string stats_text(const engine::EngineStats& s, const engine::EngineConfig& c) {
  auto rate = [](int64_t tokens, double seconds) {
    return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  };
  const double gain = s.token_capacity_without_dcp > 0
                          ? static_cast<double>(s.token_capacity) /
                                static_cast<double>(s.token_capacity_without_dcp)
                          : 0.0;
  std::string out;
  if (c.prefill_only) {
    out += fmt::format(
        "Prefill-only: {} prompt tokens prefilled in {:.3f} s ({:.1f} tok/s); their KV was "
        "written to the cache, no decode step ran\n",
        s.prefill_tokens, s.prefill_seconds, rate(s.prefill_tokens, s.prefill_seconds));
  }
  out += fmt::format("KV cache per rank: {} in {} blocks of {} tokens ({} B per sequence token)\n",
                     human_bytes(s.kv_bytes_per_rank), s.blocks_per_rank, c.block_size,
                     s.kv_bytes_per_token_per_rank);
  out += fmt::format(
      "Token capacity per DCP group: {} tokens (same memory without DCP: {}; x{:.2f}) "
      "[T={} N={} I={}]\n",
      s.token_capacity, s.token_capacity_without_dcp, gain, c.tensor_parallel_size,
      c.decode_context_parallel_size, c.cp_kv_cache_interleave_size);
  out += fmt::format(
      "Throughput: prefill {:.1f} tok/s ({} tokens), decode {:.1f} tok/s ({} tokens); {} steps, "
      "{} preemptions, load {:.2f} s\n",
      rate(s.prefill_tokens, s.prefill_seconds), s.prefill_tokens,
      rate(s.decode_tokens, s.decode_seconds), s.decode_tokens, s.steps, s.preemptions,
      s.load_seconds);
  const engine::PrefixCacheStats& pc = s.prefix_cache;
  if (!c.enable_prefix_caching) {
    out += "Prefix cache: off (--no-enable-prefix-caching)\n";
  } else {
    out += fmt::format(
        "Prefix cache: {:.1f}% hit rate ({} of {} queried tokens from the cache, {} requests)",
        100 * hit_rate(pc.hits, pc.queries), pc.hits, pc.queries, pc.requests);
    if (pc.preempted_requests > 0) {
      out += fmt::format("; resumed after preemption: {} of {} tokens ({} requests)",
                         pc.preempted_hits, pc.preempted_queries, pc.preempted_requests);
    }
    out += "\n";
  }
  return out;
}

}  // namespace ctxpar::app
