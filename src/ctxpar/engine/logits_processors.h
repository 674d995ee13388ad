// The per-request changes vLLM makes to a row of logits before temperature and truncation,
// in its order: allowed_token_ids and logit_bias, min_tokens (one kernel in vLLM), then the
// repetition, frequency and presence penalties (apply_penalties), then bad_words, and last the
// thinking budget's forced end of reasoning. The sampler applies them to a copy of the row; the
// model's logits are never changed (logprobs are computed from them).
#pragma once

#include <cstdint>
#include <span>

#include "ctxpar/engine/sampling_params.h"

namespace ctxpar::engine {

// Whether apply_logits_processors changes anything for a request with these params that has
// generated num_output_tokens so far.
bool changes_logits(const SamplingParams& params, int64_t num_output_tokens);

// logits: one row [vocab], changed in place. prompt / output: the request's tokens so far
// (ids outside [0, vocab) are ignored). With allowed_token_ids, every other token gets -inf;
// each logit_bias entry adds its bias. While output.size() < min_tokens, every EOS and stop
// token id gets -inf. Then each token that occurs in the prompt or the output has its logit
// divided by repetition_penalty if positive, multiplied by it otherwise; each token that
// occurs c > 0 times in the output loses frequency_penalty·c + presence_penalty. Last, the final
// token of each bad_words_token_ids sequence whose other tokens end the output gets -inf. With a
// thinking_budget, the forced token of the end marker gets 1e9 (SamplingParams::ThinkingBudget).
void apply_logits_processors(std::span<float> logits, const SamplingParams& params,
                             std::span<const int32_t> prompt, std::span<const int32_t> output);

}  // namespace ctxpar::engine
