#include "ctxpar/kernels/linear_fp8.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/isa_dispatch.h"
#include "ctxpar/kernels/linear_direct_split.h"
#include "ctxpar/kernels/linear_fp8_kernel.h"
#include "ctxpar/kernels/linear_gemm.h"
#include "ctxpar/kernels/linear_gemv.h"
#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels {
namespace detail {

const float* e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b)
      t[static_cast<size_t>(b)] = fp8_e4m3::to_f32(static_cast<uint8_t>(b));
    return t;
  }();
  return table.data();
}

bool fp8_gemv_bf16_usable() {
  return cpu_features().avx512_bf16 && cpu_features().avx512_vbmi && active_isa() >= Isa::kAvx512;
}

const Fp8Kernels& fp8_kernels(Isa isa) {
  return *for_isa(isa, &kFp8KernelsScalar, &kFp8KernelsAvx2, &kFp8KernelsAvx512);
}

}  // namespace detail

namespace {

using detail::kFp8Block;

// Up to this many tokens the GEMV (passes of kFp8GemvMaxTokens over each L2-resident row block)
// beats the prefill path, whose conversion pass costs the same for any token count (fp8_bench
// Fp8Gemv 7168 × 18432, 1 thread, AMX Xeon VM, bf16 activations without the tile kernel: 8
// tokens 26 ms against 73, 16 tokens 52 against 77, 32 tokens 99 against 92).
constexpr int64_t kGemvMaxCallTokens = 16;
// From kAmxMinTokens to kAmxMaxTokens tokens, with bf16 activations at Isa::kAmx, the tile
// kernel (detail::fp8_gemm_amx, in passes of detail::kFp8AmxMaxTokens) runs instead (fp8_bench
// Fp8Gemv 7168 × 18432, 1 thread: 3 tokens 10.2 ms against the GEMV's 10.5, 2 tokens 9.9
// against 8.8; 32 tokens 18.6 ms, so two passes for 64 beat the prefill path's 94 ms).
constexpr int64_t kAmxMinTokens = 3;
constexpr int64_t kAmxMaxTokens = 2 * detail::kFp8AmxMaxTokens;

// Weight rows widened to f32 at a time on the way to a bf16 tile (stays in L2).
constexpr int64_t kConvertRows = 16;
// Weight rows per panel of the native bf16 prefill: one K block's product and the y block it
// is added to ([512 tokens, 256] f32 each) stay in L2.
constexpr int64_t kNativePanel = 256;

int64_t blocks(int64_t n) {
  return (n + kFp8Block - 1) / kFp8Block;
}

int64_t row_stride(const Tensor& t) {
  return t.size(0) <= 1 ? t.size(1) : t.stride(0);
}

// y[t, j] *= s[j] for t < tokens, j < n (y row stride ldy): per-row scales on finished outputs.
void scale_outputs(float* y, int64_t ldy, int64_t tokens, const float* s, int64_t n) {
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < n; ++j) y[t * ldy + j] *= s[j];
  }
}

// Whether every scale is a power of two far enough from bf16's range ends that e4m3 values
// times it are exact bf16 values (ue8m0 checkpoints).
bool exact_in_bf16(const Tensor& scales) {
  for (int64_t i = 0; i < scales.numel(); ++i) {
    int e = 0;
    if (std::frexp(scales.data<float>()[i], &e) != 0.5f || e < -100 || e > 100) return false;
  }
  return true;
}

// dst [tokens, in] (row stride in) = src [tokens, in] (row stride ld) rounded to bf16, kept f32.
void round_to_bf16(const float* src, int64_t ld, int64_t tokens, int64_t in, float* dst) {
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < in; ++i)
      dst[t * in + i] = bf16::to_f32(bf16::from_f32(src[t * ld + i]));
  }
}

// The own GEMM's view of the FP8 weight (linear_gemm.h GemmWeights::rows_f32): rows counted
// from row0, dequantized by the ISA's kernel.
struct Fp8RowSource {
  const detail::Fp8Kernels* kernels;
  const uint8_t* wq;
  int64_t ldw;
  const float* scale;
  int64_t lds;
  int64_t row0;
};
static_assert(detail::kGemmDepth % kFp8Block == 0, "a GEMM depth block starts a scale block");

void fp8_rows_f32(const void* ctx, int64_t r0, int64_t nr, int64_t k0, int64_t kc, float* out,
                  int64_t ldo) {
  const auto& src = *static_cast<const Fp8RowSource*>(ctx);
  // dequantize reads columns from 0: offset W and the scale row to k0, a block boundary.
  src.kernels->dequantize(src.wq + k0, src.ldw, src.scale + k0 / kFp8Block, src.lds, kc,
                          src.row0 + r0, nr, out, ldo);
}

}  // namespace

Shape fp8_scale_shape(int64_t out, int64_t in, Fp8Scaling scaling) {
  if (scaling == Fp8Scaling::kPerRow) return {out, 1};
  return {blocks(out), blocks(in)};
}

std::string_view fp8_scaling_name(Fp8Scaling scaling) {
  return scaling == Fp8Scaling::kPerRow ? "per-row" : "128x128 blocks";
}

struct Fp8Linear::Impl {
  Fp8Weight w;
  std::optional<Tensor> bias;
  DType activation_dtype = DType::kF32;
  int64_t in = 0, out = 0;
  detail::MatmulCache cache;
  // The block scales the kernels apply: scale_inv for kBlock128; for kPerRow ones (read with
  // row stride 0), the row scales then multiplying the outputs.
  std::vector<float> unit_scales;

  bool per_row() const { return w.scaling == Fp8Scaling::kPerRow; }
  const float* block_scales() const {
    return per_row() ? unit_scales.data() : w.scale_inv.data<float>();
  }
  int64_t block_scale_stride() const { return per_row() ? 0 : blocks(in); }
  // Rows [r0, r0 + n) of y's tokens [t0, t0 + nt) times their row scales (kPerRow only).
  void scale_rows(float* y, int64_t ldy, int64_t t0, int64_t nt, int64_t r0, int64_t n) const {
    if (per_row()) scale_outputs(y + t0 * ldy + r0, ldy, nt, w.scale_inv.data<float>() + r0, n);
  }

  // run(b0, b1) over the 128-row blocks [0, blocks(out)), split over the pool where it has
  // several threads and there are several blocks.
  template <class Run>
  void over_row_blocks(ThreadPool* pool, const Run& run) const {
    const int64_t row_blocks = blocks(out);
    if (pool != nullptr && pool->num_threads() > 1 && row_blocks > 1) {
      pool->parallel_for(row_blocks, 1, [&](int64_t b0, int64_t b1, int) { run(b0, b1); });
    } else {
      run(0, row_blocks);
    }
  }

  void forward(const Tensor& x, Tensor& y, ThreadPool* pool) const;
  void gemv(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
            ThreadPool* pool) const;
  // bf16 activations on a CPU with AVX-512 BF16 and VBMI: detail::fp8_gemv_bf16 over x prepared
  // once by the calling thread, rows split over the pool in 128-row blocks.
  void gemv_bf16(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                 ThreadPool* pool) const;
  enum class Route { kAmx, kGemvBf16, kGemv, kPrefill };
  // Which kernel forward runs over `tokens` rows (Fp8Linear::kernel_for names it).
  Route route(int64_t tokens) const {
    const bool bf16_x = activation_dtype == DType::kBF16;
    if (bf16_x && active_isa() == Isa::kAmx && tokens >= kAmxMinTokens && tokens <= kAmxMaxTokens) {
      return Route::kAmx;
    }
    if (tokens > kGemvMaxCallTokens) return Route::kPrefill;
    return bf16_x && detail::fp8_gemv_bf16_usable() ? Route::kGemvBf16 : Route::kGemv;
  }
  // Rows split over the pool in 128-row blocks, x prepared by the calling thread, a pass of up
  // to detail::kFp8AmxMaxTokens tokens at a time.
  void gemm_amx(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                ThreadPool* pool) const;
  void prefill(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
               ThreadPool* pool) const;
  void prefill_own(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                   ThreadPool* pool) const;
  // bf16 activations where oneDNN has a native bf16 matmul (AVX-512 BF16 / AMX): W as bf16
  // (e4m3 times its block scale, or unscaled with per-row scales, which then multiply y) and
  // one bf16 matmul over the whole of K (fp8_bench Fp8Prefill, 512 tokens, 1 thread:
  // 0.93-0.95 of the bf16 GEMM on the same weights). With per-row or power-of-two block
  // scales (ue8m0) W is exact in bf16; other block scales round it to bf16 (a relative 2^-9
  // per weight, as the bf16 activations are; transformers' bf16 dequantization rounds alike).
  // One matmul per 128-wide K block, which kept those products exact, ran at 0.58-0.64.
  void prefill_native_bf16(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                           ThreadPool* pool) const;
  // W is not exact in bf16 (block scales that are not all powers of two).
  bool rounds_w_in_bf16 = false;
};

Fp8Linear::Fp8Linear(Fp8Weight w, std::optional<Tensor> bias, DType activation_dtype)
    : impl_(std::make_unique<Impl>()) {
  const Tensor& q = w.weight;
  CTXPAR_CHECK(q.defined() && q.ndim() == 2 && q.dtype() == DType::kF8E4M3,
               "Fp8Linear weight must be float8_e4m3fn [out, in], got {}",
               q.defined() ? q.describe() : "an undefined tensor");
  CTXPAR_CHECK(q.size(0) >= 1 && q.size(1) >= 1, "Fp8Linear weight {} is empty", q.describe());
  CTXPAR_CHECK(q.stride(1) == 1 && row_stride(q) >= q.size(1),
               "Fp8Linear weight {} needs contiguous rows (strides [{}, {}])", q.describe(),
               q.stride(0), q.stride(1));
  const Shape want = fp8_scale_shape(q.size(0), q.size(1), w.scaling);
  const Tensor& s = w.scale_inv;
  CTXPAR_CHECK(s.defined() && s.dtype() == DType::kF32 && s.shape() == want && s.is_contiguous(),
               "Fp8Linear scale_inv for weight {} must be a contiguous float32{} ({}), got {}",
               q.describe(), shape_str(want), fp8_scaling_name(w.scaling),
               s.defined() ? s.describe() : "an undefined tensor");
  for (int64_t i = 0; i < s.numel(); ++i) {
    CTXPAR_CHECK(std::isfinite(s.data<float>()[i]),
                 "Fp8Linear scale_inv {} holds a non-finite value {} at {} {}", s.describe(),
                 s.data<float>()[i], w.scaling == Fp8Scaling::kPerRow ? "row" : "block", i);
  }
  if (bias) {
    CTXPAR_CHECK(bias->defined() && bias->ndim() == 1 && bias->size(0) == q.size(0) &&
                     bias->dtype() == DType::kF32 && bias->is_contiguous(),
                 "Fp8Linear bias must be a contiguous float32[{}], got {}", q.size(0),
                 bias->defined() ? bias->describe() : "an undefined tensor");
  }
  CTXPAR_CHECK(activation_dtype == DType::kF32 || activation_dtype == DType::kBF16,
               "Fp8Linear activations are float32 or bfloat16, not {}",
               dtype_name(activation_dtype));
  impl_->in = q.size(1);
  impl_->out = q.size(0);
  impl_->w = std::move(w);
  impl_->bias = std::move(bias);
  impl_->activation_dtype = activation_dtype;
  if (impl_->per_row()) impl_->unit_scales.assign(static_cast<size_t>(blocks(impl_->in)), 1.0f);
  impl_->rounds_w_in_bf16 = !impl_->per_row() && !exact_in_bf16(impl_->w.scale_inv);
}

Fp8Linear::~Fp8Linear() = default;
Fp8Linear::Fp8Linear(Fp8Linear&&) noexcept = default;
Fp8Linear& Fp8Linear::operator=(Fp8Linear&&) noexcept = default;

int64_t Fp8Linear::in_features() const {
  return impl_->in;
}
int64_t Fp8Linear::out_features() const {
  return impl_->out;
}
const Tensor& Fp8Linear::weight() const {
  return impl_->w.weight;
}
const Tensor& Fp8Linear::scale_inv() const {
  return impl_->w.scale_inv;
}
Fp8Scaling Fp8Linear::scaling() const {
  return impl_->w.scaling;
}
const std::optional<Tensor>& Fp8Linear::bias() const {
  return impl_->bias;
}

bool Fp8Linear::rounds_weights_to_bf16(int64_t tokens) const {
  return impl_->rounds_w_in_bf16 && impl_->activation_dtype == DType::kBF16 &&
         impl_->route(tokens) == Impl::Route::kPrefill && detail::onednn_native_bf16();
}

DType Fp8Linear::activation_dtype() const {
  return impl_->activation_dtype;
}

std::string_view Fp8Linear::kernel_for(int64_t tokens) const {
  switch (impl_->route(tokens)) {
    case Impl::Route::kAmx:
      return "amx";
    case Impl::Route::kGemvBf16:
      return "gemv-bf16";
    case Impl::Route::kGemv:
      return "gemv";
    case Impl::Route::kPrefill:
      break;
  }
  return "prefill";
}

void Fp8Linear::forward(const Tensor& x, Tensor& y) const {
  impl_->forward(x, y, nullptr);
}

void Fp8Linear::forward(const Tensor& x, Tensor& y, ThreadPool& pool) const {
  impl_->forward(x, y, &pool);
}

Tensor Fp8Linear::forward(const Tensor& x) const {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2, "Fp8Linear input must be 2-D [tokens, {}], got {}",
               impl_->in, x.defined() ? x.describe() : "an undefined tensor");
  Tensor y = Tensor::empty({x.size(0), impl_->out}, DType::kF32);
  forward(x, y);
  return y;
}

void Fp8Linear::Impl::forward(const Tensor& x, Tensor& y, ThreadPool* pool) const {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && x.dtype() == DType::kF32 && x.size(1) == in &&
                   x.stride(1) == 1 && row_stride(x) >= in,
               "Fp8Linear input must be float32[tokens, {}] with a contiguous last dim, got {}", in,
               x.defined() ? x.describe() : "an undefined tensor");
  CTXPAR_CHECK(y.defined() && y.ndim() == 2 && y.dtype() == DType::kF32 && y.size(0) == x.size(0) &&
                   y.size(1) == out && (y.stride(1) == 1 || out == 1) && row_stride(y) >= out,
               "Fp8Linear output must be float32[{}, {}] with a contiguous last dim, got {}",
               x.size(0), out, y.defined() ? y.describe() : "an undefined tensor");
  const int64_t tokens = x.size(0);
  if (tokens == 0) return;
  float* yp = y.data<float>();
  const int64_t ldy = row_stride(y);
  const Route r = route(tokens);
  if (r == Route::kAmx) {
    gemm_amx(x.data<float>(), row_stride(x), tokens, yp, ldy, pool);
  } else if (r == Route::kGemvBf16) {
    gemv_bf16(x.data<float>(), row_stride(x), tokens, yp, ldy, pool);
  } else if (r == Route::kGemv) {
    const float* xp = x.data<float>();
    int64_t ldx = row_stride(x);
    thread_local std::vector<float> rounded;  // [tokens, in]: x rounded to bf16
    if (activation_dtype == DType::kBF16) {
      rounded.resize(static_cast<size_t>(tokens * in));
      round_to_bf16(xp, ldx, tokens, in, rounded.data());
      xp = rounded.data();
      ldx = in;
    }
    gemv(xp, ldx, tokens, yp, ldy, pool);
  } else {
    prefill(x.data<float>(), row_stride(x), tokens, yp, ldy, pool);
  }
  if (bias) {
    const float* b = bias->data<float>();
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t o = 0; o < out; ++o) yp[t * ldy + o] += b[o];
    }
  }
}

void Fp8Linear::Impl::gemv(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                           ThreadPool* pool) const {
  const detail::Fp8Kernels& k = detail::fp8_kernels(active_isa());
  const auto* wq = static_cast<const uint8_t*>(w.weight.raw());
  const int64_t ldw = row_stride(w.weight);
  const float* scale = block_scales();
  const int64_t lds = block_scale_stride();
  const auto run = [&](int64_t b0, int64_t b1) {
    thread_local std::vector<float> xs;  // [tokens, in]: x · this row block's scales
    xs.resize(static_cast<size_t>(tokens * in));
    for (int64_t b = b0; b < b1; ++b) {
      // Per-row weights share one xs (unit block scales) over all row blocks.
      if (b == b0 || !per_row())
        k.scale_x(x, ldx, static_cast<int>(tokens), in, scale + b * lds, xs.data());
      const int64_t r0 = b * kFp8Block, nr = std::min(kFp8Block, out - r0);
      k.gemv(xs.data(), in, static_cast<int>(tokens), wq, ldw, in, r0, nr, y, ldy);
      scale_rows(y, ldy, 0, tokens, r0, nr);
    }
  };
  over_row_blocks(pool, run);
}

void Fp8Linear::Impl::gemv_bf16(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                                ThreadPool* pool) const {
  thread_local std::vector<uint16_t> prepared;  // the calling thread's, read by the pool's tasks
  prepared.resize(static_cast<size_t>(tokens * detail::fp8_bf16_x_stride(in)));
  detail::fp8_prepare_x_bf16(x, ldx, static_cast<int>(tokens), in, prepared.data());
  const uint16_t* xp = prepared.data();
  const auto* wq = static_cast<const uint8_t*>(w.weight.raw());
  const int64_t ldw = row_stride(w.weight);
  const float* scale = block_scales();
  const int64_t lds = block_scale_stride();
  const auto run = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * kFp8Block, nr = std::min(kFp8Block, out - r0);
      detail::fp8_gemv_bf16(
          {xp, static_cast<int>(tokens), in, wq, ldw, scale + b * lds, r0, nr, y, ldy});
      scale_rows(y, ldy, 0, tokens, r0, nr);
    }
  };
  over_row_blocks(pool, run);
}

void Fp8Linear::Impl::gemm_amx(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                               ThreadPool* pool) const {
  thread_local std::vector<float> prepared;  // the calling thread's, read by the pool's tasks
  for (int64_t t0 = 0; t0 < tokens; t0 += detail::kFp8AmxMaxTokens) {
    const int64_t nt = std::min<int64_t>(detail::kFp8AmxMaxTokens, tokens - t0);
    prepared.resize(static_cast<size_t>(nt * in));
    detail::gemv_prepare_x_amx(x + t0 * ldx, ldx, nt, in, prepared.data());
    detail::Fp8AmxArgs a;
    a.xp = prepared.data();
    a.tokens = nt;
    a.k = in;
    a.w = static_cast<const uint8_t*>(w.weight.raw());
    a.ldw = row_stride(w.weight);
    a.scale = block_scales();
    a.lds = block_scale_stride();
    a.y = y + t0 * ldy;
    a.ldy = ldy;
    const auto run = [&](int64_t b0, int64_t b1) {
      detail::Fp8AmxArgs part = a;
      part.r0 = b0 * kFp8Block;
      part.nr = std::min(b1 * kFp8Block, out) - part.r0;
      detail::fp8_gemm_amx(part);
      scale_rows(a.y, ldy, 0, nt, part.r0, part.nr);
    };
    over_row_blocks(pool, run);
  }
}

void Fp8Linear::Impl::prefill(const float* x, int64_t ldx, int64_t tokens, float* y, int64_t ldy,
                              ThreadPool* pool) const {
  const bool round = activation_dtype == DType::kBF16;
  if (round && detail::onednn_native_bf16()) {
    prefill_native_bf16(x, ldx, tokens, y, ldy, pool);
    return;
  }
  if (active_isa() == Isa::kAvx2) {
    prefill_own(x, ldx, tokens, y, ldy, pool);
    return;
  }
  const detail::Fp8Kernels& k = detail::fp8_kernels(active_isa());
  const auto* wq = static_cast<const uint8_t*>(w.weight.raw());
  const int64_t ldw = row_stride(w.weight);
  thread_local std::vector<float> rounded;  // [<= kOneDnnTokenChunk, in]: a chunk of x in bf16
  if (round) rounded.resize(static_cast<size_t>(std::min(tokens, detail::kOneDnnTokenChunk) * in));
  const float* xr = rounded.data();  // the calling thread's buffer, read by the pool's tasks
  detail::for_token_chunks(
      pool, tokens, out, detail::kOneDnnTokenChunk,
      [&](int64_t t0, int64_t nt) {
        if (round) round_to_bf16(x + t0 * ldx, ldx, nt, in, rounded.data());
      },
      [&](int64_t t0, int64_t nt, int64_t o0, int64_t no) {
        const int64_t rows_per_tile = detail::f32_tile_rows(in);
        thread_local std::vector<float> tile;  // this pool thread's [rows_per_tile, in]
        tile.resize(static_cast<size_t>(rows_per_tile * in));
        for (int64_t r0 = o0; r0 < o0 + no; r0 += rows_per_tile) {
          const int64_t nr = std::min(rows_per_tile, o0 + no - r0);
          k.dequantize(wq, ldw, block_scales(), block_scale_stride(), in, r0, nr, tile.data(), in);
          detail::MatmulShape s;
          s.m = nt;
          s.k = in;
          s.n = nr;
          s.lda = round ? in : ldx;
          s.ldw = in;
          s.ldc = ldy;
          cache.run(s, round ? xr : x + t0 * ldx, tile.data(), nullptr, nullptr, y + t0 * ldy + r0);
          scale_rows(y, ldy, t0, nt, r0, nr);
        }
      });
}

// The own GEMM (AVX2): x packed per chunk (rounded to bf16 for W8A16), W dequantized one
// panel at a time while it is packed.
void Fp8Linear::Impl::prefill_own(const float* x, int64_t ldx, int64_t tokens, float* y,
                                  int64_t ldy, ThreadPool* pool) const {
  const bool round = activation_dtype == DType::kBF16;
  const detail::Fp8Kernels& k = detail::fp8_kernels(Isa::kAvx2);
  const auto* wq = static_cast<const uint8_t*>(w.weight.raw());
  const int64_t ldw = row_stride(w.weight);
  thread_local std::vector<float> x_packed;  // one chunk, read by the pool's tasks
  x_packed.resize(static_cast<size_t>(
      detail::gemm_packed_x_floats(std::min(tokens, detail::kOneDnnTokenChunk), in)));
  float* packed = x_packed.data();
  detail::for_token_chunks(
      pool, tokens, out, detail::kOneDnnTokenChunk,
      [&](int64_t t0, int64_t nt) {
        detail::gemm_pack_x(x + t0 * ldx, ldx, nt, in, round, packed);
      },
      [&](int64_t t0, int64_t nt, int64_t o0, int64_t no) {
        const Fp8RowSource src{&k, wq, ldw, block_scales(), block_scale_stride(), o0};
        detail::GemmArgs a;
        a.xp = packed;
        a.tokens = nt;
        a.k = in;
        a.w.rows_f32 = fp8_rows_f32;
        a.w.ctx = &src;
        a.n = no;
        a.bias = nullptr;  // forward adds it
        a.y = y + t0 * ldy + o0;
        a.ldy = ldy;
        detail::gemm(Isa::kAvx2, a);
        scale_rows(y, ldy, t0, nt, o0, no);
      });
}

void Fp8Linear::Impl::prefill_native_bf16(const float* x, int64_t ldx, int64_t tokens, float* y,
                                          int64_t ldy, ThreadPool* pool) const {
  const detail::Fp8Kernels& k = detail::fp8_kernels(active_isa());
  const auto* wq = static_cast<const uint8_t*>(w.weight.raw());
  const int64_t ldw = row_stride(w.weight);
  thread_local std::vector<bf16> xb;  // a chunk of x in bf16 [nt, in]
  xb.resize(static_cast<size_t>(std::min(tokens, detail::kOneDnnTokenChunk) * in));
  const bf16* xp = xb.data();  // the calling thread's buffer, read by the pool's tasks
  detail::for_token_chunks(
      pool, tokens, out, detail::kOneDnnTokenChunk,
      [&](int64_t t0, int64_t nt) {
        for (int64_t t = 0; t < nt; ++t) {
          for (int64_t i = 0; i < in; ++i) xb[t * in + i] = bf16(x[(t0 + t) * ldx + i]);
        }
      },
      [&](int64_t t0, int64_t nt, int64_t o0, int64_t no) {
        // This pool thread's panel of weight rows as bf16 [rows, in] (e4m3 times its block
        // scale, or unscaled), a few rows first widened to f32.
        thread_local std::vector<uint16_t> panel;
        thread_local std::vector<float> rows_f32;
        panel.resize(static_cast<size_t>(kNativePanel * in));
        rows_f32.resize(static_cast<size_t>(kConvertRows * in));
        for (int64_t r0 = o0; r0 < o0 + no; r0 += kNativePanel) {
          const int64_t nr = std::min(kNativePanel, o0 + no - r0);
          for (int64_t c0 = 0; c0 < nr; c0 += kConvertRows) {
            const int64_t nc = std::min(kConvertRows, nr - c0);
            k.dequantize(wq, ldw, block_scales(), block_scale_stride(), in, r0 + c0, nc,
                         rows_f32.data(), in);
            uint16_t* dst = panel.data() + c0 * in;
            const float* src = rows_f32.data();
            if (rounds_w_in_bf16) {
              // Round to nearest even, without bf16::from_f32's NaN branch (the values are
              // finite), so that the loop vectorizes.
              for (int64_t i = 0; i < nc * in; ++i) {
                const uint32_t u = f32_bits(src[i]);
                dst[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
              }
            } else {  // exact: the low half is zero
              for (int64_t i = 0; i < nc * in; ++i)
                dst[i] = static_cast<uint16_t>(f32_bits(src[i]) >> 16);
            }
          }
          detail::MatmulShape s;
          s.m = nt;
          s.k = in;
          s.n = nr;
          s.lda = in;
          s.ldw = in;
          s.ldc = ldy;
          s.a_type = DType::kBF16;
          s.w_type = DType::kBF16;
          cache.run(s, xp, panel.data(), nullptr, nullptr, y + t0 * ldy + r0);
          scale_rows(y, ldy, t0, nt, r0, nr);
        }
      });
}

Tensor dequantize_fp8(const Fp8Weight& w) {
  const int64_t out = w.weight.size(0), in = w.weight.size(1);
  Tensor result = Tensor::empty({out, in}, DType::kF32);
  const bool per_row = w.scaling == Fp8Scaling::kPerRow;
  const std::vector<float> unit(per_row ? static_cast<size_t>(blocks(in)) : 0, 1.0f);
  detail::fp8_kernels(Isa::kScalar)
      .dequantize(static_cast<const uint8_t*>(w.weight.raw()), row_stride(w.weight),
                  per_row ? unit.data() : w.scale_inv.data<float>(), per_row ? 0 : blocks(in), in,
                  0, out, result.data<float>(), in);
  if (per_row) {
    for (int64_t o = 0; o < out; ++o) {
      const float s = w.scale_inv.data<float>()[o];
      for (int64_t i = 0; i < in; ++i) result.data<float>()[o * in + i] *= s;
    }
  }
  return result;
}

namespace {

// Quantizes the region [o0, o1) × [i0, i1) of p [·, in] into qp with one scale = amax / 448 (1
// for an all-zero region; rounded up to a power of two when ue8m0), which it returns.
float quantize_region(const float* p, int64_t in, int64_t o0, int64_t o1, int64_t i0, int64_t i1,
                      bool ue8m0, uint8_t* qp) {
  float amax = 0;
  for (int64_t o = o0; o < o1; ++o) {
    for (int64_t i = i0; i < i1; ++i) amax = std::max(amax, std::fabs(p[o * in + i]));
  }
  float scale = amax > 0 ? amax / fp8_e4m3::kMax : 1.0f;
  if (ue8m0) scale = std::exp2(std::ceil(std::log2(scale)));
  for (int64_t o = o0; o < o1; ++o) {
    for (int64_t i = i0; i < i1; ++i) qp[o * in + i] = fp8_e4m3::from_f32(p[o * in + i] / scale);
  }
  return scale;
}

Fp8Weight quantize(const Tensor& w, Fp8Scaling scaling, bool ue8m0, const char* caller) {
  CTXPAR_CHECK(w.defined() && w.ndim() == 2 && w.dtype() == DType::kF32,
               "{} takes a float32 [out, in] weight, got {}", caller,
               w.defined() ? w.describe() : "an undefined tensor");
  const Tensor src = w.contiguous();
  const int64_t out = src.size(0), in = src.size(1);
  const float* p = src.data<float>();
  Fp8Weight q{Tensor::empty({out, in}, DType::kF8E4M3),
              Tensor::empty(fp8_scale_shape(out, in, scaling), DType::kF32), scaling};
  auto* qp = static_cast<uint8_t*>(q.weight.raw());
  float* sp = q.scale_inv.data<float>();
  if (scaling == Fp8Scaling::kPerRow) {
    for (int64_t o = 0; o < out; ++o) sp[o] = quantize_region(p, in, o, o + 1, 0, in, ue8m0, qp);
    return q;
  }
  const int64_t cb = blocks(in);
  for (int64_t rb = 0; rb < blocks(out); ++rb) {
    for (int64_t c = 0; c < cb; ++c) {
      sp[rb * cb + c] =
          quantize_region(p, in, rb * kFp8Block, std::min(out, (rb + 1) * kFp8Block), c * kFp8Block,
                          std::min(in, (c + 1) * kFp8Block), ue8m0, qp);
    }
  }
  return q;
}

}  // namespace

Fp8Weight quantize_fp8(const Tensor& w, bool ue8m0) {
  return quantize(w, Fp8Scaling::kBlock128, ue8m0, "quantize_fp8");
}

Fp8Weight quantize_fp8_per_row(const Tensor& w) {
  return quantize(w, Fp8Scaling::kPerRow, false, "quantize_fp8_per_row");
}

}  // namespace ctxpar::kernels
