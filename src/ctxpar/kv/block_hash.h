// BlockHash: the name of one virtual block's content in the prefix cache (DESIGN.md §6).
//
// A virtual block holds B·N consecutive positions, and one block id names them on every DCP
// rank, so one hash per virtual block is valid on all ranks. Hashes are chained as in vLLM v1:
// block j's hash covers the hash of block j-1 (none for j = 0), its own B·N token ids and the
// request's extra keys for it (none yet; the parameter is there for multimodal inputs, LoRA
// or a cache salt). Equal hashes are only a candidate match: BlockPool compares the block's
// tokens and its parent block before it serves a hit, so a collision never serves another
// prompt's KV.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace ctxpar::kv {

struct BlockHash {
  std::array<uint8_t, 32> bytes{};

  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

// For unordered containers: the digest is uniform, so its first 8 bytes are a good hash.
struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const {
    uint64_t v = 0;
    std::memcpy(&v, h.bytes.data(), sizeof(v));
    return static_cast<size_t>(v);
  }
};

// hash(parent, tokens, extra_keys). parent is null for a request's first block. Must be a pure
// function of its arguments (the same on every call and process).
using BlockHashFunction = BlockHash (*)(const BlockHash* parent, std::span<const int32_t> tokens,
                                        std::span<const std::string> extra_keys);

// SHA-256 (OpenSSL's libcrypto, as Python's hashlib under vLLM's sha256) over a fixed
// little-endian encoding: a parent flag byte and the parent's 32 bytes,
// the token count (u64) and each token (i32), the extra-key count (u64) and each key as its
// length (u64) and bytes. Unambiguous, so distinct inputs are distinct messages.
BlockHash sha256_block_hash(const BlockHash* parent, std::span<const int32_t> tokens,
                            std::span<const std::string> extra_keys);

// The function of a --prefix-caching-hash-algo value: "sha256" (vLLM's default). Throws
// ctxpar::InputError naming the value and the valid ones otherwise.
BlockHashFunction block_hash_function(std::string_view algo);

}  // namespace ctxpar::kv
