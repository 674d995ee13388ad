#include "ctxpar/kernels/activation.h"

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/activation_kernel.h"
#include "ctxpar/kernels/isa_dispatch.h"

namespace ctxpar::kernels {
namespace {

void check_silu_and_mul_shapes(const char* op, const Tensor& x, const Tensor& y) {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && x.dtype() == DType::kF32 && x.size(1) % 2 == 0,
               "{}: x must be float32 [tokens, 2·I] (even last dim), got {}", op,
               x.defined() ? x.describe() : "an undefined tensor");
  CTXPAR_CHECK(y.defined() && y.ndim() == 2 && y.dtype() == DType::kF32 && y.size(0) == x.size(0) &&
                   y.size(1) == x.size(1) / 2,
               "{}: y must be float32 [{}, {}] for x {}, got {}", op, x.size(0), x.size(1) / 2,
               x.describe(), y.defined() ? y.describe() : "an undefined tensor");
  CTXPAR_CHECK((x.stride(1) == 1 || x.size(1) <= 1) && (y.stride(1) == 1 || y.size(1) <= 1),
               "{}: x {} and y {} need contiguous last dims (strides {} and {})", op, x.describe(),
               y.describe(), x.stride(1), y.stride(1));
}

}  // namespace

void silu_and_mul(const Tensor& x, Tensor& y, ThreadPool* pool) {
  check_silu_and_mul_shapes("silu_and_mul", x, y);
  const int64_t inter = y.size(1), tokens = x.size(0);
  const detail::SiluMulFn row = detail::silu_mul_kernel(active_isa());
  const auto rows = [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* gate = x.data<float>() + t * x.stride(0);
      row(gate, gate + inter, inter, y.data<float>() + t * y.stride(0));
    }
  };
  // Whole rows per task; one decode token (a few µs of work) stays on the calling thread.
  if (pool == nullptr || pool->num_threads() == 1 || tokens == 1) {
    rows(0, tokens, 0);
    return;
  }
  pool->parallel_for(tokens, 1, rows);
}

namespace detail {

SiluMulFn silu_mul_kernel(Isa isa) {
  return for_isa(isa, kSiluMulScalar, kSiluMulAvx2, kSiluMulAvx512);
}

}  // namespace detail

}  // namespace ctxpar::kernels
