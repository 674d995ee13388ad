// SamplingParams: how one request turns logits into tokens and when it stops (vLLM's
// SamplingParams, the subset this engine implements, with vLLM's defaults and rules).
// Stop strings and n > 1 live above the engine (the server detokenizes and fans out).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ctxpar::structured {
class JsonAutomaton;
class TokenVocabulary;
}  // namespace ctxpar::structured

namespace ctxpar::engine {

struct SamplingParams {
  // Temperatures below this are greedy (as vLLM's _SAMPLING_EPS): dividing logits by a
  // tiny temperature overflows and means argmax anyway.
  static constexpr float kGreedyTemperature = 1e-5f;

  static constexpr float kMaxTemperature = 2.0f;
  static constexpr float kMaxPenalty = 2.0f;  // |presence_penalty|, |frequency_penalty|

  // In [0, 2]; below kGreedyTemperature: greedy (argmax, ties -> lowest id).
  float temperature = 1.0f;
  int32_t top_k = 0;   // keep the k most likely tokens; 0 or -1 (or >= vocab): off
  float top_p = 1.0f;  // nucleus mass in (0, 1]; 1: off
  float min_p = 0.0f;  // in [0, 1]: drop tokens less likely than min_p x the most likely one
  // Penalties on the logits before temperature, as vLLM applies them: repetition (> 0, 1 off)
  // divides positive / multiplies negative logits of every token in the prompt or output;
  // frequency and presence (in [-2, 2], 0 off) subtract their value x the token's count in
  // the output, and x (count > 0).
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // vLLM's logit_bias and allowed_token_ids, applied first (before min_tokens and the
  // penalties): non-empty allowed_token_ids give every other token -inf; each (token, bias)
  // adds bias (in [-100, 100], as the server clamps it) to that token's logit. At most
  // kMaxTokenList entries each; ids must be in the vocabulary (the engine checks).
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::vector<int32_t> allowed_token_ids;
  static constexpr size_t kMaxTokenList = 1024;
  // vLLM's bad_words after tokenization: the last token of each sequence gets -inf (after the
  // penalties) whenever the output ends with the sequence's other tokens. At most
  // kMaxBadWords sequences of kMaxBadWordTokens tokens in all (vLLM's defaults).
  std::vector<std::vector<int32_t>> bad_words_token_ids;
  static constexpr size_t kMaxBadWords = 128;
  static constexpr size_t kMaxBadWordTokens = 1024;
  // vLLM's thinking_token_budget (with a reasoning parser; its markers tokenized): while the
  // tokens so far (prompt and output) are inside a thinking block, after the last `start`
  // marker with no `end` marker from there on, and `budget` tokens or more follow the marker,
  // the next token of `end` is forced (its logit set to 1e9 after every other change): the
  // first one, or the one after the part of `end` the tokens already end with.
  struct ThinkingBudget {
    int64_t budget = 0;               // >= 0
    std::vector<int32_t> start, end;  // not empty
  };
  std::optional<ThinkingBudget> thinking_budget;
  // Set: the request draws from its own std::mt19937_64 seeded with it, so its tokens do not
  // depend on what else is in the batch. Unset: draws come from the sampler's shared generator.
  std::optional<uint64_t> seed;
  int64_t max_tokens = 16;  // output tokens at most, >= 1
  // Until this many output tokens, EOS and stop_token_ids can be neither sampled (their
  // logits are masked) nor end the request. In [0, max_tokens].
  int64_t min_tokens = 0;
  std::vector<int32_t> stop_token_ids;  // any of these ends the request (kept in the output)
  bool ignore_eos = false;              // keep generating past an EOS token
  std::vector<int32_t> eos_token_ids;  // the model's EOS ids (generation config), set by the engine
  // Set: each output token comes with its log-probability and those of the `logprobs` most
  // likely tokens (0: the sampled one only), from the raw logits (before penalties and
  // temperature) over the whole vocabulary, as vLLM returns them by default. At most
  // EngineConfig::max_logprobs (the engine checks it).
  std::optional<int32_t> logprobs;
  // Set: each prompt token after the first comes with its log-probability given the tokens
  // before it, and those of the `prompt_logprobs` most likely tokens there (vLLM's
  // prompt_logprobs; same rules as logprobs). Such a request never reads the prefix cache:
  // every prompt position is computed.
  std::optional<int32_t> prompt_logprobs;
  // Structured outputs (vLLM's response_format / structured_outputs / forced tool calls): set,
  // each sampled token keeps the output a prefix of a document the automaton accepts (other
  // tokens get -inf before temperature and truncation; logprobs stay the model's), an EOS or
  // stop token may come only once the document is whole, and must once nothing can follow.
  // token_vocabulary spells the model's tokens as bytes; both are shared and immutable.
  std::shared_ptr<const structured::JsonAutomaton> structured_output;
  std::shared_ptr<const structured::TokenVocabulary> token_vocabulary;
  // Non-empty: the grammar applies only to the outputs after the first occurrence of these
  // tokens (a thinking model's "</think>"; vLLM's reasoning_ended), and none before it.
  std::vector<int32_t> structured_output_after;

  bool is_greedy() const { return temperature < kGreedyTemperature; }
  bool is_eos(int32_t token) const;
  bool is_stop_token(int32_t token) const;

  // The first thing wrong with these params, as a message naming the value and the valid
  // range; nullopt when they are valid. The scheduler rejects a request with this message.
  std::optional<std::string> problem() const;
  // Throws ctxpar::Error with problem() when there is one.
  void validate() const;
};

}  // namespace ctxpar::engine
