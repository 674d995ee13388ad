// Sha256: the SHA-256 message digest of FIPS 180-4, fed incrementally.
//
// The prefix cache names each virtual block by a chained SHA-256 (kv/block_hash.h), as vLLM's
// default `--prefix-caching-hash-algo sha256` does. None of the chosen libraries (DESIGN.md §8)
// offers SHA-256, and the algorithm is short and fixed, so it lives here. Checked against the
// standard's test vectors in tests/kv/sha256_test.cc.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace ctxpar::kv {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();

  // Appends bytes to the message. Any split of a message over calls gives the same digest.
  void update(std::span<const uint8_t> bytes);
  // The digest of everything appended; the object is then spent (construct a new one).
  Digest finish();

  // The digest of one whole message.
  static Digest of(std::span<const uint8_t> bytes);

 private:
  void compress(const uint8_t* block);  // one 64-byte block into state_

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};  // the message's tail that does not fill a block yet
  uint64_t length_ = 0;               // bytes appended so far
};

}  // namespace ctxpar::kv
