#include "ctxpar/model/layers/parallel_linear.h"

#include "ctxpar/core/error.h"

namespace ctxpar::model {

ColumnParallelLinear::ColumnParallelLinear(const ModelContext& ctx,
                                           const std::vector<LinearPart>& parts)
    : ctx_(ctx), linear_(load_model_linear(ctx, parts)) {}

Tensor ColumnParallelLinear::forward(const Tensor& x) const {
  Tensor y = Tensor::empty({x.size(0), linear_.out_features()}, DType::kF32);
  linear_.forward(x, y, ctx_.pool);
  return y;
}

RowParallelLinear::RowParallelLinear(const ModelContext& ctx, const std::string& name,
                                     const Shape& full_shape, const std::string& bias_name)
    : ctx_(ctx),
      // The bias is added once: by rank 0, before the sum over ranks.
      linear_(load_model_linear(
          ctx,
          {LinearPart{name, full_shape, Slice::row_parallel(ctx.tp_rank(), ctx.tp_size()),
                      bias_name}},
          /*bias_once=*/true)) {}

Tensor RowParallelLinear::forward_partial(const Tensor& x) const {
  Tensor y = Tensor::empty({x.size(0), linear_.out_features()}, DType::kF32);
  linear_.forward(x, y, ctx_.pool);
  return y;
}

void RowParallelLinear::reduce(Tensor& partial) const {
  if (ctx_.tp_size() > 1) ctx_.groups.tp().all_reduce(partial);
}

Tensor RowParallelLinear::forward(const Tensor& x) const {
  Tensor y = forward_partial(x);
  reduce(y);
  return y;
}

ModelLinear load_replicated_linear(const ModelContext& ctx, const std::string& name,
                                   const Shape& full_shape, const std::string& bias_name) {
  return load_model_linear(ctx, {LinearPart{name, full_shape, Slice::full(), bias_name}});
}

}  // namespace ctxpar::model
