// DcpLayout: where a token's KV lives under Decode Context Parallelism (DESIGN.md §2).
//
// The KV of a request is sharded along the sequence over the N ranks of a DCP group in runs
// of I consecutive positions (the interleave): positions [0, I) go to rank 0, [I, 2I) to
// rank 1, ..., wrapping every N·I positions. Each rank stores its tokens densely, in position
// order, as its "local sequence"; local_index(p) is the token's index there. A virtual block
// is B·N consecutive positions; one block id names it on every rank, and on each rank it is
// B consecutive cache rows holding that rank's B tokens of the virtual block (B % I == 0
// makes that exactly B). This class is the single place that knows this mapping: attention,
// the scheduler and the tools all ask it.
//
// Positions, local indices and slots are int64; block ids are int32. Per-token functions are
// inline because they run once per token per layer on the hot path.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::kv {

class DcpLayout {
 public:
  // Throws ctxpar::Error unless dcp_size >= 1, block_size >= 1, 1 <= interleave <= block_size
  // and block_size % interleave == 0.
  DcpLayout(int dcp_size, int block_size, int interleave = 1);

  int dcp_size() const { return dcp_size_; }      // N
  int block_size() const { return block_size_; }  // B, tokens per block on one rank
  int interleave() const { return interleave_; }  // I

  // Positions one block id covers across the group: B·N.
  int64_t tokens_per_virtual_block() const { return tokens_per_vblock_; }

  // Virtual blocks a request of seq_len tokens needs: ceil(seq_len / (B·N)). seq_len >= 0.
  int64_t num_virtual_blocks(int64_t seq_len) const {
    check_length(seq_len);
    return (seq_len + tokens_per_vblock_ - 1) / tokens_per_vblock_;
  }

  // The DCP rank in [0, N) that stores position p (p >= 0).
  int owner(int64_t p) const {
    check_position(p);
    return static_cast<int>((p / interleave_) % dcp_size_);
  }

  // Index of p in its owner's local sequence.
  int64_t local_index(int64_t p) const {
    check_position(p);
    return (p / group_stride_) * interleave_ + p % interleave_;
  }

  // The virtual block holding p; equals local_index(p) / B.
  int64_t virtual_block(int64_t p) const {
    check_position(p);
    return p / tokens_per_vblock_;
  }

  // Cache row of p on `rank` for a request whose block table is `block_table` (one id per
  // virtual block, the same on every rank): block_table[vblock(p)]·B + local_index(p) % B
  // when rank owns p, else -1. The table must cover vblock(p) — checked on every rank, not
  // only the owner, so a bad batch fails on all ranks of the group alike.
  int64_t slot(int64_t p, int rank, std::span<const int32_t> block_table) const {
    check_rank(rank);
    const int64_t id = block_id(p, block_table);
    if (owner(p) != rank) return -1;
    return id * block_size_ + local_index(p) % block_size_;
  }

  // Cache row of p in a replicated per-token cache (every rank stores every token, e.g. the
  // sparse-attention indexer keys) addressed by the same block table: its blocks hold B·N
  // rows, so the row is block_table[p / (B·N)]·(B·N) + p % (B·N), identical on every rank.
  int64_t replicated_slot(int64_t p, std::span<const int32_t> block_table) const {
    check_position(p);
    return block_id(p, block_table) * tokens_per_vblock_ + p % tokens_per_vblock_;
  }

  // Inverse of local_index on `rank`: the global position of the rank's local_index-th token.
  int64_t global_position(int64_t local_index, int rank) const {
    check_rank(rank);
    CTXPAR_CHECK(local_index >= 0, "local index {} is negative; local indices are >= 0",
                 local_index);
    return (local_index / interleave_) * group_stride_ + int64_t{rank} * interleave_ +
           local_index % interleave_;
  }

  // Tokens of a seq_len-token request that `rank` stores; they are its local indices
  // [0, local_len). Sums to seq_len over the ranks.
  int64_t local_len(int64_t seq_len, int rank) const {
    check_length(seq_len);
    check_rank(rank);
    const int64_t base = (seq_len / group_stride_) * interleave_;
    const int64_t rem = seq_len - base * dcp_size_;
    const int64_t extra = rem - int64_t{rank} * interleave_;
    return base + (extra < 0 ? 0 : extra > interleave_ ? interleave_ : extra);
  }

  // local_len(seq_len, r) for r = 0..N-1.
  std::vector<int64_t> local_lens(int64_t seq_len) const;

  // The per-rank context-length matrix of a batch: int32 Tensor [num_reqs, N] with
  // [i, r] = local_len(seq_lens[i], r). num_reqs may be 0. Throws if a length is negative or
  // a local length does not fit int32.
  Tensor local_len_matrix(std::span<const int64_t> seq_lens) const;

 private:
  void check_position(int64_t p) const {
    CTXPAR_CHECK(p >= 0, "token position {} is negative; positions are >= 0", p);
  }
  void check_length(int64_t seq_len) const {
    CTXPAR_CHECK(seq_len >= 0, "sequence length {} is negative; lengths are >= 0", seq_len);
  }
  void check_rank(int rank) const {
    CTXPAR_CHECK(rank >= 0 && rank < dcp_size_, "DCP rank {} is outside [0, {}) for dcp_size {}",
                 rank, dcp_size_, dcp_size_);
  }
  // block_table[vblock(p)] as int64, checked to exist and to be a real (non-negative) id.
  int64_t block_id(int64_t p, std::span<const int32_t> block_table) const {
    const int64_t vb = p / tokens_per_vblock_;
    CTXPAR_CHECK(vb < static_cast<int64_t>(block_table.size()),
                 "position {} is in virtual block {} but the block table has only {} entries "
                 "(each covers {} positions)",
                 p, vb, block_table.size(), tokens_per_vblock_);
    const int32_t id = block_table[static_cast<size_t>(vb)];
    CTXPAR_CHECK(id >= 0, "block table entry {} (for position {}) is {}; block ids are >= 0", vb, p,
                 id);
    return id;
  }

  int dcp_size_;
  int block_size_;
  int interleave_;
  int64_t group_stride_;       // N·I: positions per full round over the group
  int64_t tokens_per_vblock_;  // B·N
};

}  // namespace ctxpar::kv
