#include "ctxpar/kv/block_pool.h"

#include <algorithm>
#include <limits>

#include "ctxpar/core/error.h"

namespace ctxpar::kv {

BlockPool::BlockPool(int32_t num_blocks) {
  CTXPAR_CHECK(num_blocks >= 0, "block pool size {} is negative; it must be >= 0", num_blocks);
  ref_counts_.assign(static_cast<size_t>(num_blocks), 0);
  free_ids_.reserve(static_cast<size_t>(num_blocks));
  for (int32_t id = num_blocks - 1; id >= 0; --id) free_ids_.push_back(id);
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
    const int32_t id = free_ids_.back();
    free_ids_.pop_back();
    ref_counts_[static_cast<size_t>(id)] = 1;
    out.push_back(id);
  }
  return true;
}

void BlockPool::inc_ref(int32_t id) {
  check_id(id);
  int32_t& count = ref_counts_[static_cast<size_t>(id)];
  CTXPAR_CHECK(count > 0, "cannot share block {}: it is free; only allocated blocks can be shared",
               id);
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
    if (--ref_counts_[static_cast<size_t>(id)] == 0) free_ids_.push_back(id);
  }
}

int32_t BlockPool::ref_count(int32_t id) const {
  check_id(id);
  return ref_counts_[static_cast<size_t>(id)];
}

void BlockPool::check_id(int32_t id) const {
  CTXPAR_CHECK(id >= 0 && id < num_blocks(), "block id {} is outside the pool [0, {})", id,
               num_blocks());
}

}  // namespace ctxpar::kv
