#include "ctxpar/kv/free_block_queue.h"

#include "ctxpar/core/error.h"

namespace ctxpar::kv {

FreeBlockQueue::FreeBlockQueue(int32_t num_blocks) {
  CTXPAR_CHECK(num_blocks >= 0, "free block queue size {} is negative; it must be >= 0",
               num_blocks);
  const auto n = static_cast<size_t>(num_blocks);
  prev_.assign(n, kNone);
  next_.assign(n, kNone);
  queued_.assign(n, 0);
  for (int32_t id = 0; id < num_blocks; ++id) push_back(id);
}

int32_t FreeBlockQueue::pop_front() {
  CTXPAR_CHECK(head_ != kNone, "cannot take a block from an empty free queue");
  const int32_t id = head_;
  remove(id);
  return id;
}

void FreeBlockQueue::push_back(int32_t id) {
  CTXPAR_CHECK(id >= 0 && id < static_cast<int32_t>(queued_.size()) && !contains(id),
               "cannot queue block {}: it is outside [0, {}) or already free", id, queued_.size());
  const auto i = static_cast<size_t>(id);
  prev_[i] = tail_;
  next_[i] = kNone;
  if (tail_ != kNone) {
    next_[static_cast<size_t>(tail_)] = id;
  } else {
    head_ = id;
  }
  tail_ = id;
  queued_[i] = 1;
  ++size_;
}

void FreeBlockQueue::remove(int32_t id) {
  CTXPAR_CHECK(id >= 0 && id < static_cast<int32_t>(queued_.size()) && contains(id),
               "cannot take block {} out of the free queue: it is outside [0, {}) or not free", id,
               queued_.size());
  const auto i = static_cast<size_t>(id);
  const int32_t before = prev_[i], after = next_[i];
  if (before != kNone) {
    next_[static_cast<size_t>(before)] = after;
  } else {
    head_ = after;
  }
  if (after != kNone) {
    prev_[static_cast<size_t>(after)] = before;
  } else {
    tail_ = before;
  }
  prev_[i] = next_[i] = kNone;
  queued_[i] = 0;
  --size_;
}

std::vector<int32_t> FreeBlockQueue::ids() const {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(size_));
  for (int32_t id = head_; id != kNone; id = next_[static_cast<size_t>(id)]) out.push_back(id);
  return out;
}

}  // namespace ctxpar::kv
