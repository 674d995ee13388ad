// BlockPool: the KV blocks of one rank's cache, handed out by id with reference counts, and
// the prefix cache over them (vLLM v1's BlockPool; DESIGN.md §6).
//
// Every rank of a DCP group has a pool of the same size, and the scheduler draws one id per
// virtual block that is then valid on every rank (DESIGN.md §2), so one BlockPool object can
// stand for the whole group. Running out of blocks is a normal outcome the scheduler answers
// by preempting a request: allocate() reports it by returning nothing and never throws for
// it. Misuse (freeing a block that is not allocated, bad ids or counts) throws ctxpar::Error.
//
// Prefix cache: a full virtual block whose KV is (being) computed can be registered under its
// chained hash (cache()). It keeps that entry while requests hold it and after the last one
// frees it: an unreferenced cached block stays in the free queue, where find_cached() can
// still find it and touch() takes it back out. Blocks leave the free queue from the front, so
// the least recently freed block is reused (and its cache entry evicted) first; free() takes
// ids in the order they should be evicted. A hit is served only when the cached block's tokens
// and parent block equal the asker's, so a hash collision never serves another prompt's KV:
// by induction from a request's first block, a block found through a verified parent holds
// exactly the asker's prefix.
//
// Not thread-safe: one owner (the scheduler) calls it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "ctxpar/kv/block_hash.h"
#include "ctxpar/kv/free_block_queue.h"

namespace ctxpar::kv {

class BlockPool {
 public:
  // A pool of ids 0..num_blocks-1, all free. num_blocks may be 0 (nothing ever fits).
  explicit BlockPool(int32_t num_blocks);

  // As many blocks of bytes_per_block as fit in memory_budget_bytes (rounded down).
  // Throws if bytes_per_block < 1, the budget is negative, or the count exceeds int32.
  static BlockPool from_memory_budget(int64_t memory_budget_bytes, int64_t bytes_per_block);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  // Blocks no request holds, cached ones included (they are evicted when allocated): what
  // KV usage counts as free.
  int32_t free_count() const { return free_.size(); }
  int32_t used_count() const { return num_blocks() - free_count(); }
  // Blocks with a prefix-cache entry, held or free.
  int32_t cached_count() const { return num_cached_; }

  // n blocks from the front of the free queue (reference count 1 each; a cached one loses its
  // entry), or nullopt and no change when fewer than n are free. n == 0 gives an empty
  // vector. Throws only for n < 0.
  std::optional<std::vector<int32_t>> allocate(int32_t n);
  // Same, appending the ids to `out`; returns false (out untouched) when n do not fit.
  bool allocate_into(int32_t n, std::vector<int32_t>& out);

  // Adds a holder to a block: one already held, or a free cached block, which leaves the free
  // queue (a prefix-cache hit). Throws, naming the id, for a free block without a cache entry.
  void touch(int32_t id);

  // Drops one holder of each id; a block whose count reaches 0 joins the back of the free
  // queue in span order, so the first id is evicted first. Throws, naming the id, for an id
  // out of range or not allocated (double free) — before changing anything, counting
  // repeated ids.
  void free(int32_t id);
  void free(std::span<const int32_t> ids);

  // 0 for a free block.
  int32_t ref_count(int32_t id) const;

  // --- Prefix cache ---

  // Registers held block `id` as the virtual block whose content is `tokens` (B·N token ids)
  // after block `parent` (-1 for a request's first block) under `hash`. Throws if id is free
  // or already cached, or parent is neither -1 nor a cached block.
  void cache(int32_t id, const BlockHash& hash, int32_t parent, std::span<const int32_t> tokens);

  // A cached block (held or free) filed under `hash` whose tokens equal `tokens` and whose
  // parent is `parent` as it is now (-1: a first block), or nullopt.
  std::optional<int32_t> find_cached(const BlockHash& hash, int32_t parent,
                                     std::span<const int32_t> tokens) const;

  bool is_cached(int32_t id) const;

 private:
  struct CacheEntry {
    BlockHash hash;
    int32_t parent = -1;
    // The parent's allocation count when this entry was made: a parent that was evicted and
    // reallocated since holds other KV, and then this entry is not its child.
    uint64_t parent_generation = 0;
    std::vector<int32_t> tokens;  // [B·N]
  };

  void check_id(int32_t id) const;
  void evict(int32_t id);  // drops id's cache entry, if any

  std::vector<int32_t> ref_counts_;  // [num_blocks]
  FreeBlockQueue free_;
  // [num_blocks] times each block was handed out by allocate(): a block's KV changes only then.
  std::vector<uint64_t> generation_;
  std::vector<std::optional<CacheEntry>> entries_;  // [num_blocks]
  // Cached ids by hash; several when blocks are duplicates (requests that computed the same
  // prefix at once) or their hashes collide.
  std::unordered_map<BlockHash, std::vector<int32_t>, BlockHashHasher> by_hash_;
  int32_t num_cached_ = 0;
};

}  // namespace ctxpar::kv
