// Large tensor storage: blocks of whole 2 MiB huge pages, kept after they are freed for the next
// allocation of the same size. A prefill allocates and frees the same activation shapes in
// every layer ([tokens, 16384] f32 is 32 MiB at 512 tokens); from the C allocator each would be
// a fresh mapping whose huge pages the kernel zeroes on first touch (2-4% of a 512-token
// prefill on 2 threads, measured with perf).
#pragma once

#include <cstddef>

namespace ctxpar {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Freed blocks kept at most, in bytes; past it the least recently freed go back to the system.
inline constexpr size_t kHugeBlockCacheBytes = size_t{1} << 30;

// A block of `bytes` (a positive multiple of kHugePageBytes), 2 MiB-aligned, transparent huge
// pages requested, contents undefined: a cached block of that size if there is one, else a new
// one (after emptying the cache if the system refuses). nullptr when out of memory. Thread-safe.
void* allocate_huge_block(size_t bytes);

// Returns a block from allocate_huge_block with the same `bytes`; it may be reused by any
// thread. Thread-safe.
void release_huge_block(void* block, size_t bytes);

// Bytes held in freed blocks now.
size_t huge_block_cache_bytes();

// Gives every freed block back to the system. Thread-safe.
void empty_huge_block_cache();

}  // namespace ctxpar
