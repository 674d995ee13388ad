#include "ctxpar/model/kv_cache_scales.h"

#include <cmath>
#include <optional>
#include <vector>

#include "ctxpar/core/error.h"

namespace ctxpar::model {
namespace {

struct Found {
  std::string name;
  float value = 0;
};

// The one stored scale among `suffixes` under `prefix`; nullopt when none is.
std::optional<Found> find_scale(const WeightSource& weights, const std::string& prefix,
                                const std::vector<std::string>& suffixes) {
  std::optional<Found> found;
  for (const std::string& suffix : suffixes) {
    const std::string name = prefix + "." + suffix;
    const std::optional<float> value = weights.stored_scalar(name);
    if (!value) continue;
    CTXPAR_CHECK_INPUT(!found, "the checkpoint stores KV cache scale '{}' twice: as '{}' and '{}'",
                       suffixes.front(), found ? found->name : "", name);
    CTXPAR_CHECK_INPUT(std::isfinite(*value) && *value > 0,
                       "KV cache scale '{}' is {}; it must be a positive finite number", name,
                       *value);
    found = Found{name, *value};
  }
  return found;
}

}  // namespace

KvCacheScales read_kv_cache_scales(const WeightSource& weights, const std::string& attn_prefix,
                                   DType kv_cache_dtype) {
  KvCacheScales scales;
  if (kv_cache_dtype != DType::kF8E4M3) return scales;
  const std::optional<Found> k =
      find_scale(weights, attn_prefix,
                 {"k_scale", "k_proj.k_scale", "qkv_proj.k_scale", "k_proj.output_scale"});
  const std::optional<Found> v =
      find_scale(weights, attn_prefix,
                 {"v_scale", "v_proj.v_scale", "qkv_proj.v_scale", "v_proj.output_scale"});
  const std::optional<Found> kv = find_scale(weights, attn_prefix, {"kv_scale"});
  if (kv) {
    CTXPAR_CHECK_INPUT(!k && !v,
                       "the checkpoint stores both the deprecated '{}' and separate k/v scales "
                       "('{}'); keep one form",
                       kv->name, k ? k->name : v->name);
    scales.k = scales.v = kv->value;
    scales.from_checkpoint = true;
    return scales;
  }
  if (!k && !v) return scales;
  CTXPAR_CHECK_INPUT(k.has_value(),
                     "the checkpoint stores KV cache scale '{}' but no k scale for layer '{}'; "
                     "an e4m3 cache needs a k scale (alone it scales v too) or both",
                     v ? v->name : "", attn_prefix);
  scales.k = k->value;
  scales.v = v ? v->value : k->value;  // vLLM: a lone k scale is duplicated, as kv_scale
  scales.from_checkpoint = true;
  return scales;
}

}  // namespace ctxpar::model
