#include "ctxpar/engine/logits_processors.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace ctxpar::engine {
namespace {

bool in_vocab(int32_t token, size_t vocab) {
  return token >= 0 && static_cast<size_t>(token) < vocab;
}

// The repetition, frequency and presence penalties (vLLM's apply_penalties).
void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const size_t vocab = logits.size();
  const bool repetition = params.repetition_penalty != 1.0f;
  const bool counted = params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f;
  if (!repetition && !counted) return;
  // A few hundred tokens against a vocabulary of 10^5: mark the tokens that occur instead of
  // scanning the vocabulary per token.
  std::vector<int32_t> output_count(vocab, 0);
  std::vector<uint8_t> seen(repetition ? vocab : 0, 0);
  for (const int32_t t : output) {
    if (!in_vocab(t, vocab)) continue;
    ++output_count[static_cast<size_t>(t)];
    if (repetition) seen[static_cast<size_t>(t)] = 1;
  }
  if (repetition) {
    for (const int32_t t : prompt) {
      if (in_vocab(t, vocab)) seen[static_cast<size_t>(t)] = 1;
    }
    for (size_t v = 0; v < vocab; ++v) {
      if (!seen[v]) continue;
      float& l = logits[v];
      l = l > 0.0f ? l / params.repetition_penalty : l * params.repetition_penalty;
    }
  }
  if (counted) {
    for (size_t v = 0; v < vocab; ++v) {
      const int32_t c = output_count[v];
      if (c == 0) continue;
      logits[v] -= params.frequency_penalty * static_cast<float>(c) + params.presence_penalty;
    }
  }
}

// vLLM's thinking budget (SamplingParams::ThinkingBudget) over prompt ++ output.
void force_thinking_end(std::span<float> logits, const SamplingParams::ThinkingBudget& b,
                        std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const auto n = static_cast<int64_t>(prompt.size() + output.size());
  const auto p = static_cast<int64_t>(prompt.size());
  const auto at = [&](int64_t i) { return i < p ? prompt[i] : output[i - p]; };
  const auto starts_at = [&](const std::vector<int32_t>& marker, int64_t i) {
    if (i + static_cast<int64_t>(marker.size()) > n) return false;
    for (size_t k = 0; k < marker.size(); ++k) {
      if (at(i + static_cast<int64_t>(k)) != marker[k]) return false;
    }
    return true;
  };
  // The last marker decides, by where it starts (an end marker at the same place wins): scanning
  // back stops there, usually within the thinking block.
  int64_t start = -1;
  for (int64_t i = n - 1; i >= 0 && start < 0; --i) {
    if (starts_at(b.end, i)) return;
    if (starts_at(b.start, i)) start = i;
  }
  if (start < 0 || n - start - static_cast<int64_t>(b.start.size()) < b.budget) return;
  // The tokens may already end with part of the end marker (forced in earlier steps).
  size_t written = 0;
  for (size_t k = 1; k < b.end.size() && static_cast<int64_t>(k) <= n; ++k) {
    bool match = true;
    for (size_t j = 0; j < k && match; ++j) match = at(n - static_cast<int64_t>(k - j)) == b.end[j];
    if (match) written = k;
  }
  const int32_t next = b.end[written];
  if (in_vocab(next, logits.size())) logits[static_cast<size_t>(next)] = 1.0e9f;
}

}  // namespace

bool changes_logits(const SamplingParams& params, int64_t num_output_tokens) {
  const bool min_tokens = num_output_tokens < params.min_tokens &&
                          (!params.eos_token_ids.empty() || !params.stop_token_ids.empty());
  return min_tokens || !params.logit_bias.empty() || !params.allowed_token_ids.empty() ||
         !params.bad_words_token_ids.empty() || params.repetition_penalty != 1.0f ||
         params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f ||
         params.thinking_budget.has_value();
}

void apply_logits_processors(std::span<float> logits, const SamplingParams& params,
                             std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const size_t vocab = logits.size();
  if (!params.allowed_token_ids.empty()) {
    std::vector<float> kept;
    kept.reserve(params.allowed_token_ids.size());
    for (const int32_t t : params.allowed_token_ids)
      kept.push_back(in_vocab(t, vocab) ? logits[static_cast<size_t>(t)] : 0.0f);
    std::fill(logits.begin(), logits.end(), -std::numeric_limits<float>::infinity());
    for (size_t i = 0; i < kept.size(); ++i) {
      const int32_t t = params.allowed_token_ids[i];
      if (in_vocab(t, vocab)) logits[static_cast<size_t>(t)] = kept[i];
    }
  }
  for (const auto& [t, bias] : params.logit_bias) {
    if (in_vocab(t, vocab)) logits[static_cast<size_t>(t)] += bias;
  }
  if (static_cast<int64_t>(output.size()) < params.min_tokens) {
    for (const auto* ids : {&params.eos_token_ids, &params.stop_token_ids}) {
      for (const int32_t t : *ids) {
        if (in_vocab(t, vocab))
          logits[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
      }
    }
  }
  apply_penalties(logits, params, prompt, output);
  for (const std::vector<int32_t>& word : params.bad_words_token_ids) {
    const size_t before = word.size() - 1;  // the tokens the output must end with
    if (before > output.size() || !in_vocab(word.back(), vocab)) continue;
    if (std::equal(word.begin(), word.end() - 1, output.end() - static_cast<ptrdiff_t>(before))) {
      logits[static_cast<size_t>(word.back())] = -std::numeric_limits<float>::infinity();
    }
  }
  // Last, as vLLM forces it: nothing after may weaken the forced token.
  if (params.thinking_budget) force_thinking_end(logits, *params.thinking_budget, prompt, output);
}

}  // namespace ctxpar::engine
