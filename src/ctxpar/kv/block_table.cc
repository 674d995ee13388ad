#include "ctxpar/kv/block_table.h"

#include <algorithm>
#include <utility>

#include "ctxpar/core/error.h"

namespace ctxpar::kv {

BlockTable::BlockTable(BlockPool& pool, const DcpLayout& layout)
    : pool_(&pool), tokens_per_vblock_(layout.tokens_per_virtual_block()) {}

BlockTable::~BlockTable() {
  release();
}

BlockTable::BlockTable(BlockTable&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      tokens_per_vblock_(other.tokens_per_vblock_),
      ids_(std::move(other.ids_)),
      num_cached_(std::exchange(other.num_cached_, 0)) {
  other.ids_.clear();
}

BlockTable& BlockTable::operator=(BlockTable&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::exchange(other.pool_, nullptr);
    tokens_per_vblock_ = other.tokens_per_vblock_;
    ids_ = std::move(other.ids_);
    num_cached_ = std::exchange(other.num_cached_, 0);
    other.ids_.clear();
  }
  return *this;
}

int64_t BlockTable::blocks_needed(int64_t num_tokens) const {
  CTXPAR_CHECK(num_tokens >= 0, "cannot size a block table for {} tokens; the count must be >= 0",
               num_tokens);
  const int64_t total = (num_tokens + tokens_per_vblock_ - 1) / tokens_per_vblock_;
  return total > num_blocks() ? total - num_blocks() : 0;
}

bool BlockTable::grow(int64_t num_tokens) {
  const int64_t missing = blocks_needed(num_tokens);
  if (missing == 0) return true;
  CTXPAR_CHECK(pool_ != nullptr, "cannot grow a block table that was moved from");
  // More than the pool could ever hold is just "does not fit", not an error.
  if (missing > pool_->free_count()) return false;
  return pool_->allocate_into(static_cast<int32_t>(missing), ids_);
}

void BlockTable::append_cached(std::span<const int32_t> ids) {
  CTXPAR_CHECK(pool_ != nullptr, "cannot add blocks to a block table that was moved from");
  CTXPAR_CHECK(ids_.empty(),
               "cached blocks start a block table, but this one already holds {} blocks",
               ids_.size());
  for (const int32_t id : ids) {
    pool_->touch(id);
    ids_.push_back(id);
  }
  num_cached_ = num_blocks();
}

void BlockTable::cache_full_blocks(int64_t num_tokens, std::span<const BlockHash> hashes,
                                   std::span<const int32_t> tokens) {
  CTXPAR_CHECK(num_tokens >= 0 && num_tokens <= capacity_tokens(),
               "cannot cache {} positions of a block table that covers {}", num_tokens,
               capacity_tokens());
  const int64_t full = num_tokens / tokens_per_vblock_;
  CTXPAR_CHECK(static_cast<int64_t>(hashes.size()) >= full &&
                   static_cast<int64_t>(tokens.size()) >= full * tokens_per_vblock_,
               "caching {} full blocks needs {} hashes and {} tokens, got {} and {}", full, full,
               full * tokens_per_vblock_, hashes.size(), tokens.size());
  for (int64_t j = num_cached_; j < full; ++j) {
    const auto at = static_cast<size_t>(j);
    pool_->cache(ids_[at], hashes[at], j == 0 ? -1 : ids_[at - 1],
                 tokens.subspan(at * static_cast<size_t>(tokens_per_vblock_),
                                static_cast<size_t>(tokens_per_vblock_)));
  }
  num_cached_ = std::max(num_cached_, full);
}

void BlockTable::release() {
  if (pool_ != nullptr && !ids_.empty()) {
    std::vector<int32_t> tail_first(ids_.rbegin(), ids_.rend());
    pool_->free(tail_first);
  }
  ids_.clear();
  num_cached_ = 0;
}

}  // namespace ctxpar::kv
