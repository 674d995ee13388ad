// FreeBlockQueue: the blocks no request holds, in eviction order (vLLM v1's
// FreeKVCacheBlockQueue). A doubly-linked list threaded through two arrays indexed by block id,
// so taking a block out of the middle (a prefix-cache hit on a free cached block) is O(1), as
// are taking the front (allocation: the least recently freed block) and appending (free).
//
// Not thread-safe; BlockPool owns one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ctxpar::kv {

class FreeBlockQueue {
 public:
  // Ids 0..num_blocks-1, all queued in ascending order (a fresh pool hands out 0, 1, 2, ...).
  explicit FreeBlockQueue(int32_t num_blocks);

  int32_t size() const { return size_; }
  bool contains(int32_t id) const { return queued_[static_cast<size_t>(id)] != 0; }

  // Removes and returns the front block. The queue must not be empty.
  int32_t pop_front();
  // Appends a block that is not queued.
  void push_back(int32_t id);
  // Takes a queued block out wherever it is.
  void remove(int32_t id);

  // Queued ids front to back (tests, diagnostics): O(size).
  std::vector<int32_t> ids() const;

 private:
  static constexpr int32_t kNone = -1;
  std::vector<int32_t> prev_;    // [num_blocks] the block before id, or kNone
  std::vector<int32_t> next_;    // [num_blocks] the block after id, or kNone
  std::vector<uint8_t> queued_;  // [num_blocks] 1 while id is in the queue
  int32_t head_ = kNone;
  int32_t tail_ = kNone;
  int32_t size_ = 0;
};

}  // namespace ctxpar::kv
