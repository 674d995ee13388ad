#include "ctxpar/model/kv_cache_plan.h"

namespace ctxpar::model {

std::vector<kv::KvCacheSpec> kv_cache_specs_for(const ModelConfig& c, int tp_size, int dcp_size,
                                                DType kv_cache_dtype,
                                                attention::SfaIndexerMode indexer_mode) {
  std::vector<kv::KvCacheSpec> specs;
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    if (c.is_mla()) {
      specs.push_back(kv::mla_kv_cache_spec(static_cast<int>(c.mla.kv_lora_rank),
                                            static_cast<int>(c.mla.qk_rope_head_dim),
                                            kv_cache_dtype));
      if (c.has_indexer(layer)) {
        kv::KvCacheSpec keys =
            kv::indexer_kv_cache_spec(static_cast<int>(c.indexer.index_head_dim), kv_cache_dtype);
        keys.sharded_by_dcp = dcp_size > 1 && indexer_mode == attention::SfaIndexerMode::kSharded;
        specs.push_back(keys);
      }
    } else {
      specs.push_back(kv::gqa_kv_cache_spec(static_cast<int>(c.num_key_value_heads),
                                            static_cast<int>(c.head_dim), tp_size, kv_cache_dtype));
    }
  }
  return specs;
}

}  // namespace ctxpar::model
