// Vocab-parallel embedding and LM head. The vocabulary is padded up to a multiple of T and
// each rank holds V_pad / T consecutive rows; padding rows are zero.
#pragma once

#include <optional>

#include "ctxpar/kernels/linear.h"
#include "ctxpar/model/layers/model_context.h"

namespace ctxpar::model {

class VocabParallelEmbedding {
 public:
  // name: [vocab, hidden] (e.g. "model.embed_tokens.weight").
  VocabParallelEmbedding(const ModelContext& ctx, const std::string& name, int64_t vocab,
                         int64_t hidden);
  // token_ids [tokens] i32 → [tokens, hidden] f32 (all-reduced: every rank gets the rows).
  // An id outside [0, vocab) is an Error naming it.
  Tensor forward(const Tensor& token_ids) const;
  // The same before the TP sum: this rank's rows filled, the others zero.
  Tensor forward_partial(const Tensor& token_ids) const;
  // This rank's rows [V_pad / T, hidden], shared with a tied LM head.
  const Tensor& weight() const { return weight_; }

 private:
  ModelContext ctx_;
  Tensor weight_;
  int64_t vocab_;
  int64_t first_row_;
};

class ParallelLmHead {
 public:
  // Untied: loads `name`; tied: reuses the embedding's rows (no second copy).
  ParallelLmHead(const ModelContext& ctx, const std::string& name, int64_t vocab, int64_t hidden);
  ParallelLmHead(const ModelContext& ctx, const VocabParallelEmbedding& tied, int64_t vocab);
  // hidden [n, hidden] → logits [n, vocab] f32 on every rank (all-gathered over TP).
  Tensor forward(const Tensor& hidden) const;

 private:
  ModelContext ctx_;
  kernels::Linear linear_;  // [V_pad / T, hidden]
  int64_t vocab_;
};

}  // namespace ctxpar::model
