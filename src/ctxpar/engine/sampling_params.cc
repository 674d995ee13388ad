#include "ctxpar/engine/sampling_params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {
namespace {

bool contains(std::span<const int32_t> ids, int32_t token) {
  return std::find(ids.begin(), ids.end(), token) != ids.end();
}

std::optional<std::string> negative_id(std::span<const int32_t> ids, const char* field) {
  for (const int32_t id : ids) {
    if (id < 0) return fmt::format("{} {} contains {}; token ids are >= 0", field, ids, id);
  }
  return std::nullopt;
}

}  // namespace

bool SamplingParams::is_eos(int32_t token) const {
  return contains(eos_token_ids, token);
}

bool SamplingParams::is_stop_token(int32_t token) const {
  return contains(stop_token_ids, token);
}

std::optional<std::string> SamplingParams::problem() const {
  // The messages are vLLM's (sampling_params.py _verify_args), which clients match on, with
  // the rule added where vLLM leaves it out. Negated comparisons also catch NaN.
  if (!(presence_penalty >= -kMaxPenalty && presence_penalty <= kMaxPenalty)) {
    return fmt::format("presence_penalty must be in [-2, 2], got {}.", presence_penalty);
  }
  if (!(frequency_penalty >= -kMaxPenalty && frequency_penalty <= kMaxPenalty)) {
    return fmt::format("frequency_penalty must be in [-2, 2], got {}.", frequency_penalty);
  }
  if (!std::isfinite(repetition_penalty)) {
    return fmt::format("repetition_penalty must be a finite number, got {}.", repetition_penalty);
  }
  if (!(repetition_penalty > 0.0f)) {
    return fmt::format("repetition_penalty must be greater than zero, got {}.", repetition_penalty);
  }
  if (!std::isfinite(temperature)) {
    return fmt::format("temperature must be a finite number, got {}.", temperature);
  }
  if (temperature < 0.0f) {
    return fmt::format("temperature must be non-negative, got {} (0 = greedy).", temperature);
  }
  if (temperature > kMaxTemperature) {
    return fmt::format("temperature must be in [0, 2], got {}.", temperature);
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return fmt::format("top_p must be in (0, 1], got {} (1 turns nucleus sampling off).", top_p);
  }
  if (top_k < -1) {
    return fmt::format("top_k must be 0 (disable), or at least 1, got {}.", top_k);
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return fmt::format("min_p must be in [0, 1], got {}.", min_p);
  }
  if (max_tokens < 1) {
    return fmt::format("max_tokens must be at least 1, got {}.", max_tokens);
  }
  if (min_tokens < 0) {
    return fmt::format("min_tokens must be greater than or equal to 0, got {}.", min_tokens);
  }
  if (min_tokens > max_tokens) {
    return fmt::format("min_tokens must be less than or equal to max_tokens={}, got {}.",
                       max_tokens, min_tokens);
  }
  if (logprobs && *logprobs < 0) {
    return fmt::format("logprobs must be non-negative, got {}.", *logprobs);
  }
  if (prompt_logprobs && *prompt_logprobs < 0) {
    return fmt::format("prompt_logprobs must be non-negative, got {}.", *prompt_logprobs);
  }
  if (auto bad = negative_id(stop_token_ids, "stop_token_ids")) return bad;
  if (auto bad = negative_id(allowed_token_ids, "allowed_token_ids")) return bad;
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) return fmt::format("logit_bias has a negative token id {}.", token);
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return fmt::format("logit_bias of token {} must be in [-100, 100], got {}.", token, bias);
    }
  }
  if (thinking_budget) {
    if (thinking_budget->budget < 0) {
      return fmt::format(
          "thinking_token_budget must be a non-negative integer or -1 for "
          "unlimited, got {}.",
          thinking_budget->budget);
    }
    if (thinking_budget->start.empty() || thinking_budget->end.empty())
      return std::string("thinking_token_budget needs the reasoning markers' token ids.");
    if (auto bad = negative_id(thinking_budget->start, "thinking_token_budget")) return bad;
    if (auto bad = negative_id(thinking_budget->end, "thinking_token_budget")) return bad;
  }
  size_t bad_word_tokens = 0;
  for (const auto& word : bad_words_token_ids) {
    if (word.empty()) return std::string("bad_words entries must tokenize to at least one token.");
    if (auto bad = negative_id(word, "bad_words")) return bad;
    bad_word_tokens += word.size();
  }
  if (bad_words_token_ids.size() > kMaxBadWords) {
    return fmt::format("Too many bad words after tokenization: {}. The max number is {}.",
                       bad_words_token_ids.size(), kMaxBadWords);
  }
  if (bad_word_tokens > kMaxBadWordTokens) {
    return fmt::format("Too many total bad word tokens: {}. The max is {}.", bad_word_tokens,
                       kMaxBadWordTokens);
  }
  if (logit_bias.size() > kMaxTokenList) {
    return fmt::format("Too many logit bias tokens: {}. The max size is {}.", logit_bias.size(),
                       kMaxTokenList);
  }
  if (allowed_token_ids.size() > kMaxTokenList) {
    return fmt::format("Too many allowed token IDs: {}. The max size is {}.",
                       allowed_token_ids.size(), kMaxTokenList);
  }
  if (auto bad = negative_id(eos_token_ids, "eos_token_ids")) return bad;
  if (structured_output && !token_vocabulary) {
    return std::string("structured_output needs the token_vocabulary that spells its tokens");
  }
  return std::nullopt;
}

void SamplingParams::validate() const {
  if (const auto message = problem()) CTXPAR_FAIL("invalid sampling params: {}", *message);
}

}  // namespace ctxpar::engine
