// BlockPool: the KV blocks of one rank's cache, handed out by id with reference counts.
//
// Every rank of a DCP group has a pool of the same size, and the scheduler draws one id per
// virtual block that is then valid on every rank (DESIGN.md §2), so one BlockPool object can
// stand for the whole group. Running out of blocks is a normal outcome the scheduler answers
// by preempting a request: allocate() reports it by returning nothing and never throws for
// it. Misuse (freeing a block that is not allocated, bad ids or counts) throws ctxpar::Error.
//
// Not thread-safe: one owner (the scheduler) calls it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ctxpar::kv {

class BlockPool {
 public:
  // A pool of ids 0..num_blocks-1, all free. num_blocks may be 0 (nothing ever fits).
  explicit BlockPool(int32_t num_blocks);

  // As many blocks of bytes_per_block as fit in memory_budget_bytes (rounded down).
  // Throws if bytes_per_block < 1, the budget is negative, or the count exceeds int32.
  static BlockPool from_memory_budget(int64_t memory_budget_bytes, int64_t bytes_per_block);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t free_count() const { return static_cast<int32_t>(free_ids_.size()); }
  int32_t used_count() const { return num_blocks() - free_count(); }

  // n free blocks (reference count 1 each), or nullopt and no change when fewer than n are
  // free. n == 0 gives an empty vector. Throws only for n < 0.
  std::optional<std::vector<int32_t>> allocate(int32_t n);
  // Same, appending the ids to `out`; returns false (out untouched) when n do not fit.
  bool allocate_into(int32_t n, std::vector<int32_t>& out);

  // Adds a holder to an allocated block (prefix sharing): it stays allocated until every
  // holder has freed it.
  void inc_ref(int32_t id);

  // Drops one holder of each id; a block whose count reaches 0 returns to the free list.
  // Throws, naming the id, for an id out of range or not allocated (double free) — in the
  // span form before changing anything, counting repeated ids.
  void free(int32_t id);
  void free(std::span<const int32_t> ids);

  // 0 for a free block.
  int32_t ref_count(int32_t id) const;

 private:
  void check_id(int32_t id) const;

  std::vector<int32_t> ref_counts_;  // [num_blocks]
  // Free ids; allocation pops from the back. Initially descending, so a fresh pool hands out
  // 0, 1, 2, ... (readable logs and tests), and a just-freed block is reused first (warm).
  std::vector<int32_t> free_ids_;
};

}  // namespace ctxpar::kv
