// Per-step attention metadata: what every layer's attention needs to know about the batch,
// built once per step and shared by all layers of a rank.
//
// The batch is a flat list of new tokens grouped by request (a request's new tokens are
// consecutive). Request i has num_computed[i] tokens already in the KV cache (its context)
// and num_scheduled[i] new tokens at positions num_computed[i] .. seq_lens[i] - 1.
// Decode requests (one new token, non-empty context) come first when the scheduler orders
// them so; num_decode_reqs counts that leading run, and every later request takes the
// prefill path, which is correct for any request (decode is only the faster form).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ctxpar/core/tensor.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::attention {

// One request's share of a step, as the scheduler decided it. Identical on every rank.
struct ScheduledRequest {
  int64_t num_computed = 0;          // tokens whose KV is already cached
  int64_t num_scheduled = 0;         // new tokens this step, >= 1
  std::vector<int32_t> block_table;  // virtual block ids covering num_computed + num_scheduled
  // A decode: one new token after a context (the builder counts the leading ones).
  bool is_decode() const { return num_scheduled == 1 && num_computed > 0; }
};

// Fields every attention type uses; computed by the normal builder, which stays the source
// of truth for request classification. Under DCP the same fields hold this rank's view
// (local slots and local key counts); DCP-only facts live in DcpMetadata.
struct CommonAttentionMetadata {
  int64_t num_tokens = 0;
  int64_t num_reqs = 0;
  int64_t num_decode_reqs = 0;  // leading requests with 1 new token and a context
  int64_t num_decode_tokens() const { return num_decode_reqs; }

  std::vector<int64_t> num_computed;  // [num_reqs]
  std::vector<int64_t> seq_lens;      // [num_reqs] num_computed + num_scheduled

  Tensor positions;     // [tokens] i64, global positions
  Tensor token_req;     // [tokens] i32, request index of each token
  Tensor query_start;   // [num_reqs + 1] i32, prefix sums of num_scheduled
  Tensor block_tables;  // [num_reqs, max_blocks] i32, rows padded with -1
  Tensor slot_mapping;  // [tokens] i64, this rank's cache row of each new token or -1

  // Keys of this rank's cache visible to each token, as local indices [0, n):
  Tensor context_key_lens;  // [tokens] i32: positions < num_computed of its request
  Tensor causal_key_lens;   // [tokens] i32: positions <= its own position (cache written first)
  std::vector<int64_t> local_context_lens;  // [num_reqs] this rank's rows of each context
};

// DCP-only facts (absent when N == 1).
struct DcpMetadata {
  int dcp_rank = 0;
  int dcp_size = 1;
  Tensor context_len_matrix;  // [num_reqs, N] i32: local context rows of request i on rank r
};

// One rank's contiguous slice of a step's tokens when they are split over the TP group
// (DSA-CP, sequence-parallel layers): the step's num_tokens are padded to size·per_rank and
// rank r holds rows [r·per_rank, (r+1)·per_rank), of which [first, last) are real tokens
// (possibly none: more ranks than tokens, or the padded tail).
struct TokenShard {
  int rank = 0;
  int size = 1;
  int64_t num_tokens = 0;  // real tokens of the step
  int64_t per_rank = 0;    // ceil(num_tokens / size), at least 1
  int64_t first = 0;       // first real token of this rank (a step-wide token index)
  int64_t last = 0;        // one past its last real token; last - first <= per_rank

  int64_t padded_tokens() const { return per_rank * size; }
  int64_t num_local() const { return last - first; }
};

// The shard of `rank` in a group of `size` ranks for a step of num_tokens tokens.
TokenShard make_token_shard(int64_t num_tokens, int rank, int size);

struct AttentionMetadata;

// DSA-CP-only facts (absent unless --additional-config enable_dsa_cp): the step's tokens are
// split over the TP group and each rank runs attention for its own slice with all heads
// (DESIGN.md §4 "DSA-CP"). The step's metadata (AttentionMetadata::common) still describes
// every token — the KV of all slices is written with it — while `local` describes this
// rank's slice alone, as a batch of its own: each request cut at the slice's edges, same
// block tables, same KV layout and DCP rank.
struct DsaCpMetadata {
  TokenShard shard;
  std::shared_ptr<const AttentionMetadata> local;
};

struct AttentionMetadata {
  CommonAttentionMetadata common;
  std::optional<DcpMetadata> dcp;
  std::optional<DsaCpMetadata> dsa_cp;
  kv::DcpLayout layout{1, 1, 1};  // the layout the slots and key counts were computed with

  // Whether every request of the step is a decode (one new token after a context). Every
  // rank sees the same batch, so all ranks agree on it and take the same collectives.
  bool decode_only() const { return common.num_tokens == common.num_decode_tokens(); }
};

// The normal (N = 1) builder.
class AttentionMetadataBuilder {
 public:
  explicit AttentionMetadataBuilder(int block_size);
  virtual ~AttentionMetadataBuilder() = default;

  // Throws ctxpar::Error for an empty or inconsistent request (num_scheduled < 1, negative
  // num_computed, a block table too short for its tokens).
  AttentionMetadata build(std::span<const ScheduledRequest> requests) const;

 protected:
  // For the DCP builder: the same metadata as seen by `rank` of a group laid out by `layout`.
  AttentionMetadataBuilder(const kv::DcpLayout& layout, int rank);
  virtual void build_extra(std::span<const ScheduledRequest> requests, AttentionMetadata& md) const;

  const kv::DcpLayout& layout() const { return layout_; }
  int rank() const { return rank_; }

 private:
  kv::DcpLayout layout_;
  int rank_;
};

}  // namespace ctxpar::attention
