#include "ctxpar/engine/scheduler_config.h"

#include "ctxpar/core/error.h"

namespace ctxpar::engine {

void SchedulerConfig::validate() const {
  CTXPAR_CHECK(max_num_seqs >= 1, "max_num_seqs {} is invalid; it must be >= 1", max_num_seqs);
  CTXPAR_CHECK(max_model_len >= 1, "max_model_len {} is invalid; it must be >= 1", max_model_len);
  CTXPAR_CHECK(max_num_batched_tokens >= max_num_seqs,
               "max_num_batched_tokens {} is below max_num_seqs {}; the token budget must hold "
               "one decode token for every running request",
               max_num_batched_tokens, max_num_seqs);
  CTXPAR_CHECK(enable_chunked_prefill || max_num_batched_tokens >= max_model_len,
               "max_num_batched_tokens {} is below max_model_len {} with chunked prefill off; a "
               "prompt of max_model_len tokens could never be scheduled. Raise the budget or "
               "enable chunked prefill",
               max_num_batched_tokens, max_model_len);
  CTXPAR_CHECK(max_all_logits_tokens >= 1, "max_all_logits_tokens {} is invalid; it must be >= 1",
               max_all_logits_tokens);
  CTXPAR_CHECK(!enable_prefix_caching || block_hash != nullptr,
               "prefix caching is on but no block hash function is set");
}

}  // namespace ctxpar::engine
