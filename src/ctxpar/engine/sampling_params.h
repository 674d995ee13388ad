// SamplingParams: how one request turns logits into tokens and when it stops (vLLM's
// SamplingParams, the subset this engine implements).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ctxpar::engine {

struct SamplingParams {
  // Temperatures below this are greedy (as vLLM's _SAMPLING_EPS): dividing logits by a
  // tiny temperature overflows and means argmax anyway.
  static constexpr float kGreedyTemperature = 1e-5f;

  float temperature = 1.0f;  // >= 0; below kGreedyTemperature: greedy (argmax, ties -> lowest id)
  int32_t top_k = 0;         // keep the k most likely tokens; <= 0 (or >= vocab): off
  float top_p = 1.0f;        // nucleus mass in (0, 1]; 1: off
  // Set: the request draws from its own std::mt19937_64 seeded with it, so its tokens do not
  // depend on what else is in the batch. Unset: draws come from the sampler's shared generator.
  std::optional<uint64_t> seed;
  int64_t max_tokens = 16;              // output tokens at most, >= 1
  std::vector<int32_t> stop_token_ids;  // any of these ends the request (kept in the output)
  bool ignore_eos = false;              // keep generating past an EOS token
  std::vector<int32_t> eos_token_ids;  // the model's EOS ids (generation config), set by the engine

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
