// Linear layer over FP8 weights, kept FP8 in memory: y = x · Wᵀ (+ bias) with either
//   W[o, i] = e4m3(Wq[o, i]) · scale_inv[o / 128, i / 128]   (Fp8Scaling::kBlock128)
// as DeepSeek-V3-style checkpoints store them (quantization_config quant_method fp8, fmt e4m3,
// weight_block_size [128, 128]; "scale_inv" multiplies, whatever its name says; edge blocks of
// a dimension that is not a multiple of 128 are partial), or
//   W[o, i] = e4m3(Wq[o, i]) · scale_inv[o, 0]                (Fp8Scaling::kPerRow)
// as per-channel (compressed-tensors strategy "channel", fbgemm_fp8) and per-tensor (AutoFP8,
// strategy "tensor": one scale, repeated per row by the loader) checkpoints store them.
//
// Paths (chosen per call by the token count):
//   decode with bf16 activations on AMX, 3 to 64 tokens: the tile unit (linear_fp8_amx.cc),
//     e4m3 widened to bf16 32 rows × 128 values at a time, 32 tokens per pass;
//   decode, tokens <= 16 otherwise: a GEMV that streams each weight row once (more than 4
//     tokens: further passes over each L2-resident row block), widening e4m3 to f32 in
//     registers (AVX-512 / AVX2 / scalar, picked at run time; linear_fp8_kernel.h), several
//     rows per iteration with every token's activations in registers. The block scales are
//     folded into a per-128-row-block copy of x, so the inner loop is a plain dot product;
//     per-row scales multiply the finished outputs.
//   prefill, more tokens, 512 at a time: on AVX2 ctxpar's own GEMM (linear_gemm.h), which
//     dequantizes W one 16-row panel at a time while packing it; with bf16 activations where
//     bf16 dot products are fast, W in bf16 and oneDNN's bf16 matmul over the whole of K;
//     otherwise tiles of up to 512 rows of W dequantized to f32 and oneDNN's f32 matmul.
// Numerics: products and sums in f32. With activation dtype bf16 (vLLM's --dtype bfloat16 for
// an FP8 checkpoint: W8A16) x is first rounded to bf16, as for bf16 Linear weights. The bf16
// prefill also holds W in bf16: exact for per-row and power-of-two block scales (ue8m0),
// rounded to nearest for other block scales (rounds_weights_to_bf16 says when).
//
// Memory: the given tensors are kept (shared storage, never copied or reordered): the FP8
// bytes are the one persistent copy. Threads: forward may run concurrently on one object; the
// GEMV splits its row blocks over the pool passed to forward, the prefill its output rows
// (each task dequantizes its own tiles into a per-thread scratch of at most 16 MiB).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels {

// The one block shape the kernels run.
inline constexpr int64_t kFp8BlockSize = 128;

// How an FP8 weight's scale_inv maps onto its rows and columns.
enum class Fp8Scaling {
  kBlock128,  // scale_inv [ceil(out/128), ceil(in/128)]: one scale per 128×128 block
  kPerRow,    // scale_inv [out, 1]: one scale per output row (channel)
};

// An FP8 weight as stored: weight [out, in] float8_e4m3fn and its f32 scale_inv, shaped as
// fp8_scale_shape(out, in, scaling) says.
struct Fp8Weight {
  Tensor weight;
  Tensor scale_inv;
  Fp8Scaling scaling = Fp8Scaling::kBlock128;
};

// scale_inv's shape for a weight of [out, in].
Shape fp8_scale_shape(int64_t out, int64_t in, Fp8Scaling scaling = Fp8Scaling::kBlock128);
std::string_view fp8_scaling_name(Fp8Scaling scaling);

class Fp8Linear {
 public:
  // w.weight [out, in] kF8E4M3 with contiguous rows (row stride may exceed in); w.scale_inv
  // contiguous f32 of fp8_scale_shape(out, in, w.scaling) with finite entries; bias [out] f32
  // optional; activation_dtype f32 or bf16. Throws Error naming the shapes / dtypes otherwise.
  Fp8Linear(Fp8Weight w, std::optional<Tensor> bias = std::nullopt,
            DType activation_dtype = DType::kF32);
  ~Fp8Linear();
  Fp8Linear(Fp8Linear&&) noexcept;
  Fp8Linear& operator=(Fp8Linear&&) noexcept;

  // x [tokens, in] f32 (last dim contiguous, rows may be strided) → y [tokens, out] f32
  // (preallocated, last dim contiguous, not overlapping x). tokens may be 0.
  void forward(const Tensor& x, Tensor& y) const;
  // Same, with the GEMV's row blocks split over `pool` (not used reentrantly).
  void forward(const Tensor& x, Tensor& y, ThreadPool& pool) const;
  Tensor forward(const Tensor& x) const;

  int64_t in_features() const;
  int64_t out_features() const;
  const Tensor& weight() const;     // [out, in] kF8E4M3, exactly the tensor given
  const Tensor& scale_inv() const;  // fp8_scale_shape(out, in, scaling()) f32
  Fp8Scaling scaling() const;
  const std::optional<Tensor>& bias() const;
  DType activation_dtype() const;
  // The kernel forward runs over `tokens` rows: "amx" (the tile kernel), "gemv-bf16" (AVX-512
  // BF16 dot products), "gemv" (widened to f32) or "prefill" (dequantized tiles into a GEMM).
  std::string_view kernel_for(int64_t tokens) const;
  // Whether forward over `tokens` rows uses W rounded to bf16 (the bf16 prefill with block
  // scales that are not all powers of two) rather than its exact f32 values.
  bool rounds_weights_to_bf16(int64_t tokens) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// W as f32 [out, in] (e4m3 value times its block's or row's scale).
Tensor dequantize_fp8(const Fp8Weight& w);

// Block-quantizes f32 w [out, in] to FP8 as DeepSeek's tools do: per 128×128 block
// scale = amax / 448 (1 for an all-zero block; rounded up to a power of two when ue8m0), then
// Wq = e4m3(W / scale). The result dequantizes to within e4m3 rounding of w.
Fp8Weight quantize_fp8(const Tensor& w, bool ue8m0 = false);
// Per-row quantization as llm-compressor's "channel" strategy: per output row scale = amax / 448
// (1 for an all-zero row), Wq = e4m3(W / scale); scaling kPerRow.
Fp8Weight quantize_fp8_per_row(const Tensor& w);

// Double-precision reference: y[t, o] = Σ_i x[t, i]·W[o, i] (+ bias[o]) with W dequantized
// exactly (or, with round_weights, each e4m3 · scale rounded to bf16); x rounded to bf16 first
// when activation_dtype is bf16. Shapes as Fp8Linear.
void fp8_linear_reference(const Tensor& x, const Fp8Weight& w, const Tensor* bias,
                          DType activation_dtype, Tensor& y, bool round_weights = false);

}  // namespace ctxpar::kernels
