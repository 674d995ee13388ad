#include "ctxpar/model/layers/parallel_linear.h"

#include "ctxpar/core/error.h"

namespace ctxpar::model {
namespace {

// Stacks the parts' row slices into one [rows, in] weight (and bias if any part has one).
kernels::Linear fuse_parts(const ModelContext& ctx, const std::vector<LinearPart>& parts) {
  CTXPAR_CHECK(!parts.empty(), "a column-parallel linear needs at least one weight");
  std::vector<Tensor> weights, biases;
  int64_t rows = 0;
  const int64_t in = parts[0].full_shape.at(1);
  bool any_bias = false;
  for (const LinearPart& p : parts) {
    CTXPAR_CHECK(p.full_shape.size() == 2 && p.full_shape[1] == in,
                 "fused weight {} has shape {}; every part needs {} input features", p.name,
                 shape_str(p.full_shape), in);
    weights.push_back(ctx.load(p.name, p.full_shape, p.slice, ctx.options.weight_dtype));
    rows += weights.back().size(0);
    any_bias = any_bias || !p.bias_name.empty();
  }
  if (parts.size() == 1 && !any_bias) return kernels::Linear(std::move(weights[0]));
  Tensor w = Tensor::empty({rows, in}, ctx.options.weight_dtype);
  Tensor b = Tensor::zeros({rows}, DType::kF32);
  int64_t at = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t n = weights[i].size(0);
    w.slice(0, at, at + n).copy_from(weights[i]);
    if (!parts[i].bias_name.empty()) {
      b.slice(0, at, at + n)
          .copy_from(
              ctx.load(parts[i].bias_name, {parts[i].full_shape[0]}, parts[i].slice, DType::kF32));
    }
    at += n;
  }
  weights.clear();  // the fused tensor is the only persistent copy
  return any_bias ? kernels::Linear(std::move(w), std::move(b)) : kernels::Linear(std::move(w));
}

}  // namespace

ColumnParallelLinear::ColumnParallelLinear(const ModelContext& ctx,
                                           const std::vector<LinearPart>& parts)
    : ctx_(ctx), linear_(fuse_parts(ctx, parts)) {}

Tensor ColumnParallelLinear::forward(const Tensor& x) const {
  Tensor y = Tensor::empty({x.size(0), linear_.out_features()}, DType::kF32);
  linear_.forward(x, y, ctx_.pool);
  return y;
}

RowParallelLinear::RowParallelLinear(const ModelContext& ctx, const std::string& name,
                                     const Shape& full_shape, const std::string& bias_name)
    : ctx_(ctx), linear_([&] {
        Tensor w = ctx.load(name, full_shape, Slice::row_parallel(ctx.tp_rank(), ctx.tp_size()),
                            ctx.options.weight_dtype);
        // The bias is added once: by rank 0, before the sum over ranks.
        if (!bias_name.empty() && ctx.tp_rank() == 0) {
          return kernels::Linear(std::move(w),
                                 ctx.load(bias_name, {full_shape[0]}, Slice::full(), DType::kF32));
        }
        return kernels::Linear(std::move(w));
      }()) {}

Tensor RowParallelLinear::forward_partial(const Tensor& x) const {
  return linear_.forward(x, ctx_.pool);
}

void RowParallelLinear::reduce(Tensor& partial) const {
  if (ctx_.tp_size() > 1) ctx_.groups.tp().all_reduce(partial);
}

Tensor RowParallelLinear::forward(const Tensor& x) const {
  Tensor y = forward_partial(x);
  reduce(y);
  return y;
}

kernels::Linear load_replicated_linear(const ModelContext& ctx, const std::string& name,
                                       const Shape& full_shape, const std::string& bias_name) {
  Tensor w = ctx.load(name, full_shape, Slice::full(), ctx.options.weight_dtype);
  if (bias_name.empty()) return kernels::Linear(std::move(w));
  return kernels::Linear(std::move(w),
                         ctx.load(bias_name, {full_shape[0]}, Slice::full(), DType::kF32));
}

}  // namespace ctxpar::model
