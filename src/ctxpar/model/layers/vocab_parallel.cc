#include "ctxpar/model/layers/vocab_parallel.h"

#include <cstring>

#include "ctxpar/core/error.h"

namespace ctxpar::model {

VocabParallelEmbedding::VocabParallelEmbedding(const ModelContext& ctx, const std::string& name,
                                               int64_t vocab, int64_t hidden)
    : ctx_(ctx),
      weight_(ctx.load(name, {vocab, hidden}, Slice::vocab_parallel(ctx.tp_rank(), ctx.tp_size()),
                       ctx.options.weight_dtype)),
      vocab_(vocab),
      first_row_(weight_.size(0) * ctx.tp_rank()) {}

Tensor VocabParallelEmbedding::forward(const Tensor& token_ids) const {
  Tensor out = forward_partial(token_ids);
  if (ctx_.tp_size() > 1) ctx_.groups.tp().all_reduce(out);
  return out;
}

Tensor VocabParallelEmbedding::forward_partial(const Tensor& token_ids) const {
  const int64_t tokens = token_ids.size(0), hidden = weight_.size(1), rows = weight_.size(0);
  Tensor out = Tensor::zeros({tokens, hidden}, DType::kF32);
  const int32_t* ids = token_ids.data<int32_t>();
  for (int64_t t = 0; t < tokens; ++t) {
    CTXPAR_CHECK(ids[t] >= 0 && ids[t] < vocab_, "token id {} is outside the vocabulary [0, {})",
                 ids[t], vocab_);
    const int64_t row = ids[t] - first_row_;
    if (row < 0 || row >= rows) continue;  // another rank's row
    out.select(0, t).copy_from(weight_.select(0, row));
  }
  return out;
}

ParallelLmHead::ParallelLmHead(const ModelContext& ctx, const std::string& name, int64_t vocab,
                               int64_t hidden)
    : ctx_(ctx),
      linear_(ctx.load(name, {vocab, hidden}, Slice::vocab_parallel(ctx.tp_rank(), ctx.tp_size()),
                       ctx.options.weight_dtype)),
      vocab_(vocab) {}

ParallelLmHead::ParallelLmHead(const ModelContext& ctx, const VocabParallelEmbedding& tied,
                               int64_t vocab)
    : ctx_(ctx), linear_(tied.weight()), vocab_(vocab) {}

Tensor ParallelLmHead::forward(const Tensor& hidden) const {
  Tensor local = linear_.forward(hidden, ctx_.pool);  // [n, V_pad / T]
  if (ctx_.tp_size() == 1) return local.slice(1, 0, vocab_).contiguous();
  const Tensor all = ctx_.groups.tp().all_gather(local, 1);  // [n, V_pad]
  return all.slice(1, 0, vocab_).contiguous();
}

}  // namespace ctxpar::model
