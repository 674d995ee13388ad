#include "ctxpar/model/layers/output_projection.h"

#include <algorithm>
#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::model {
namespace {

// The int8 shard of W (this rank's columns, f32 [out, in / T]), per the header's formulas.
kernels::Int8Linear quantize_shard(const ModelContext& ctx, const Tensor& w) {
  const int64_t out = w.size(0), in = w.size(1);
  const float* wp = w.data<float>();
  Tensor smooth = Tensor::empty({in}, DType::kF32);
  for (int64_t i = 0; i < in; ++i) {
    float m = 0;
    for (int64_t o = 0; o < out; ++o) m = std::max(m, std::fabs(wp[o * in + i]));
    smooth.data<float>()[i] = m > 0 ? 1.0f / std::sqrt(m) : 1.0f;
  }
  // W·smooth and its row maxima over this rank's columns, then over the whole row.
  Tensor smoothed = Tensor::empty({out, in}, DType::kF32);
  Tensor row_max = Tensor::zeros({1, out}, DType::kF32);
  for (int64_t o = 0; o < out; ++o) {
    float m = 0;
    for (int64_t i = 0; i < in; ++i) {
      const float v = wp[o * in + i] * smooth.data<float>()[i];
      smoothed.data<float>()[o * in + i] = v;
      m = std::max(m, std::fabs(v));
    }
    row_max.data<float>()[o] = m;
  }
  if (ctx.tp_size() > 1) row_max = ctx.groups.tp().all_gather(row_max, 0);  // [T, out]
  Tensor scale = Tensor::empty({out}, DType::kF32);
  for (int64_t o = 0; o < out; ++o) {
    float m = 0;
    for (int64_t r = 0; r < row_max.size(0); ++r)
      m = std::max(m, row_max.data<float>()[r * out + o]);
    scale.data<float>()[o] = m > 0 ? m / 127.0f : 1.0f;
  }
  Tensor q = Tensor::empty({out, in}, DType::kI8);
  for (int64_t o = 0; o < out; ++o) {
    const float s = scale.data<float>()[o];
    for (int64_t i = 0; i < in; ++i) {
      const float r = std::nearbyint(smoothed.data<float>()[o * in + i] / s);
      q.data<int8_t>()[o * in + i] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
    }
  }
  return kernels::Int8Linear(std::move(q), std::move(scale), std::move(smooth));
}

}  // namespace

OutputProjection::OutputProjection(const ModelContext& ctx, const std::string& name,
                                   const Shape& full_shape)
    : ctx_(ctx) {
  CTXPAR_CHECK(full_shape.size() == 2 && full_shape[1] % ctx.tp_size() == 0,
               "{}: o_proj {} needs its {} input features divisible by --tensor-parallel-size {}",
               name, shape_str(full_shape), full_shape.size() == 2 ? full_shape[1] : 0,
               ctx.tp_size());
  out_ = full_shape[0];
  in_ = full_shape[1];
  const Slice shard = Slice::row_parallel(ctx.tp_rank(), ctx.tp_size());
  if (ctx.options.o_proj_quant == OProjQuant::kInt8) {
    int8_.emplace(quantize_shard(ctx, ctx.load(name, full_shape, shard, DType::kF32)));
  } else if (ctx.options.o_proj_quant == OProjQuant::kNone && !ctx.options.enable_dsa_cp &&
             ctx.keeps_fp8(name)) {
    fp8_.emplace(ctx.load_fp8(name, full_shape, shard), std::nullopt, ctx.options.weight_dtype);
  } else {
    const DType dtype =
        ctx.options.o_proj_quant == OProjQuant::kBf16 ? DType::kBF16 : ctx.options.weight_dtype;
    dense_.emplace(ctx.load(name, full_shape, shard, dtype));
  }
}

Tensor OutputProjection::forward_partial(const Tensor& x) const {
  CTXPAR_CHECK(!full_weight_active(),
               "o_proj: the row-parallel form runs on the TP shard, but the full weight is "
               "active (a FullWeight is alive)");
  Tensor y = Tensor::empty({x.size(0), out_}, DType::kF32);
  if (dense_) {
    dense_->forward(x, y, ctx_.pool);
    return y;
  }
  if (fp8_) {
    fp8_->forward(x, y, ctx_.pool);
    return y;
  }
  // The token's amax over the whole row: the max of every rank's slice.
  Tensor amax = Tensor::empty({1, x.size(0)}, DType::kF32);
  Tensor mine = amax.select(0, 0);
  kernels::smoothed_absmax_per_token(x, &*int8_->input_smooth(), mine);
  if (ctx_.tp_size() > 1) {
    const Tensor all = ctx_.groups.tp().all_gather(amax, 0);  // [T, tokens]
    for (int64_t t = 0; t < x.size(0); ++t) {
      float m = 0;
      for (int64_t r = 0; r < all.size(0); ++r)
        m = std::max(m, all.data<float>()[r * x.size(0) + t]);
      mine.data<float>()[t] = m;
    }
  }
  int8_->forward_with_amax(x, mine, y, ctx_.pool);
  return y;
}

void OutputProjection::reduce(Tensor& partial) const {
  if (ctx_.tp_size() > 1) ctx_.groups.tp().all_reduce(partial);
}

Tensor OutputProjection::forward(const Tensor& x) const {
  Tensor y = forward_partial(x);
  reduce(y);
  return y;
}

OutputProjection::FullWeight::~FullWeight() {
  projection_.full_dense_ = nullptr;
  projection_.full_int8_ = nullptr;
}

OutputProjection::FullWeight OutputProjection::use_full_weight(FullWeightWorkspace& workspace) {
  CTXPAR_CHECK(!full_weight_active(), "o_proj: the full weight is already active");
  CTXPAR_CHECK(!fp8_, "o_proj: an FP8 shard has no full-weight form (DSA-CP loads it dense)");
  Communicator& tp = ctx_.groups.tp();
  const double received = static_cast<double>(tp.size() - 1) / static_cast<double>(tp.size());
  if (dense_) {
    const Tensor& shard = dense_->weight();
    Tensor full = workspace.weight(shard.dtype(), out_, in_);
    tp.all_gather(shard, full, 1);  // [out, in / T] per rank → [out, in], rank order
    workspace.record_gathered(static_cast<int64_t>(static_cast<double>(full.nbytes()) * received));
    full_dense_ = &workspace.linear(shard.dtype(), out_, in_);
  } else {
    // Communicators move int8 as raw bytes.
    const Tensor& shard = int8_->weight();
    Tensor full = workspace.weight(DType::kI8, out_, in_);
    const Tensor shard_bytes =
        Tensor::wrap(const_cast<void*>(shard.raw()), shard.shape(), DType::kU8);
    Tensor full_bytes = Tensor::wrap(full.raw(), full.shape(), DType::kU8);
    tp.all_gather(shard_bytes, full_bytes, 1);
    Tensor smooth = workspace.vector(FullWeightWorkspace::kSmoothing, in_);
    tp.all_gather(*int8_->input_smooth(), smooth, 0);
    workspace.vector(FullWeightWorkspace::kScale, out_).copy_from(int8_->weight_scale());
    workspace.record_gathered(
        static_cast<int64_t>(static_cast<double>(full.nbytes() + smooth.nbytes()) * received));
    full_int8_ = &workspace.int8_linear(out_, in_);
  }
  return FullWeight(*this);
}

Tensor OutputProjection::forward_full(const Tensor& x) const {
  CTXPAR_CHECK(full_weight_active(),
               "o_proj: forward_full needs the full weight; call use_full_weight first");
  Tensor y = Tensor::empty({x.size(0), out_}, DType::kF32);
  if (full_dense_ != nullptr) {
    full_dense_->forward(x, y, ctx_.pool);
  } else {
    full_int8_->forward(x, y, ctx_.pool);
  }
  return y;
}

std::vector<const Tensor*> OutputProjection::persistent_tensors() const {
  if (dense_) return {&dense_->weight()};
  if (fp8_) return {&fp8_->weight(), &fp8_->scale_inv()};
  return {&int8_->weight(), &int8_->weight_scale(), &*int8_->input_smooth()};
}

const Tensor& OutputProjection::active_weight() const {
  if (full_dense_ != nullptr) return full_dense_->weight();
  if (full_int8_ != nullptr) return full_int8_->weight();
  if (fp8_) return fp8_->weight();
  return dense_ ? dense_->weight() : int8_->weight();
}

}  // namespace ctxpar::model
