#include "ctxpar/kernels/linear.h"

#include <algorithm>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/linear_direct_split.h"
#include "ctxpar/kernels/linear_gemm.h"
#include "ctxpar/kernels/linear_gemv.h"
#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels {
namespace {

// Row stride as oneDNN wants it: a single row's stride is meaningless, so use the row length.
int64_t row_stride(const Tensor& t) {
  return t.size(0) <= 1 ? t.size(1) : t.stride(0);
}

}  // namespace

struct Linear::Impl {
  Tensor weight;  // [out, in]
  std::optional<Tensor> bias;
  int64_t in = 0;
  int64_t out = 0;
  detail::Bf16Gemm bf16_gemm = detail::Bf16Gemm::kOwnAvx2;  // the prefill GEMM of bf16 weights
  detail::MatmulCache cache;

  void forward(const Tensor& x, Tensor& y, ThreadPool* pool) const;
  void forward_f32(const Tensor& x, Tensor& y, ThreadPool* pool) const;
  void forward_bf16(const Tensor& x, Tensor& y, ThreadPool* pool) const;
  void forward_bf16_own(const Tensor& x, Tensor& y, ThreadPool* pool) const;
  void forward_gemv(const Tensor& x, Tensor& y, ThreadPool* pool) const;
  detail::MatmulShape shape(int64_t m, int64_t lda, int64_t ldc, DType a_type) const {
    detail::MatmulShape s;
    s.m = m;
    s.k = in;
    s.n = out;
    s.lda = lda;
    s.ldw = row_stride(weight);
    s.ldc = ldc;
    s.a_type = a_type;
    s.w_type = weight.dtype();
    s.has_bias = bias.has_value();
    return s;
  }
};

Linear::Linear(Tensor weight, std::optional<Tensor> bias) : impl_(std::make_unique<Impl>()) {
  CTXPAR_CHECK(weight.defined() && weight.ndim() == 2,
               "Linear weight must be 2-D [out, in], got {}",
               weight.defined() ? weight.describe() : "an undefined tensor");
  CTXPAR_CHECK(weight.dtype() == DType::kF32 || weight.dtype() == DType::kBF16,
               "Linear weight {} has dtype {}; valid: float32 or bfloat16", weight.describe(),
               dtype_name(weight.dtype()));
  CTXPAR_CHECK(weight.size(0) >= 1 && weight.size(1) >= 1,
               "Linear weight {} must have at least one row and one column", weight.describe());
  CTXPAR_CHECK(weight.stride(1) == 1 || weight.size(1) == 1,
               "Linear weight {} needs a contiguous last dim, has stride {}", weight.describe(),
               weight.stride(1));
  CTXPAR_CHECK(row_stride(weight) >= weight.size(1),
               "Linear weight {} has row stride {} < in {} (rows overlap)", weight.describe(),
               weight.stride(0), weight.size(1));
  if (bias) {
    CTXPAR_CHECK(bias->defined() && bias->ndim() == 1 && bias->size(0) == weight.size(0) &&
                     bias->dtype() == DType::kF32 && bias->is_contiguous(),
                 "Linear bias must be a contiguous float32[{}] for weight {}, got {}",
                 weight.size(0), weight.describe(),
                 bias->defined() ? bias->describe() : "an undefined tensor");
  }
  impl_->in = weight.size(1);
  impl_->out = weight.size(0);
  impl_->bf16_gemm = detail::bf16_gemm(active_isa());
  impl_->weight = std::move(weight);
  impl_->bias = std::move(bias);
}

Linear::~Linear() = default;
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;

int64_t Linear::in_features() const {
  return impl_->in;
}
int64_t Linear::out_features() const {
  return impl_->out;
}
const Tensor& Linear::weight() const {
  return impl_->weight;
}
const std::optional<Tensor>& Linear::bias() const {
  return impl_->bias;
}

Tensor Linear::forward(const Tensor& x) const {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2, "Linear input must be 2-D [tokens, {}], got {}",
               impl_->in, x.defined() ? x.describe() : "an undefined tensor");
  Tensor y = Tensor::empty({x.size(0), impl_->out}, DType::kF32);
  forward(x, y);
  return y;
}

Tensor Linear::forward(const Tensor& x, ThreadPool& pool) const {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2, "Linear input must be 2-D [tokens, {}], got {}",
               impl_->in, x.defined() ? x.describe() : "an undefined tensor");
  Tensor y = Tensor::empty({x.size(0), impl_->out}, DType::kF32);
  forward(x, y, pool);
  return y;
}

void Linear::forward(const Tensor& x, Tensor& y) const {
  impl_->forward(x, y, nullptr);
}

void Linear::forward(const Tensor& x, Tensor& y, ThreadPool& pool) const {
  impl_->forward(x, y, &pool);
}

void Linear::Impl::forward(const Tensor& x, Tensor& y, ThreadPool* pool) const {
  const Impl& im = *this;
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && x.dtype() == DType::kF32 && x.size(1) == im.in,
               "Linear input must be float32[tokens, {}], got {}", im.in,
               x.defined() ? x.describe() : "an undefined tensor");
  CTXPAR_CHECK(y.defined() && y.ndim() == 2 && y.dtype() == DType::kF32 && y.size(0) == x.size(0) &&
                   y.size(1) == im.out,
               "Linear output must be float32[{}, {}] for input {}, got {}", x.size(0), im.out,
               x.describe(), y.defined() ? y.describe() : "an undefined tensor");
  CTXPAR_CHECK(x.stride(1) == 1 && row_stride(x) >= im.in,
               "Linear input {} needs a contiguous last dim and row stride >= {}, has strides "
               "[{}, {}]",
               x.describe(), im.in, x.stride(0), x.stride(1));
  CTXPAR_CHECK((y.stride(1) == 1 || im.out == 1) && row_stride(y) >= im.out,
               "Linear output {} needs a contiguous last dim and row stride >= {}, has strides "
               "[{}, {}]",
               y.describe(), im.out, y.stride(0), y.stride(1));
  if (x.size(0) == 0) return;
  if (x.size(0) <= detail::kGemvMaxTokens) {
    im.forward_gemv(x, y, pool);
    return;
  }

  if (im.weight.dtype() == DType::kF32) {
    im.forward_f32(x, y, pool);
  } else if (im.bf16_gemm == detail::Bf16Gemm::kOwnAvx2) {
    im.forward_bf16_own(x, y, pool);
  } else {
    im.forward_bf16(x, y, pool);
  }
}

void Linear::Impl::forward_gemv(const Tensor& x, Tensor& y, ThreadPool* pool) const {
  const int64_t m = x.size(0), ldw = row_stride(weight), ldy = row_stride(y);
  const detail::GemvKernel kernel = detail::gemv_kernel(active_isa(), weight.dtype(), m);
  // [m, in] prepared x, read by every pool thread through the plain pointer.
  thread_local std::vector<float> x_prepared;
  x_prepared.resize(static_cast<size_t>(m * in));
  const void* xp = x_prepared.data();
  detail::gemv_prepare_x(kernel, weight.dtype(), x.data<float>(), row_stride(x), m, in,
                         x_prepared.data());
  const float* bp = bias ? bias->data<float>() : nullptr;
  float* yp = y.data<float>();
  const auto rows = [&](int64_t r0, int64_t r1) {
    detail::gemv(kernel, weight.dtype(), xp, m, in, weight.raw(), ldw, r0, r1, bp, yp, ldy);
  };
  if (pool == nullptr || pool->num_threads() == 1 || out <= detail::kGemvRowGrain) {
    rows(0, out);
    return;
  }
  // Tasks of whole register blocks, each a contiguous run of weight rows.
  constexpr int64_t kBlock = detail::kGemvRowBlock;
  const int64_t blocks = (out + kBlock - 1) / kBlock;
  pool->parallel_for(blocks, detail::kGemvRowGrain / kBlock, [&](int64_t b, int64_t e, int) {
    rows(b * kBlock, std::min(out, e * kBlock));
  });
}

void Linear::Impl::forward_f32(const Tensor& x, Tensor& y, ThreadPool* pool) const {
  const int64_t m = x.size(0), ldx = row_stride(x), ldy = row_stride(y), ldw = row_stride(weight);
  const float* xp = x.data<float>();
  const float* wp = weight.data<float>();
  const float* bp = bias ? bias->data<float>() : nullptr;
  float* yp = y.data<float>();
  // All tokens at once (nothing to convert), output columns split over the pool.
  detail::for_token_chunks(
      pool, m, out, m, [](int64_t, int64_t) {},
      [&](int64_t, int64_t, int64_t o0, int64_t no) {
        detail::MatmulShape s = shape(m, ldx, ldy, DType::kF32);
        s.n = no;
        cache.run(s, xp, wp + o0 * ldw, bp ? bp + o0 : nullptr, nullptr, yp + o0);
      });
}

void Linear::Impl::forward_bf16(const Tensor& x, Tensor& y, ThreadPool* pool) const {
  constexpr int64_t kRoundGrainTokens = 16;  // rows of x rounded per pool task, at least
  const int64_t m = x.size(0), ldx = row_stride(x), ldy = row_stride(y), ldw = row_stride(weight);
  const bool native = bf16_gemm == detail::Bf16Gemm::kOneDnnBf16;
  const float* xp = x.data<float>();
  const bf16* wp = weight.data<bf16>();
  const float* bp = bias ? bias->data<float>() : nullptr;
  float* yp = y.data<float>();
  // One chunk of x rounded to bf16: as bf16 for the native matmul, as f32 for the sgemm (the
  // products of bf16 values are exact in f32 either way). Written over the pool (a pass over x
  // at the read bandwidth: on the calling thread alone it was 5% of a 1-thread prefill and
  // serial at 2) into the calling thread's buffers, read by every thread through the plain
  // pointers.
  thread_local std::vector<bf16> x_bf16;  // [<= kOneDnnTokenChunk, in]
  thread_local std::vector<float> x_f32;  // [<= kOneDnnTokenChunk, in]
  const size_t chunk_floats = static_cast<size_t>(std::min(m, detail::kOneDnnTokenChunk) * in);
  if (native) {
    x_bf16.resize(chunk_floats);
  } else {
    x_f32.resize(chunk_floats);
  }
  bf16* xb = x_bf16.data();
  float* xf = x_f32.data();
  detail::for_token_chunks(
      pool, m, out, detail::kOneDnnTokenChunk,
      [&](int64_t t0, int64_t nt) {
        const auto round_rows = [&](int64_t begin, int64_t end, int) {
          for (int64_t t = begin; t < end; ++t) {
            const float* src = xp + (t0 + t) * ldx;
            if (native) {
              for (int64_t i = 0; i < in; ++i) xb[t * in + i] = bf16(src[i]);
            } else {
              for (int64_t i = 0; i < in; ++i)
                xf[t * in + i] = bf16::to_f32(bf16::from_f32(src[i]));
            }
          }
        };
        if (pool != nullptr) {
          pool->parallel_for(nt, kRoundGrainTokens, round_rows);
        } else {
          round_rows(0, nt, 0);
        }
      },
      [&](int64_t t0, int64_t nt, int64_t o0, int64_t no) {
        float* yb = yp + t0 * ldy;
        if (native) {
          detail::MatmulShape s = shape(nt, in, ldy, DType::kBF16);
          s.n = no;
          cache.run(s, xb, wp + o0 * ldw, bp ? bp + o0 : nullptr, nullptr, yb + o0);
          return;
        }
        const int64_t rows_per_tile = detail::f32_tile_rows(in);
        thread_local std::vector<float> tile;  // this pool thread's [rows_per_tile, in]
        tile.resize(static_cast<size_t>(rows_per_tile * in));
        for (int64_t r0 = o0; r0 < o0 + no; r0 += rows_per_tile) {
          const int64_t nr = std::min(rows_per_tile, o0 + no - r0);
          for (int64_t r = 0; r < nr; ++r) {
            const bf16* src = wp + (r0 + r) * ldw;
            float* dst = tile.data() + r * in;
            for (int64_t i = 0; i < in; ++i) dst[i] = bf16::to_f32(src[i].bits);
          }
          detail::MatmulShape s = shape(nt, in, ldy, DType::kF32);
          s.n = nr;
          s.ldw = in;
          s.w_type = DType::kF32;
          cache.run(s, xf, tile.data(), bp ? bp + r0 : nullptr, nullptr, yb + r0);
        }
      });
}

void Linear::Impl::forward_bf16_own(const Tensor& x, Tensor& y, ThreadPool* pool) const {
  const int64_t m = x.size(0), ldx = row_stride(x), ldy = row_stride(y), ldw = row_stride(weight);
  const float* xp = x.data<float>();
  const uint16_t* wp = static_cast<const uint16_t*>(weight.raw());
  const float* bp = bias ? bias->data<float>() : nullptr;
  float* yp = y.data<float>();
  // One chunk of x packed for the GEMM: written on the calling thread, read by the pool's.
  thread_local std::vector<float> x_packed;
  x_packed.resize(static_cast<size_t>(
      detail::gemm_packed_x_floats(std::min(m, detail::kOneDnnTokenChunk), in)));
  float* packed = x_packed.data();
  detail::for_token_chunks(
      pool, m, out, detail::kOneDnnTokenChunk,
      [&](int64_t t0, int64_t nt) {
        detail::gemm_pack_x(xp + t0 * ldx, ldx, nt, in, /*round_to_bf16=*/true, packed);
      },
      [&](int64_t t0, int64_t nt, int64_t o0, int64_t no) {
        detail::GemmArgs a;
        a.xp = packed;
        a.tokens = nt;
        a.k = in;
        a.w.bf16 = wp + o0 * ldw;
        a.w.ldw = ldw;
        a.n = no;
        a.bias = bp ? bp + o0 : nullptr;
        a.y = yp + t0 * ldy + o0;
        a.ldy = ldy;
        detail::gemm(Isa::kAvx2, a);
      });
}

}  // namespace ctxpar::kernels
