// The attention output projection o_proj (W [out = hidden, in = H·v], HF layout) of one
// rank, row-parallel over the TP group: this rank keeps input columns part(1, tp_rank, T),
// and that shard is the only persistent copy of the weight.
//
// Weights: block-scaled FP8 when the checkpoint stores them so (or ModelOptions::quantize_fp8)
// and neither o_proj_quant nor DSA-CP asks otherwise (kernels::Fp8Linear: the FP8 shard is the
// persistent copy; under DSA-CP an FP8 o_proj is dequantized at load, since the full-weight
// gather moves dense weights); otherwise as loaded (ModelOptions::weight_dtype, f32 or bf16;
// kernels::Linear), bf16
// whatever the other weights are (OProjQuant::kBf16; kernels::Linear), or int8
// W8A8 (OProjQuant::kInt8; kernels::Int8Linear), quantized at load from the f32 weight:
//   smooth[i] = 1 / sqrt(max_o |W[o, i]|)          (1 for an all-zero column)
//   scale[o]  = max_i |W[o, i]·smooth[i]| / 127     (over the whole row: the ranks exchange
//                                                    their row maxima once, at load)
//   Wq[o, i]  = clamp(nearbyint(W[o, i]·smooth[i] / scale[o]), -127, 127)
// so y ≈ (x / smooth)·(Wq·scale)ᵀ = x·Wᵀ. The smoothing is SmoothQuant's with α = 1/2 and no
// activation statistics (unit activation ranges): it moves half of each input column's
// weight range into the activations. smooth is per input channel, so it is input-sharded
// like W; scale is per output channel and the same on every rank. Activations are quantized
// per token at run time; in the row-parallel form the token's amax is the max over the
// ranks' input slices (one all-gather of [tokens] floats), so every rank quantizes exactly
// as the unsplit projection does and the TP sum equals the full projection up to f32
// rounding — the same int8 model whatever T and whatever path (row-parallel or full).
//
// DSA-CP (DESIGN.md §4 "DSA-CP and the o_proj path"): prefill and mixed steps run the full
// o_proj on a rank's own tokens. use_full_weight() all-gathers the shard — and the int8
// smoothing, the one input-sharded quantization parameter; the scale is copied — into a
// FullWeightWorkspace and switches this projection's alias to that full weight until the
// returned FullWeight is destroyed, which restores the TP shard alias on every exit path,
// exceptions included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/kernels/linear.h"
#include "ctxpar/kernels/linear_fp8.h"
#include "ctxpar/kernels/linear_int8.h"
#include "ctxpar/model/layers/full_weight_workspace.h"
#include "ctxpar/model/layers/model_context.h"

namespace ctxpar::model {

class OutputProjection {
 public:
  // full_shape: [out, in]; in must be divisible by T. No bias (DeepSeek's o_proj has none).
  OutputProjection(const ModelContext& ctx, const std::string& name, const Shape& full_shape);

  int64_t in_features() const { return in_; }  // the full input width
  int64_t out_features() const { return out_; }

  // Row-parallel, with the shard alias: x [tokens, in / T] f32 (this rank's input columns)
  // → this rank's partial [tokens, out] f32, to be summed over the TP group (reduce(), or a
  // reduce-scatter over tokens). A collective for int8 (the amax exchange).
  Tensor forward_partial(const Tensor& x) const;
  void reduce(Tensor& partial) const;     // all-reduce over the TP group
  Tensor forward(const Tensor& x) const;  // forward_partial + reduce

  // While alive, the projection's alias is the full weight gathered into a workspace.
  class FullWeight {
   public:
    FullWeight(const FullWeight&) = delete;
    FullWeight& operator=(const FullWeight&) = delete;
    ~FullWeight();  // restores the TP shard alias

   private:
    friend class OutputProjection;
    explicit FullWeight(OutputProjection& projection) : projection_(projection) {}
    OutputProjection& projection_;
  };
  // Collective over the TP group (every rank calls it for the same layer).
  [[nodiscard]] FullWeight use_full_weight(FullWeightWorkspace& workspace);
  // With the full alias: x [tokens, in] f32 → y [tokens, out] f32, complete (no reduction).
  Tensor forward_full(const Tensor& x) const;

  // For tests and tools: whether the full alias is active, the persistent shard tensors
  // ([out, in / T] weight; int8 adds the [out] scale and the [in / T] smoothing), and the
  // weight the current alias reads.
  bool full_weight_active() const { return full_dense_ != nullptr || full_int8_ != nullptr; }
  std::vector<const Tensor*> persistent_tensors() const;
  const Tensor& active_weight() const;

 private:
  ModelContext ctx_;
  int64_t out_ = 0, in_ = 0;
  std::optional<kernels::Linear> dense_;     // the shard, f32 / bf16
  std::optional<kernels::Fp8Linear> fp8_;    // the shard, FP8 (row-parallel use only)
  std::optional<kernels::Int8Linear> int8_;  // the shard, int8
  // The alias to the full weight while a FullWeight is alive, else null.
  const kernels::Linear* full_dense_ = nullptr;
  const kernels::Int8Linear* full_int8_ = nullptr;
};

}  // namespace ctxpar::model
