#include "ctxpar/kv/block_hash.h"

#include <openssl/evp.h>

#include <vector>

#include "ctxpar/core/error.h"

namespace ctxpar::kv {
namespace {

template <typename T>
void append_le(std::vector<uint8_t>& msg, T value) {
  const auto u = static_cast<std::make_unsigned_t<T>>(value);
  for (size_t k = 0; k < sizeof(T); ++k) msg.push_back(static_cast<uint8_t>(u >> (8 * k)));
}

}  // namespace

BlockHash sha256_block_hash(const BlockHash* parent, std::span<const int32_t> tokens,
                            std::span<const std::string> extra_keys) {
  // The whole message is built first: one digest call costs less than one update per token.
  std::vector<uint8_t> msg;
  msg.reserve(1 + 32 + 8 + 4 * tokens.size() + 8);
  append_le<uint8_t>(msg, parent != nullptr ? 1 : 0);
  if (parent != nullptr) msg.insert(msg.end(), parent->bytes.begin(), parent->bytes.end());
  append_le<uint64_t>(msg, tokens.size());
  for (const int32_t t : tokens) append_le<int32_t>(msg, t);
  append_le<uint64_t>(msg, extra_keys.size());
  for (const std::string& key : extra_keys) {
    append_le<uint64_t>(msg, key.size());
    msg.insert(msg.end(), key.begin(), key.end());
  }
  BlockHash h;
  unsigned int size = 0;
  CTXPAR_CHECK(
      EVP_Digest(msg.data(), msg.size(), h.bytes.data(), &size, EVP_sha256(), nullptr) == 1 &&
          size == h.bytes.size(),
      "OpenSSL's SHA-256 failed");
  return h;
}

BlockHashFunction block_hash_function(std::string_view algo) {
  if (algo == "sha256") return &sha256_block_hash;
  CTXPAR_INPUT_FAIL("--prefix-caching-hash-algo '{}' is not supported; use sha256 (vLLM's default)",
                    algo);
}

}  // namespace ctxpar::kv
