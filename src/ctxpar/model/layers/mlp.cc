#include "ctxpar/model/layers/mlp.h"

#include "ctxpar/kernels/activation.h"

namespace ctxpar::model {

GatedMlp::GatedMlp(const ModelContext& ctx, const std::string& prefix, int64_t hidden,
                   int64_t intermediate, bool bias)
    : gate_up_(ctx, {LinearPart{prefix + ".gate_proj.weight",
                                {intermediate, hidden},
                                Slice::column_parallel(ctx.tp_rank(), ctx.tp_size()),
                                bias ? prefix + ".gate_proj.bias" : ""},
                     LinearPart{prefix + ".up_proj.weight",
                                {intermediate, hidden},
                                Slice::column_parallel(ctx.tp_rank(), ctx.tp_size()),
                                bias ? prefix + ".up_proj.bias" : ""}}),
      down_(ctx, prefix + ".down_proj.weight", {hidden, intermediate},
            bias ? prefix + ".down_proj.bias" : ""),
      pool_(&ctx.pool) {}

Tensor GatedMlp::forward_partial(const Tensor& x) const {
  const Tensor gate_up = gate_up_.forward(x);  // [tokens, 2·I_l]
  Tensor act = Tensor::empty({x.size(0), gate_up.size(1) / 2}, DType::kF32);
  kernels::silu_and_mul(gate_up, act, pool_);
  return down_.forward_partial(act);
}

Tensor GatedMlp::forward(const Tensor& x) const {
  Tensor y = forward_partial(x);
  down_.reduce(y);
  return y;
}

}  // namespace ctxpar::model
