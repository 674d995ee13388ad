// The per-tensor scales of an e4m3 KV cache that FP8 checkpoints store beside each attention
// layer (llm-compressor's kv_cache_scheme, NVIDIA ModelOpt, the deprecated single kv_scale), read
// as vLLM's BaseKVCacheMethod reads them: the cache holds k / k_scale and v / v_scale, and
// attention multiplies them back.
#pragma once

#include <string>

#include "ctxpar/core/dtype.h"
#include "ctxpar/model/weight_source.h"

namespace ctxpar::model {

struct KvCacheScales {
  float k = 1.0f;
  float v = 1.0f;
  bool from_checkpoint = false;  // false: none stored, both 1 (vLLM's default)
};

// The scales of attention layer `attn_prefix` ("model.layers.3.self_attn"). Looked up under the
// names vLLM remaps, each relative to the prefix:
//   k_scale, v_scale                       (llm-compressor / compressed-tensors)
//   k_proj.k_scale, v_proj.v_scale         (ModelOpt)
//   qkv_proj.k_scale, qkv_proj.v_scale     (fused projections)
//   k_proj.output_scale, v_proj.output_scale  (older compressed-tensors)
//   kv_scale                               (deprecated: one scale for both)
// Only an e4m3 cache (--kv-cache-dtype fp8) reads them; for any other cache dtype they are
// ignored and both scales are 1, as in vLLM. A k scale without a v scale scales both (vLLM
// duplicates it). Throws InputError naming the tensor when a scale is not one positive finite
// value, when there is a v scale but no k scale, or when one scale is stored under two names.
KvCacheScales read_kv_cache_scales(const WeightSource& weights, const std::string& attn_prefix,
                                   DType kv_cache_dtype);

}  // namespace ctxpar::model
