// BlockTable: the virtual blocks of one request, in order. Entry j holds positions
// [j·B·N, (j+1)·B·N) of the request, and its id is valid on every rank of the DCP group
// (DESIGN.md §2), so the same table addresses every rank's cache.
//
// The table owns its holds on its blocks: grow() draws new blocks from a pool, append_cached()
// takes blocks found in the pool's prefix cache, release() (or destruction) gives them all
// back. The pool must outlive the table. Move-only, so a block is never freed twice.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::kv {

class BlockTable {
 public:
  // An empty table drawing from `pool` (kept by reference) in virtual blocks of `layout`.
  BlockTable(BlockPool& pool, const DcpLayout& layout);
  ~BlockTable();

  BlockTable(BlockTable&& other) noexcept;
  BlockTable& operator=(BlockTable&& other) noexcept;
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;

  // Starts an empty table with blocks found in the prefix cache (a request's cached prefix, in
  // order), adding this table as a holder of each (BlockPool::touch). They count as cached.
  // Throws if the table is not empty or a block is neither held nor cached.
  void append_cached(std::span<const int32_t> ids);

  // Makes the table hold at least num_tokens positions, allocating the missing virtual blocks
  // all-or-nothing. Returns false, changing nothing, when the pool has too few free blocks
  // (the scheduler then preempts). Never shrinks. Throws only for num_tokens < 0.
  bool grow(int64_t num_tokens);

  // Virtual blocks still missing to hold num_tokens positions (0 if it already does).
  int64_t blocks_needed(int64_t num_tokens) const;

  // Registers in the pool's prefix cache each full virtual block among the first num_tokens
  // positions that is not registered yet: block j under hashes[j], as the block after block
  // j-1, holding tokens [j·B·N, (j+1)·B·N). The caller promises the KV of those positions is
  // in the cache or written by the step being scheduled. Throws if hashes or tokens are too
  // short for those blocks or num_tokens exceeds the table.
  void cache_full_blocks(int64_t num_tokens, std::span<const BlockHash> hashes,
                         std::span<const int32_t> tokens);
  // Leading blocks of the table that are registered in the prefix cache.
  int64_t num_cached_blocks() const { return num_cached_; }

  // Returns every block to the pool (request finished, aborted or preempted), last block
  // first, so the pool evicts a sequence's tail before its prefix, which other requests are
  // more likely to share. The table is then empty and can grow again.
  void release();

  // Block ids, one per virtual block; valid until the next grow() or release().
  std::span<const int32_t> ids() const { return ids_; }
  int64_t num_blocks() const { return static_cast<int64_t>(ids_.size()); }
  // Positions the allocated blocks cover: num_blocks·B·N.
  int64_t capacity_tokens() const { return num_blocks() * tokens_per_vblock_; }

 private:
  BlockPool* pool_;  // null after being moved from
  int64_t tokens_per_vblock_;
  std::vector<int32_t> ids_;
  int64_t num_cached_ = 0;
};

}  // namespace ctxpar::kv
