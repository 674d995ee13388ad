// Int8 linear, W8A8 style (SmoothQuant): int8 weights with per-output-channel scales, and
// activations quantized to int8 per token at run time.
//
// The exact math, per token t (every step in f32 unless said otherwise):
//   xs[t, i] = x[t, i] / input_smooth[i]             (xs = x when there is no smoothing)
//   amax[t]  = max_i |xs[t, i]|
//   sx[t]    = amax[t] / 127, or 1 when amax[t] == 0 (then every q is 0)
//   q[t, i]  = clamp(nearbyint(xs[t, i] / sx[t]), -127, 127)   (ties to even) as int8
//   acc[t,o] = Σ_i q[t, i]·w[o, i]                       (exact, int32)
//   y[t, o]  = acc[t, o]·weight_scale[o]·sx[t] + bias[o]
// So y ≈ (x / smooth)·(w·weight_scale)ᵀ: a checkpoint that folded `smooth` into the weights
// undoes it here. x must be finite; in <= 133000 so the int32 sum cannot overflow.
//
// Where the product runs: oneDNN's s8 × s8 → s32 matmul (weight scale as its per-column output
// scale) on CPUs where it is exact, i.e. with VNNI. Without VNNI oneDNN's 16-bit pair sums
// saturate for full-range operands, so ctxpar runs its own exact AVX2 int8 kernel instead.
//
// Memory and threads as for Linear (linear.h): the given tensors are kept, never copied;
// forward may run concurrently from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels {

class Int8Linear {
 public:
  // weight [out, in] int8 (last dim contiguous); weight_scale [out] f32; input_smooth [in] f32,
  // every entry finite and non-zero, or nullopt for none; bias [out] f32 or nullopt.
  Int8Linear(Tensor weight, Tensor weight_scale, std::optional<Tensor> input_smooth,
             std::optional<Tensor> bias = std::nullopt);
  ~Int8Linear();
  Int8Linear(Int8Linear&&) noexcept;
  Int8Linear& operator=(Int8Linear&&) noexcept;

  // x [tokens, in] f32 (last dim contiguous, rows may be strided) → y [tokens, out] f32 (last
  // dim contiguous, preallocated, not overlapping x).
  void forward(const Tensor& x, Tensor& y) const;
  // Same, with ctxpar's own kernels (if this CPU needs them) split over `pool`.
  void forward(const Tensor& x, Tensor& y, ThreadPool& pool) const;
  Tensor forward(const Tensor& x) const;
  // Same, with amax[t] given instead of computed from x (token_amax [tokens] f32, each >= the
  // row's own max |xs|, which the quantization then clamps to). A row-parallel layer passes
  // the max over the ranks of the whole input row (each rank's from
  // smoothed_absmax_per_token), so every rank quantizes with the scale an unsplit layer
  // would use and the sum of the ranks' outputs equals the unsplit output up to f32 rounding.
  void forward_with_amax(const Tensor& x, const Tensor& token_amax, Tensor& y,
                         ThreadPool& pool) const;

  int64_t in_features() const;
  int64_t out_features() const;
  const Tensor& weight() const;
  const Tensor& weight_scale() const;
  const std::optional<Tensor>& input_smooth() const;
  const std::optional<Tensor>& bias() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The activation half of the math above on its own: x [tokens, in] f32, input_smooth [in] f32
// or null → q [tokens, in] int8 and token_scale [tokens] f32 (= sx), both preallocated.
void quantize_per_token(const Tensor& x, const Tensor* input_smooth, Tensor& q,
                        Tensor& token_scale);

// amax [tokens] f32 (preallocated) = max_i |x[t, i] / input_smooth[i]| per token, as the
// math above computes it (input_smooth [in] f32 or null).
void smoothed_absmax_per_token(const Tensor& x, const Tensor* input_smooth, Tensor& amax);

// Reference of the whole math above: the quantization in scalar f32 exactly as written, the
// dot products and scaling in double. Same shapes as Int8Linear.
void int8_linear_reference(const Tensor& x, const Tensor& weight, const Tensor& weight_scale,
                           const Tensor* input_smooth, const Tensor* bias, Tensor& y);

}  // namespace ctxpar::kernels
