#include "ctxpar/kernels/norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"

namespace ctxpar::kernels {
namespace {

constexpr int kLanes = 8;  // partial sums: one AVX register, and a shorter rounding chain

int64_t num_rows(const Tensor& t) {
  return t.numel() / t.size(-1);
}

// Element offset of row r (row-major over the leading dims) in a tensor of any leading strides.
int64_t row_offset(const Tensor& t, int64_t r) {
  int64_t off = 0;
  for (int dim = t.ndim() - 2; dim >= 0; --dim) {
    off += (r % t.size(dim)) * t.stride(dim);
    r /= t.size(dim);
  }
  return off;
}

std::string describe_or_undefined(const Tensor& t) {
  return t.defined() ? t.describe() : "an undefined tensor";
}

void check_rows(const char* op, const char* name, const Tensor& t, const Tensor& like) {
  CTXPAR_CHECK(t.defined() && t.ndim() >= 1 && t.dtype() == DType::kF32,
               "{}: {} must be a float32 tensor [..., d], got {}", op, name,
               describe_or_undefined(t));
  CTXPAR_CHECK(t.shape() == like.shape(), "{}: {} {} must have the input's shape {}", op, name,
               t.describe(), shape_str(like.shape()));
  CTXPAR_CHECK(t.stride(-1) == 1 || t.size(-1) <= 1,
               "{}: {} {} needs a contiguous last dim, has stride {}", op, name, t.describe(),
               t.stride(-1));
}

// weight/bias [d] f32 or bf16 as f32 values: the tensor's own memory when it is already
// contiguous f32, else converted into `scratch`.
const float* as_f32(const char* op, const char* name, const Tensor& v, int64_t d,
                    std::vector<float>& scratch) {
  CTXPAR_CHECK(v.defined() && v.ndim() == 1 && v.size(0) == d &&
                   (v.dtype() == DType::kF32 || v.dtype() == DType::kBF16),
               "{}: {} must be float32 or bfloat16 [{}], got {}", op, name, d,
               describe_or_undefined(v));
  if (v.dtype() == DType::kF32 && v.is_contiguous()) return v.data<float>();
  scratch.resize(static_cast<size_t>(d));
  Tensor::wrap(scratch.data(), {d}, DType::kF32).copy_from(v);
  return scratch.data();
}

float sum_of_squares(const float* x, int64_t d) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= d; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) partial[j] += x[i + j] * x[i + j];
  }
  float sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += partial[j];
  for (; i < d; ++i) sum += x[i] * x[i];
  return sum;
}

// Σ (x[i] − shift).
float sum_of_shifted(const float* x, float shift, int64_t d) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= d; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) partial[j] += x[i + j] - shift;
  }
  float sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += partial[j];
  for (; i < d; ++i) sum += x[i] - shift;
  return sum;
}

// Σ ((x[i] − shift) − shifted_mean)².
float sum_of_squared_deviations(const float* x, float shift, float shifted_mean, int64_t d) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= d; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float dev = (x[i + j] - shift) - shifted_mean;
      partial[j] += dev * dev;
    }
  }
  float sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += partial[j];
  for (; i < d; ++i) sum += ((x[i] - shift) - shifted_mean) * ((x[i] - shift) - shifted_mean);
  return sum;
}

void scale_row(const float* x, float inv_rms, const float* w, int64_t d, float* y) {
  for (int64_t i = 0; i < d; ++i) y[i] = x[i] * inv_rms * w[i];
}

}  // namespace

void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  check_rows("rms_norm", "x", x, x);
  check_rows("rms_norm", "y", y, x);
  const int64_t d = x.size(-1);
  thread_local std::vector<float> w_scratch;
  const float* w = as_f32("rms_norm", "weight", weight, d, w_scratch);
  if (d == 0) return;
  const int64_t rows = num_rows(x);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data<float>() + row_offset(x, r);
    const float inv_rms = 1.0f / std::sqrt(sum_of_squares(xr, d) / static_cast<float>(d) + eps);
    scale_row(xr, inv_rms, w, d, y.data<float>() + row_offset(y, r));
  }
}

void add_rms_norm(Tensor& residual, const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  check_rows("add_rms_norm", "x", x, x);
  check_rows("add_rms_norm", "residual", residual, x);
  check_rows("add_rms_norm", "y", y, x);
  const int64_t d = x.size(-1);
  thread_local std::vector<float> w_scratch;
  const float* w = as_f32("add_rms_norm", "weight", weight, d, w_scratch);
  if (d == 0) return;
  const int64_t rows = num_rows(x);
  for (int64_t r = 0; r < rows; ++r) {
    float* res = residual.data<float>() + row_offset(residual, r);
    const float* xr = x.data<float>() + row_offset(x, r);
    for (int64_t i = 0; i < d; ++i) res[i] += xr[i];
    const float inv_rms = 1.0f / std::sqrt(sum_of_squares(res, d) / static_cast<float>(d) + eps);
    scale_row(res, inv_rms, w, d, y.data<float>() + row_offset(y, r));
  }
}

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, Tensor& y) {
  check_rows("layer_norm", "x", x, x);
  check_rows("layer_norm", "y", y, x);
  const int64_t d = x.size(-1);
  thread_local std::vector<float> w_scratch, b_scratch;
  const float* w = as_f32("layer_norm", "weight", weight, d, w_scratch);
  const float* b = as_f32("layer_norm", "bias", bias, d, b_scratch);
  if (d == 0) return;
  const int64_t rows = num_rows(x);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data<float>() + row_offset(x, r);
    float* yr = y.data<float>() + row_offset(y, r);
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x²] − E[x]².
    // Working relative to the row's first element keeps the sums small when the mean is large
    // against the spread, so the deviations keep their digits.
    const float shift = xr[0];
    const float shifted_mean = sum_of_shifted(xr, shift, d) / static_cast<float>(d);
    const float var = sum_of_squared_deviations(xr, shift, shifted_mean, d) / static_cast<float>(d);
    const float inv_std = 1.0f / std::sqrt(var + eps);
    for (int64_t i = 0; i < d; ++i)
      yr[i] = ((xr[i] - shift) - shifted_mean) * inv_std * w[i] + b[i];
  }
}

}  // namespace ctxpar::kernels
