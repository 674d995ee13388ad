#include "ctxpar/attention/attention_config.h"

#include "ctxpar/core/error.h"

namespace ctxpar::attention {

void validate_dcp_sizes(int tp, int dcp) {
  CTXPAR_CHECK_INPUT(tp >= 1, "--tensor-parallel-size {} must be >= 1", tp);
  CTXPAR_CHECK_INPUT(dcp >= 1, "--decode-context-parallel-size {} must be >= 1", dcp);
  CTXPAR_CHECK_INPUT(tp % dcp == 0,
                     "--decode-context-parallel-size {} must divide --tensor-parallel-size {}", dcp,
                     tp);
}

void validate_gqa_parallel(int64_t num_heads, int64_t num_kv_heads, int tp, int dcp) {
  validate_dcp_sizes(tp, dcp);
  CTXPAR_CHECK_INPUT(num_heads >= 1 && num_kv_heads >= 1 && num_heads % num_kv_heads == 0,
                     "GQA needs num_attention_heads ({}) to be a positive multiple of "
                     "num_key_value_heads ({})",
                     num_heads, num_kv_heads);
  CTXPAR_CHECK_INPUT(num_heads % tp == 0,
                     "num_attention_heads {} is not divisible by --tensor-parallel-size {}",
                     num_heads, tp);
  CTXPAR_CHECK_INPUT(
      num_kv_heads % tp == 0 || tp % num_kv_heads == 0,
      "num_key_value_heads {} and --tensor-parallel-size {}: one must divide the other "
      "(KV heads are split over ranks or replicated across them)",
      num_kv_heads, tp);
  if (dcp > 1) {
    CTXPAR_CHECK_INPUT(
        tp % num_kv_heads == 0 && (tp / num_kv_heads) % dcp == 0,
        "GQA with --decode-context-parallel-size {} needs the DCP group inside the "
        "ranks of one replicated KV head: num_key_value_heads ({}) must divide "
        "--tensor-parallel-size ({}) and {} must divide T / num_key_value_heads ({}); "
        "the largest valid DCP size here is {}",
        dcp, num_kv_heads, tp, dcp, tp % num_kv_heads == 0 ? tp / num_kv_heads : 0,
        tp % num_kv_heads == 0 ? tp / num_kv_heads : 1);
  }
}

void validate_mla_parallel(int64_t num_heads, int tp, int dcp) {
  validate_dcp_sizes(tp, dcp);
  CTXPAR_CHECK_INPUT(num_heads >= 1 && num_heads % tp == 0,
                     "MLA num_attention_heads {} is not divisible by --tensor-parallel-size {}",
                     num_heads, tp);
}

}  // namespace ctxpar::attention
