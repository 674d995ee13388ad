#include "ctxpar/kv/block_pool.h"

#include <algorithm>
#include <limits>

#include "ctxpar/core/error.h"

namespace ctxpar::kv {
namespace {

int32_t checked_pool_size(int32_t num_blocks) {
  CTXPAR_CHECK(num_blocks >= 0, "block pool size {} is negative; it must be >= 0", num_blocks);
  return num_blocks;
}

}  // namespace

BlockPool::BlockPool(int32_t num_blocks) : free_(checked_pool_size(num_blocks)) {
  ref_counts_.assign(static_cast<size_t>(num_blocks), 0);
  generation_.assign(static_cast<size_t>(num_blocks), 0);
  entries_.resize(static_cast<size_t>(num_blocks));
}

BlockPool BlockPool::from_memory_budget(int64_t memory_budget_bytes, int64_t bytes_per_block) {
  CTXPAR_CHECK(bytes_per_block >= 1, "bytes per KV block {} is invalid; it must be >= 1",
               bytes_per_block);
  CTXPAR_CHECK(memory_budget_bytes >= 0, "KV memory budget {} bytes is negative; it must be >= 0",
               memory_budget_bytes);
  const int64_t count = memory_budget_bytes / bytes_per_block;
  CTXPAR_CHECK(count <= std::numeric_limits<int32_t>::max(),
               "a KV budget of {} bytes holds {} blocks of {} bytes, more than the {} int32 block "
               "ids can name; use larger blocks",
               memory_budget_bytes, count, bytes_per_block, std::numeric_limits<int32_t>::max());
  return BlockPool(static_cast<int32_t>(count));
}

std::optional<std::vector<int32_t>> BlockPool::allocate(int32_t n) {
  std::vector<int32_t> ids;
  if (!allocate_into(n, ids)) return std::nullopt;
  return ids;
}

bool BlockPool::allocate_into(int32_t n, std::vector<int32_t>& out) {
  CTXPAR_CHECK(n >= 0, "cannot allocate {} blocks; the count must be >= 0", n);
  if (n > free_count()) return false;
  out.reserve(out.size() + static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = free_.pop_front();
    evict(id);
    ref_counts_[static_cast<size_t>(id)] = 1;
    ++generation_[static_cast<size_t>(id)];
    out.push_back(id);
  }
  return true;
}

void BlockPool::touch(int32_t id) {
  check_id(id);
  int32_t& count = ref_counts_[static_cast<size_t>(id)];
  if (count == 0) {
    CTXPAR_CHECK(is_cached(id),
                 "cannot touch block {}: it is free and holds no cached prefix; only held or "
                 "cached blocks can gain a holder",
                 id);
    free_.remove(id);
  }
  ++count;
}

void BlockPool::free(int32_t id) {
  free(std::span<const int32_t>(&id, 1));
}

void BlockPool::free(std::span<const int32_t> ids) {
  // Validate the whole span first so a bad id leaves the pool unchanged. Sorting a copy makes
  // repeated ids adjacent, so freeing one block more often than it is held is caught too.
  std::vector<int32_t> sorted(ids.begin(), ids.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size();) {
    const int32_t id = sorted[i];
    check_id(id);
    size_t j = i;
    while (j < sorted.size() && sorted[j] == id) ++j;
    const auto times = static_cast<int32_t>(j - i);
    const int32_t held = ref_counts_[static_cast<size_t>(id)];
    CTXPAR_CHECK(held > 0, "cannot free block {}: it is not allocated (double free?)", id);
    CTXPAR_CHECK(held >= times, "cannot free block {} {} times in one call: it is held {} times",
                 id, times, held);
    i = j;
  }
  for (int32_t id : ids) {
    if (--ref_counts_[static_cast<size_t>(id)] == 0) free_.push_back(id);
  }
}

int32_t BlockPool::ref_count(int32_t id) const {
  check_id(id);
  return ref_counts_[static_cast<size_t>(id)];
}

void BlockPool::cache(int32_t id, const BlockHash& hash, int32_t parent,
                      std::span<const int32_t> tokens) {
  check_id(id);
  CTXPAR_CHECK(ref_counts_[static_cast<size_t>(id)] > 0,
               "cannot cache block {}: it is free; only a block a request holds can be cached", id);
  CTXPAR_CHECK(!is_cached(id), "block {} is already cached", id);
  CTXPAR_CHECK(parent == -1 || (parent >= 0 && parent < num_blocks() && is_cached(parent)),
               "cannot cache block {} after block {}: a parent must be a cached block (or -1 for "
               "a request's first block)",
               id, parent);
  entries_[static_cast<size_t>(id)] = CacheEntry{
      .hash = hash,
      .parent = parent,
      .parent_generation = parent >= 0 ? generation_[static_cast<size_t>(parent)] : 0,
      .tokens = std::vector<int32_t>(tokens.begin(), tokens.end()),
  };
  by_hash_[hash].push_back(id);
  ++num_cached_;
}

std::optional<int32_t> BlockPool::find_cached(const BlockHash& hash, int32_t parent,
                                              std::span<const int32_t> tokens) const {
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  for (const int32_t id : it->second) {
    const CacheEntry& e = *entries_[static_cast<size_t>(id)];
    if (e.parent != parent) continue;
    if (parent >= 0 && e.parent_generation != generation_[static_cast<size_t>(parent)]) continue;
    if (std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end())) return id;
  }
  return std::nullopt;
}

bool BlockPool::is_cached(int32_t id) const {
  check_id(id);
  return entries_[static_cast<size_t>(id)].has_value();
}

void BlockPool::evict(int32_t id) {
  std::optional<CacheEntry>& entry = entries_[static_cast<size_t>(id)];
  if (!entry) return;
  const auto it = by_hash_.find(entry->hash);
  std::vector<int32_t>& ids = it->second;
  ids.erase(std::find(ids.begin(), ids.end(), id));
  if (ids.empty()) by_hash_.erase(it);
  entry.reset();
  --num_cached_;
}

void BlockPool::check_id(int32_t id) const {
  CTXPAR_CHECK(id >= 0 && id < num_blocks(), "block id {} is outside the pool [0, {})", id,
               num_blocks());
}

}  // namespace ctxpar::kv
