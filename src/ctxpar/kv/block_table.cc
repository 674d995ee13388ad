#include "ctxpar/kv/block_table.h"

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
      ids_(std::move(other.ids_)) {
  other.ids_.clear();
}

BlockTable& BlockTable::operator=(BlockTable&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::exchange(other.pool_, nullptr);
    tokens_per_vblock_ = other.tokens_per_vblock_;
    ids_ = std::move(other.ids_);
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

void BlockTable::release() {
  if (pool_ != nullptr && !ids_.empty()) pool_->free(ids_);
  ids_.clear();
}

}  // namespace ctxpar::kv
