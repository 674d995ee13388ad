#include "ctxpar/model/parallel_validation.h"

#include "ctxpar/core/error.h"

namespace ctxpar::model {

void validate_for_parallel(const ModelConfig& c, int64_t T, int64_t N) {
  const std::string& src = c.source;
  CTXPAR_CHECK_INPUT(T >= 1, "tensor-parallel size must be >= 1, got {}", T);
  CTXPAR_CHECK_INPUT(N >= 1, "decode-context-parallel size must be >= 1, got {}", N);
  CTXPAR_CHECK_INPUT(T % N == 0,
                     "decode-context-parallel size N={} must divide tensor-parallel size T={} (DCP "
                     "groups are consecutive TP ranks)",
                     N, T);
  CTXPAR_CHECK_INPUT(c.num_attention_heads % T == 0,
                     "{}: tensor-parallel size T={} must divide num_attention_heads={} (each rank "
                     "holds num_attention_heads/T whole heads)",
                     src, T, c.num_attention_heads);

  if (!c.is_mla()) {
    const int64_t kv = c.num_key_value_heads;
    if (kv >= T) {
      CTXPAR_CHECK_INPUT(kv % T == 0,
                         "{}: num_key_value_heads={} >= T={} but is not divisible by it (each rank "
                         "must hold num_key_value_heads/T whole KV heads)",
                         src, kv, T);
    } else {
      CTXPAR_CHECK_INPUT(
          T % kv == 0,
          "{}: num_key_value_heads={} < T={} but does not divide it (each KV head is "
          "replicated on T/num_key_value_heads ranks)",
          src, kv, T);
    }
    if (N > 1) {
      // A DCP group shards the sequence of one KV head set, so all its ranks must hold the
      // same (replicated) KV heads: the group must lie inside one replica set of size T/kv.
      CTXPAR_CHECK_INPUT(
          T % kv == 0 && (T / kv) % N == 0,
          "{}: decode-context-parallel size N={} needs num_key_value_heads={} to divide "
          "T={} and N to divide T/num_key_value_heads{} (every DCP group must hold the "
          "same replicated KV heads); valid N here: {}",
          src, N, kv, T,
          T % kv == 0 ? fmt::format("={}", T / kv) : std::string(" (not an integer)"),
          T % kv == 0 ? fmt::format("divisors of {}", T / kv) : std::string("1 only"));
    }
  }

  if (c.is_sparse() && N > 1) {
    CTXPAR_CHECK_INPUT(
        N == T,
        "{}: sparse attention (Lightning Indexer) with DCP runs the replicated-indexer "
        "mode, which needs N == T; got N={} T={} (use N=1 or N={})",
        src, N, T, T);
  }

  CTXPAR_CHECK_INPUT(
      c.intermediate_size % T == 0,
      "{}: tensor-parallel size T={} must divide intermediate_size={} (the MLP is split "
      "over its intermediate dimension)",
      src, T, c.intermediate_size);
  if (c.is_moe()) {
    CTXPAR_CHECK_INPUT(
        c.moe.moe_intermediate_size % T == 0,
        "{}: tensor-parallel size T={} must divide moe_intermediate_size={} (experts "
        "are split over their intermediate dimension)",
        src, T, c.moe.moe_intermediate_size);
  }
}

}  // namespace ctxpar::model
