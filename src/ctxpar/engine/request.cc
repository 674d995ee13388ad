#include "ctxpar/engine/request.h"

#include <utility>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {

std::string_view request_status_name(RequestStatus status) {
  switch (status) {
    case RequestStatus::kWaiting:
      return "waiting";
    case RequestStatus::kRunning:
      return "running";
    case RequestStatus::kPreempted:
      return "preempted";
    case RequestStatus::kFinishedStopped:
      return "finished_stopped";
    case RequestStatus::kFinishedLength:
      return "finished_length";
    case RequestStatus::kFinishedAborted:
      return "finished_aborted";
    case RequestStatus::kFinishedRejected:
      return "finished_rejected";
  }
  return "unknown";
}

bool is_finished(RequestStatus status) {
  return status == RequestStatus::kFinishedStopped || status == RequestStatus::kFinishedLength ||
         status == RequestStatus::kFinishedAborted || status == RequestStatus::kFinishedRejected;
}

Request::Request(RequestId id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
                 int64_t arrival_index, kv::BlockTable block_table)
    : id_(std::move(id)),
      tokens_(std::move(prompt_token_ids)),
      num_prompt_tokens_(static_cast<int64_t>(tokens_.size())),
      params_(std::move(params)),
      arrival_index_(arrival_index),
      block_table_(std::move(block_table)) {
  CTXPAR_CHECK(block_table_.num_blocks() == 0,
               "request '{}' was given a block table holding {} blocks; a new request starts "
               "with none",
               id_, block_table_.num_blocks());
  if (params_.seed) generator_.emplace(*params_.seed);
}

std::string_view Request::finish_reason() const {
  switch (status_) {
    case RequestStatus::kFinishedStopped:
      return "stop";
    case RequestStatus::kFinishedLength:
      return "length";
    case RequestStatus::kFinishedAborted:
      return "abort";
    case RequestStatus::kFinishedRejected:
      return "rejected";
    default:
      return "";
  }
}

void Request::set_num_computed_tokens(int64_t n) {
  CTXPAR_CHECK(n >= 0 && n <= num_tokens(),
               "request '{}': {} computed tokens is outside [0, {}] (its token count)", id_, n,
               num_tokens());
  num_computed_tokens_ = n;
}

void Request::hash_full_blocks(kv::BlockHashFunction hash, int64_t tokens_per_block) {
  CTXPAR_CHECK(tokens_per_block >= 1, "tokens per block {} must be >= 1", tokens_per_block);
  const int64_t full = num_tokens() / tokens_per_block;
  for (auto j = static_cast<int64_t>(block_hashes_.size()); j < full; ++j) {
    const auto block = std::span(tokens_).subspan(static_cast<size_t>(j * tokens_per_block),
                                                  static_cast<size_t>(tokens_per_block));
    const kv::BlockHash* parent = j == 0 ? nullptr : &block_hashes_.back();
    block_hashes_.push_back(hash(parent, block, {}));
  }
}

void Request::preempt() {
  block_table_.release();
  num_computed_tokens_ = 0;
  status_ = RequestStatus::kPreempted;
  ++num_preemptions_;
}

void Request::finish(RequestStatus status, std::string message, std::optional<int32_t> stop_token) {
  CTXPAR_CHECK(engine::is_finished(status),
               "request '{}' cannot finish with status {}; use a finished_* status", id_,
               request_status_name(status));
  block_table_.release();
  status_ = status;
  finish_message_ = std::move(message);
  stop_token_ = stop_token;
}

}  // namespace ctxpar::engine
