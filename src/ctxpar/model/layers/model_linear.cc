#include "ctxpar/model/layers/model_linear.h"

#include "ctxpar/core/error.h"

namespace ctxpar::model {
namespace {

// The bias rows of a part: sliced like the weight rows when the slice splits dim 0.
Slice bias_slice(const LinearPart& p) {
  return p.slice.kind == Slice::Kind::kPart && p.slice.dim == 0 ? p.slice : Slice::full();
}

// The stacked bias [rows] f32, or nullopt when no part has one (or only rank 0 adds it).
std::optional<Tensor> load_bias(const ModelContext& ctx, const std::vector<LinearPart>& parts,
                                const std::vector<int64_t>& rows, bool bias_once) {
  bool any = false;
  for (const LinearPart& p : parts) any = any || !p.bias_name.empty();
  if (!any || (bias_once && ctx.tp_rank() != 0)) return std::nullopt;
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  Tensor b = Tensor::zeros({total}, DType::kF32);
  int64_t at = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].bias_name.empty()) {
      b.slice(0, at, at + rows[i])
          .copy_from(ctx.load(parts[i].bias_name, {parts[i].full_shape[0]}, bias_slice(parts[i]),
                              DType::kF32));
    }
    at += rows[i];
  }
  return b;
}

// Whether the parts stack into one FP8 weight: all kept FP8 with one scaling, and for block
// scales every part but the last a whole number of 128-row blocks.
bool fusable_as_fp8(const ModelContext& ctx, const std::vector<LinearPart>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!ctx.keeps_fp8(parts[i].name)) return false;
    const kernels::Fp8Scaling scaling = ctx.fp8_scaling(parts[i].name);
    if (scaling != ctx.fp8_scaling(parts[0].name)) return false;
    if (i + 1 == parts.size() || scaling == kernels::Fp8Scaling::kPerRow) continue;
    const SliceExtent e = slice_extent(parts[i].full_shape, parts[i].slice, parts[i].name);
    if (e.shape[0] % kernels::kFp8BlockSize != 0) return false;
  }
  return true;
}

}  // namespace

void ModelLinear::forward(const Tensor& x, Tensor& y, ThreadPool& pool) const {
  std::visit([&](const auto& lin) { lin.forward(x, y, pool); }, impl_);
}

Tensor ModelLinear::forward(const Tensor& x, ThreadPool& pool) const {
  Tensor y = Tensor::empty({x.size(0), out_features()}, DType::kF32);
  forward(x, y, pool);
  return y;
}

Tensor ModelLinear::forward(const Tensor& x) const {
  return std::visit([&](const auto& lin) { return lin.forward(x); }, impl_);
}

int64_t ModelLinear::in_features() const {
  return std::visit([](const auto& lin) { return lin.in_features(); }, impl_);
}

int64_t ModelLinear::out_features() const {
  return std::visit([](const auto& lin) { return lin.out_features(); }, impl_);
}

ModelLinear load_model_linear(const ModelContext& ctx, const std::vector<LinearPart>& parts,
                              bool bias_once) {
  CTXPAR_CHECK(!parts.empty(), "a linear layer needs at least one weight");
  const int64_t in = parts[0].full_shape.at(1);
  std::vector<int64_t> rows;
  for (const LinearPart& p : parts) {
    CTXPAR_CHECK(p.full_shape.size() == 2 && (parts.size() == 1 || p.full_shape[1] == in),
                 "fused weight {} has shape {}; every part needs {} input features", p.name,
                 shape_str(p.full_shape), in);
    CTXPAR_CHECK(parts.size() == 1 || p.slice.kind == Slice::Kind::kFull || p.slice.dim == 0,
                 "fused weight {}: only row slices can be stacked, got {}", p.name,
                 p.slice.describe());
    rows.push_back(slice_extent(p.full_shape, p.slice, p.name).shape[0]);
  }
  std::optional<Tensor> bias = load_bias(ctx, parts, rows, bias_once);

  if (fusable_as_fp8(ctx, parts)) {
    std::vector<kernels::Fp8Weight> ws;
    for (const LinearPart& p : parts) ws.push_back(ctx.load_fp8(p.name, p.full_shape, p.slice));
    kernels::Fp8Weight w = ws.size() == 1 ? std::move(ws[0]) : kernels::Fp8Weight{};
    if (ws.size() > 1) {
      int64_t total = 0;
      for (int64_t r : rows) total += r;
      const int64_t cols = ws[0].weight.size(1);
      w.weight = Tensor::empty({total, cols}, DType::kF8E4M3);
      w.scaling = ws[0].scaling;
      w.scale_inv = Tensor::empty(kernels::fp8_scale_shape(total, cols, w.scaling), DType::kF32);
      int64_t at = 0, block_at = 0;
      for (kernels::Fp8Weight& part : ws) {
        const int64_t n = part.weight.size(0), nb = part.scale_inv.size(0);
        w.weight.slice(0, at, at + n).copy_from(part.weight);
        w.scale_inv.slice(0, block_at, block_at + nb).copy_from(part.scale_inv);
        at += n;
        block_at += nb;
        part = {};  // the stacked tensors are the only persistent copy
      }
    }
    return ModelLinear(kernels::Fp8Linear(std::move(w), std::move(bias), ctx.options.weight_dtype));
  }

  const DType dtype = ctx.options.weight_dtype;
  if (parts.size() == 1) {
    return ModelLinear(kernels::Linear(
        ctx.load(parts[0].name, parts[0].full_shape, parts[0].slice, dtype), std::move(bias)));
  }
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  Tensor w = Tensor::empty({total, in}, dtype);
  int64_t at = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    w.slice(0, at, at + rows[i])
        .copy_from(ctx.load(parts[i].name, parts[i].full_shape, parts[i].slice, dtype));
    at += rows[i];
  }
  return ModelLinear(kernels::Linear(std::move(w), std::move(bias)));
}

}  // namespace ctxpar::model
