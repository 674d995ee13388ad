#include "ctxpar/core/huge_block_cache.h"

#include <sys/mman.h>

#include <cstdlib>
#include <deque>
#include <mutex>
#include <utility>

namespace ctxpar {
namespace {

struct FreedBlocks {
  std::mutex mu;
  std::deque<std::pair<size_t, void*>> blocks;  // (bytes, block), least recently freed first
  size_t bytes = 0;

  void free_front() {
    bytes -= blocks.front().first;
    std::free(blocks.front().second);
    blocks.pop_front();
  }
};

// Never destroyed: tensors with static storage may be freed after other statics are gone.
FreedBlocks& freed() {
  static auto* f = new FreedBlocks;
  return *f;
}

}  // namespace

void* allocate_huge_block(size_t bytes) {
  FreedBlocks& f = freed();
  {
    std::lock_guard lock(f.mu);
    for (auto it = f.blocks.rbegin(); it != f.blocks.rend(); ++it) {
      if (it->first == bytes) {
        void* p = it->second;
        f.bytes -= bytes;
        f.blocks.erase(std::next(it).base());
        return p;
      }
    }
  }
  void* p = std::aligned_alloc(kHugePageBytes, bytes);
  if (p == nullptr) {
    empty_huge_block_cache();
    p = std::aligned_alloc(kHugePageBytes, bytes);
  }
  if (p != nullptr) madvise(p, bytes, MADV_HUGEPAGE);  // advisory: refused is fine
  return p;
}

void release_huge_block(void* block, size_t bytes) {
  if (bytes > kHugeBlockCacheBytes) {
    std::free(block);
    return;
  }
  FreedBlocks& f = freed();
  std::lock_guard lock(f.mu);
  f.blocks.emplace_back(bytes, block);
  f.bytes += bytes;
  while (f.bytes > kHugeBlockCacheBytes) f.free_front();
}

size_t huge_block_cache_bytes() {
  FreedBlocks& f = freed();
  std::lock_guard lock(f.mu);
  return f.bytes;
}

void empty_huge_block_cache() {
  FreedBlocks& f = freed();
  std::lock_guard lock(f.mu);
  while (!f.blocks.empty()) f.free_front();
}

}  // namespace ctxpar
