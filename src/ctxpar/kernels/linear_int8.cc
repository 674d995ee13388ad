#include "ctxpar/kernels/linear_int8.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/linear_direct_split.h"
#include "ctxpar/kernels/linear_int8_direct.h"
#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels {
namespace {

// Largest input dim whose int32 accumulation cannot overflow: k·127² < 2^31.
constexpr int64_t kMaxInFeatures = 133000;

int64_t row_stride(const Tensor& t) {
  return t.size(0) <= 1 ? t.size(1) : t.stride(0);
}

std::string describe_or_undefined(const Tensor& t) {
  return t.defined() ? t.describe() : "an undefined tensor";
}

// One token row: q[i] and the returned scale, per the math in the header; with given_amax
// (not null) the scale comes from *given_amax instead of the row's own max.
float quantize_row(const float* x, const float* smooth, int64_t n, float* xs, int8_t* q,
                   const float* given_amax = nullptr) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) {
    xs[i] = smooth != nullptr ? x[i] / smooth[i] : x[i];
    amax = std::max(amax, std::fabs(xs[i]));
  }
  if (given_amax != nullptr) amax = *given_amax;
  const float scale = amax > 0 ? amax / 127.0f : 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::nearbyint(xs[i] / scale);
    q[i] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, r)));
  }
  return scale;
}

}  // namespace

// quantize_per_token with the per-token amax optionally given (token_amax: [tokens] values).
static void quantize_rows(const Tensor& x, const Tensor* input_smooth, const float* token_amax,
                          Tensor& q, Tensor& token_scale);

void quantize_per_token(const Tensor& x, const Tensor* input_smooth, Tensor& q,
                        Tensor& token_scale) {
  quantize_rows(x, input_smooth, nullptr, q, token_scale);
}

void smoothed_absmax_per_token(const Tensor& x, const Tensor* input_smooth, Tensor& amax) {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && x.dtype() == DType::kF32 &&
                   (x.stride(1) == 1 || x.size(1) == 1),
               "smoothed_absmax_per_token: x must be float32[tokens, in] with a contiguous last "
               "dim, got {}",
               describe_or_undefined(x));
  const int64_t tokens = x.size(0), in = x.size(1);
  CTXPAR_CHECK(input_smooth == nullptr ||
                   (input_smooth->ndim() == 1 && input_smooth->size(0) == in &&
                    input_smooth->dtype() == DType::kF32 && input_smooth->is_contiguous()),
               "smoothed_absmax_per_token: input_smooth must be a contiguous float32[{}], got {}",
               in, input_smooth ? describe_or_undefined(*input_smooth) : "");
  CTXPAR_CHECK(
      amax.defined() && amax.ndim() == 1 && amax.dtype() == DType::kF32 && amax.size(0) == tokens,
      "smoothed_absmax_per_token: amax must be float32[{}], got {}", tokens,
      describe_or_undefined(amax));
  const float* smooth = input_smooth != nullptr ? input_smooth->data<float>() : nullptr;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = x.data<float>() + t * x.stride(0);
    float m = 0;
    for (int64_t i = 0; i < in; ++i) {
      m = std::max(m, std::fabs(smooth != nullptr ? row[i] / smooth[i] : row[i]));
    }
    amax.data<float>()[t * amax.stride(0)] = m;
  }
}

static void quantize_rows(const Tensor& x, const Tensor* input_smooth, const float* token_amax,
                          Tensor& q, Tensor& token_scale) {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && x.dtype() == DType::kF32 &&
                   (x.stride(1) == 1 || x.size(1) == 1),
               "quantize_per_token: x must be float32[tokens, in] with a contiguous last dim, "
               "got {}",
               describe_or_undefined(x));
  const int64_t tokens = x.size(0), in = x.size(1);
  CTXPAR_CHECK(input_smooth == nullptr ||
                   (input_smooth->ndim() == 1 && input_smooth->size(0) == in &&
                    input_smooth->dtype() == DType::kF32 && input_smooth->is_contiguous()),
               "quantize_per_token: input_smooth must be a contiguous float32[{}], got {}", in,
               input_smooth ? describe_or_undefined(*input_smooth) : "");
  CTXPAR_CHECK(q.defined() && q.ndim() == 2 && q.dtype() == DType::kI8 && q.size(0) == tokens &&
                   q.size(1) == in && (q.stride(1) == 1 || in == 1),
               "quantize_per_token: q must be int8[{}, {}] with a contiguous last dim, got {}",
               tokens, in, describe_or_undefined(q));
  CTXPAR_CHECK(token_scale.defined() && token_scale.ndim() == 1 &&
                   token_scale.dtype() == DType::kF32 && token_scale.size(0) == tokens,
               "quantize_per_token: token_scale must be float32[{}], got {}", tokens,
               describe_or_undefined(token_scale));
  thread_local std::vector<float> xs;
  xs.resize(static_cast<size_t>(in));
  const float* smooth = input_smooth != nullptr ? input_smooth->data<float>() : nullptr;
  for (int64_t t = 0; t < tokens; ++t) {
    token_scale.data<float>()[t * token_scale.stride(0)] = quantize_row(
        x.data<float>() + t * x.stride(0), smooth, in, xs.data(),
        q.data<int8_t>() + t * q.stride(0), token_amax != nullptr ? token_amax + t : nullptr);
  }
}

struct Int8Linear::Impl {
  Tensor weight;        // [out, in] int8
  Tensor weight_scale;  // [out] f32
  std::optional<Tensor> input_smooth;
  std::optional<Tensor> bias;
  int64_t in = 0;
  int64_t out = 0;
  detail::MatmulCache cache;

  // token_amax: [tokens] given per-token amax values, or null to compute them.
  void forward(const Tensor& x, Tensor& y, ThreadPool* pool, const float* token_amax) const;
};

Int8Linear::Int8Linear(Tensor weight, Tensor weight_scale, std::optional<Tensor> input_smooth,
                       std::optional<Tensor> bias)
    : impl_(std::make_unique<Impl>()) {
  CTXPAR_CHECK(weight.defined() && weight.ndim() == 2 && weight.dtype() == DType::kI8 &&
                   weight.size(0) >= 1 && weight.size(1) >= 1,
               "Int8Linear weight must be a non-empty int8[out, in], got {}",
               describe_or_undefined(weight));
  CTXPAR_CHECK(
      (weight.stride(1) == 1 || weight.size(1) == 1) && row_stride(weight) >= weight.size(1),
      "Int8Linear weight {} needs a contiguous last dim and row stride >= {}, has "
      "strides [{}, {}]",
      weight.describe(), weight.size(1), weight.stride(0), weight.stride(1));
  const int64_t out = weight.size(0), in = weight.size(1);
  CTXPAR_CHECK(in <= kMaxInFeatures,
               "Int8Linear in_features {} exceeds {}, beyond which int32 accumulation of int8 "
               "products may overflow",
               in, kMaxInFeatures);
  CTXPAR_CHECK(weight_scale.defined() && weight_scale.ndim() == 1 && weight_scale.size(0) == out &&
                   weight_scale.dtype() == DType::kF32 && weight_scale.is_contiguous(),
               "Int8Linear weight_scale must be a contiguous float32[{}] (one per output "
               "channel), got {}",
               out, describe_or_undefined(weight_scale));
  if (input_smooth) {
    CTXPAR_CHECK(input_smooth->defined() && input_smooth->ndim() == 1 &&
                     input_smooth->size(0) == in && input_smooth->dtype() == DType::kF32 &&
                     input_smooth->is_contiguous(),
                 "Int8Linear input_smooth must be a contiguous float32[{}] (one per input "
                 "channel), got {}",
                 in, describe_or_undefined(*input_smooth));
    const float* s = input_smooth->data<float>();
    for (int64_t i = 0; i < in; ++i) {
      CTXPAR_CHECK(std::isfinite(s[i]) && s[i] != 0,
                   "Int8Linear input_smooth[{}] = {}; every entry must be finite and non-zero", i,
                   s[i]);
    }
  }
  if (bias) {
    CTXPAR_CHECK(bias->defined() && bias->ndim() == 1 && bias->size(0) == out &&
                     bias->dtype() == DType::kF32 && bias->is_contiguous(),
                 "Int8Linear bias must be a contiguous float32[{}], got {}", out,
                 describe_or_undefined(*bias));
  }
  impl_->in = in;
  impl_->out = out;
  impl_->weight = std::move(weight);
  impl_->weight_scale = std::move(weight_scale);
  impl_->input_smooth = std::move(input_smooth);
  impl_->bias = std::move(bias);
}

Int8Linear::~Int8Linear() = default;
Int8Linear::Int8Linear(Int8Linear&&) noexcept = default;
Int8Linear& Int8Linear::operator=(Int8Linear&&) noexcept = default;

int64_t Int8Linear::in_features() const {
  return impl_->in;
}
int64_t Int8Linear::out_features() const {
  return impl_->out;
}
const Tensor& Int8Linear::weight() const {
  return impl_->weight;
}
const Tensor& Int8Linear::weight_scale() const {
  return impl_->weight_scale;
}
const std::optional<Tensor>& Int8Linear::input_smooth() const {
  return impl_->input_smooth;
}
const std::optional<Tensor>& Int8Linear::bias() const {
  return impl_->bias;
}

Tensor Int8Linear::forward(const Tensor& x) const {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2, "Int8Linear input must be 2-D [tokens, {}], got {}",
               impl_->in, describe_or_undefined(x));
  Tensor y = Tensor::empty({x.size(0), impl_->out}, DType::kF32);
  forward(x, y);
  return y;
}

void Int8Linear::forward(const Tensor& x, Tensor& y) const {
  impl_->forward(x, y, nullptr, nullptr);
}

void Int8Linear::forward(const Tensor& x, Tensor& y, ThreadPool& pool) const {
  impl_->forward(x, y, &pool, nullptr);
}

void Int8Linear::forward_with_amax(const Tensor& x, const Tensor& token_amax, Tensor& y,
                                   ThreadPool& pool) const {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && token_amax.defined() && token_amax.ndim() == 1 &&
                   token_amax.dtype() == DType::kF32 && token_amax.is_contiguous() &&
                   token_amax.size(0) == x.size(0),
               "Int8Linear token_amax must be a contiguous float32[{}], got {}",
               x.defined() && x.ndim() == 2 ? x.size(0) : 0, describe_or_undefined(token_amax));
  impl_->forward(x, y, &pool, token_amax.data<float>());
}

void Int8Linear::Impl::forward(const Tensor& x, Tensor& y, ThreadPool* pool,
                               const float* token_amax) const {
  const Impl& im = *this;
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && x.dtype() == DType::kF32 && x.size(1) == im.in &&
                   x.stride(1) == 1,
               "Int8Linear input must be float32[tokens, {}] with a contiguous last dim, got {}",
               im.in, describe_or_undefined(x));
  CTXPAR_CHECK(y.defined() && y.ndim() == 2 && y.dtype() == DType::kF32 && y.size(0) == x.size(0) &&
                   y.size(1) == im.out && (y.stride(1) == 1 || im.out == 1) &&
                   row_stride(y) >= im.out,
               "Int8Linear output must be float32[{}, {}] with a contiguous last dim, got {}",
               x.size(0), im.out, describe_or_undefined(y));
  const int64_t m = x.size(0);
  if (m == 0) return;

  const int64_t ldy = row_stride(y);
  const int64_t ldw = row_stride(im.weight);
  const auto* wp = static_cast<const int8_t*>(im.weight.raw());
  const float* ws = im.weight_scale.data<float>();
  const float* bp = im.bias ? im.bias->data<float>() : nullptr;
  const Tensor* smooth = im.input_smooth ? &*im.input_smooth : nullptr;
  float* yp = y.data<float>();
  const bool onednn = detail::onednn_int8_matmul_exact();
  const int64_t chunk = onednn ? detail::kOneDnnTokenChunk : detail::kDirectTokenChunk;

  // Per-thread scratch, reused across calls: one chunk of int8 activations, all token scales.
  thread_local std::vector<int8_t> q_chunk;     // [<= chunk, in]
  thread_local std::vector<float> token_scale;  // [m]
  q_chunk.resize(static_cast<size_t>(std::min(m, chunk) * im.in));
  token_scale.resize(static_cast<size_t>(m));
  // Plain pointers for the lambdas: a thread_local named inside them would be the pool
  // thread's own (empty) instance.
  int8_t* qp = q_chunk.data();
  float* sp = token_scale.data();

  detail::for_token_chunks(
      pool, m, im.out, chunk,
      [&](int64_t t0, int64_t nt) {
        Tensor q = Tensor::wrap(qp, {nt, im.in}, DType::kI8);
        Tensor scale = Tensor::wrap(sp + t0, {nt}, DType::kF32);
        quantize_rows(x.slice(0, t0, t0 + nt), smooth,
                      token_amax != nullptr ? token_amax + t0 : nullptr, q, scale);
      },
      [&](int64_t t0, int64_t nt, int64_t o0, int64_t no) {
        float* yb = yp + t0 * ldy + o0;
        // The integer product times the per-column weight scale...
        if (onednn) {
          detail::MatmulShape s;
          s.m = nt;
          s.k = im.in;
          s.n = no;
          s.lda = im.in;
          s.ldw = ldw;
          s.ldc = ldy;
          s.a_type = DType::kI8;
          s.w_type = DType::kI8;
          s.has_column_scales = true;
          im.cache.run(s, qp, wp + o0 * ldw, nullptr, ws + o0, yb);
        } else {
          detail::int8_weight_matmul(qp, im.in, nt, wp + o0 * ldw, ldw, im.in, no, ws + o0, yb,
                                     ldy);
        }
        // ...then the per-token scale and the bias, here rather than in oneDNN because 2.x has
        // no fast per-row scale for matmul (a binary post-op with a [m, 1] operand falls back
        // to its reference implementation).
        for (int64_t t = 0; t < nt; ++t) {
          float* row = yb + t * ldy;
          const float sx = sp[t0 + t];
          if (bp != nullptr) {
            for (int64_t o = 0; o < no; ++o) row[o] = row[o] * sx + bp[o0 + o];
          } else {
            for (int64_t o = 0; o < no; ++o) row[o] *= sx;
          }
        }
      });
}

}  // namespace ctxpar::kernels
