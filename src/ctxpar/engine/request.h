// Request: one generation request as the scheduler tracks it — its tokens, how far its KV is
// computed, the KV blocks it holds, and how it ended.
//
// Tokens are kept as one sequence, prompt then outputs, because that is what the model
// consumes: a request preempted by recompute re-prefills all of them (prompt and the outputs
// generated so far) and then continues exactly where it stopped.
//
// The scheduler owns requests and is the only caller of the mutators; everyone else reads.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/engine/sampling_params.h"
#include "ctxpar/kv/block_hash.h"
#include "ctxpar/kv/block_table.h"

namespace ctxpar::engine {

// Request ids are strings, as in vLLM and the OpenAI API ("cmpl-..."); unique among the
// requests a scheduler holds.
using RequestId = std::string;

enum class RequestStatus : uint8_t {
  kWaiting,          // queued, never scheduled
  kRunning,          // holds KV blocks and is scheduled each step it fits
  kPreempted,        // evicted by recompute: back in the waiting queue with no blocks
  kFinishedStopped,  // sampled an EOS or stop token
  kFinishedLength,   // reached max_tokens, max_model_len or the KV capacity
  kFinishedAborted,  // abort() by the caller
  kFinishedRejected  // never admitted: the prompt or params cannot be served
};
std::string_view request_status_name(RequestStatus status);  // "waiting", "finished_length", ...
bool is_finished(RequestStatus status);

class Request {
 public:
  // A waiting request. `block_table` must be empty (it draws from the scheduler's pool).
  // Seeds the request's own generator when params.seed is set.
  Request(RequestId id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
          int64_t arrival_index, kv::BlockTable block_table);

  const RequestId& id() const { return id_; }
  const SamplingParams& sampling_params() const { return params_; }
  // Order of arrival at the scheduler: FCFS admission and preemption (youngest first) use it.
  int64_t arrival_index() const { return arrival_index_; }

  std::span<const int32_t> prompt_token_ids() const {
    return std::span(tokens_).first(static_cast<size_t>(num_prompt_tokens_));
  }
  std::span<const int32_t> output_token_ids() const {
    return std::span(tokens_).subspan(static_cast<size_t>(num_prompt_tokens_));
  }
  // Prompt followed by outputs: the sequence whose KV the cache holds (a prefix of).
  std::span<const int32_t> all_token_ids() const { return tokens_; }
  int64_t num_prompt_tokens() const { return num_prompt_tokens_; }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens_.size()); }

  // Leading tokens of all_token_ids() whose KV is in the cache; the rest are computed by the
  // next steps. 0 after a preemption.
  int64_t num_computed_tokens() const { return num_computed_tokens_; }

  RequestStatus status() const { return status_; }
  bool is_finished() const { return engine::is_finished(status_); }
  // OpenAI-style reason for a finished request: "stop", "length", "abort" or "rejected";
  // empty while it is unfinished.
  std::string_view finish_reason() const;
  // Why it finished, for people: e.g. which limit it reached or why it was rejected.
  const std::string& finish_message() const { return finish_message_; }
  // The EOS or stop token that ended a kFinishedStopped request.
  std::optional<int32_t> stop_token() const { return stop_token_; }
  int32_t num_preemptions() const { return num_preemptions_; }
  // Prompt tokens whose KV came from the prefix cache when the request was first scheduled
  // (vLLM's num_cached_tokens; later resumes after preemption do not change it).
  int64_t num_cached_tokens() const { return num_cached_tokens_; }

  const kv::BlockTable& block_table() const { return block_table_; }

  // Chained hashes of the full virtual blocks of all_token_ids() hashed so far (prefix
  // caching): entry j names positions [j·B·N, (j+1)·B·N). They depend on the tokens alone, so
  // they survive preemption.
  std::span<const kv::BlockHash> block_hashes() const { return block_hashes_; }

  // The request's own generator when it has a seed, else null (use the sampler's shared one).
  // Sampling advances it, which does not change the request's logical state, hence const.
  std::mt19937_64* generator() const { return generator_ ? &*generator_ : nullptr; }

  // --- Scheduler only. ---
  kv::BlockTable& mutable_block_table() { return block_table_; }
  void set_status(RequestStatus status) { status_ = status; }
  void set_num_computed_tokens(int64_t n);
  void set_num_cached_tokens(int64_t n) { num_cached_tokens_ = n; }
  void append_output_token(int32_t token) { tokens_.push_back(token); }
  // Hashes every full block of tokens_per_block positions of all_token_ids() that is not
  // hashed yet, each chained to the one before (no extra keys: no request has any yet).
  void hash_full_blocks(kv::BlockHashFunction hash, int64_t tokens_per_block);
  // Recompute preemption: frees the blocks, forgets the computed KV, status kPreempted.
  void preempt();
  // Frees the blocks and records how it ended. `status` must be a finished one.
  void finish(RequestStatus status, std::string message,
              std::optional<int32_t> stop_token = std::nullopt);

 private:
  RequestId id_;
  std::vector<int32_t> tokens_;  // [num_tokens] prompt then outputs
  int64_t num_prompt_tokens_;
  SamplingParams params_;
  int64_t arrival_index_;
  kv::BlockTable block_table_;
  std::vector<kv::BlockHash> block_hashes_;
  mutable std::optional<std::mt19937_64> generator_;

  RequestStatus status_ = RequestStatus::kWaiting;
  int64_t num_computed_tokens_ = 0;
  int32_t num_preemptions_ = 0;
  int64_t num_cached_tokens_ = 0;
  std::string finish_message_;
  std::optional<int32_t> stop_token_;
};

}  // namespace ctxpar::engine
