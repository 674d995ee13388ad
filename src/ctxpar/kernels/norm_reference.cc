// Double-precision references for the norms: plain loops that share nothing with norm.cc
// but the contract.
#include <cmath>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/norm.h"

namespace ctxpar::kernels {
namespace {

// Row r of a [..., d] tensor (f32 or bf16, any strides) as doubles.
std::vector<double> row_doubles(const Tensor& t, int64_t r) {
  const int64_t d = t.size(-1);
  int64_t off = 0;
  for (int dim = t.ndim() - 2; dim >= 0; --dim) {
    off += (r % t.size(dim)) * t.stride(dim);
    r /= t.size(dim);
  }
  std::vector<double> out(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) {
    const int64_t at = off + i * t.stride(-1);
    out[i] = t.dtype() == DType::kBF16 ? to_float(t.data<bf16>()[at]) : t.data<float>()[at];
  }
  return out;
}

float* row_ptr(Tensor& t, int64_t r) {
  int64_t off = 0;
  for (int dim = t.ndim() - 2; dim >= 0; --dim) {
    off += (r % t.size(dim)) * t.stride(dim);
    r /= t.size(dim);
  }
  return t.data<float>() + off;
}

void check_same_shape(const char* op, const Tensor& x, const Tensor& y, const Tensor& w) {
  CTXPAR_CHECK(x.ndim() >= 1 && y.shape() == x.shape() && y.dtype() == DType::kF32 &&
                   w.ndim() == 1 && w.size(0) == x.size(-1),
               "{}: x {}, weight {}, y {} must be [..., d], [d], [..., d]", op, x.describe(),
               w.describe(), y.describe());
}

}  // namespace

void rms_norm_reference(const Tensor& x, const Tensor& weight, double eps, Tensor& y) {
  check_same_shape("rms_norm_reference", x, y, weight);
  const int64_t d = x.size(-1);
  if (d == 0) return;
  const std::vector<double> w = row_doubles(weight, 0);
  for (int64_t r = 0; r < x.numel() / d; ++r) {
    const std::vector<double> xr = row_doubles(x, r);
    double ss = 0;
    for (double v : xr) ss += v * v;
    const double inv_rms = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    float* yr = row_ptr(y, r);
    for (int64_t i = 0; i < d; ++i)
      yr[i * y.stride(-1)] = static_cast<float>(xr[i] * inv_rms * w[i]);
  }
}

void layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          Tensor& y) {
  check_same_shape("layer_norm_reference", x, y, weight);
  check_same_shape("layer_norm_reference", x, y, bias);
  const int64_t d = x.size(-1);
  if (d == 0) return;
  const std::vector<double> w = row_doubles(weight, 0), b = row_doubles(bias, 0);
  for (int64_t r = 0; r < x.numel() / d; ++r) {
    const std::vector<double> xr = row_doubles(x, r);
    double mean = 0;
    for (double v : xr) mean += v;
    mean /= static_cast<double>(d);
    double var = 0;
    for (double v : xr) var += (v - mean) * (v - mean);
    var /= static_cast<double>(d);
    const double inv_std = 1.0 / std::sqrt(var + eps);
    float* yr = row_ptr(y, r);
    for (int64_t i = 0; i < d; ++i) {
      yr[i * y.stride(-1)] = static_cast<float>((xr[i] - mean) * inv_std * w[i] + b[i]);
    }
  }
}

}  // namespace ctxpar::kernels
