#include "ctxpar/kv/block_hash.h"

#include "ctxpar/core/error.h"
#include "ctxpar/kv/sha256.h"

namespace ctxpar::kv {
namespace {

template <typename T>
void update_le(Sha256& h, T value) {
  std::array<uint8_t, sizeof(T)> bytes;
  const auto u = static_cast<std::make_unsigned_t<T>>(value);
  for (size_t k = 0; k < sizeof(T); ++k) bytes[k] = static_cast<uint8_t>(u >> (8 * k));
  h.update(bytes);
}

}  // namespace

BlockHash sha256_block_hash(const BlockHash* parent, std::span<const int32_t> tokens,
                            std::span<const std::string> extra_keys) {
  Sha256 h;
  update_le<uint8_t>(h, parent != nullptr ? 1 : 0);
  if (parent != nullptr) h.update(parent->bytes);
  update_le<uint64_t>(h, tokens.size());
  for (const int32_t t : tokens) update_le<int32_t>(h, t);
  update_le<uint64_t>(h, extra_keys.size());
  for (const std::string& key : extra_keys) {
    update_le<uint64_t>(h, key.size());
    h.update(std::span(reinterpret_cast<const uint8_t*>(key.data()), key.size()));
  }
  return BlockHash{h.finish()};
}

BlockHashFunction block_hash_function(std::string_view algo) {
  if (algo == "sha256") return &sha256_block_hash;
  CTXPAR_INPUT_FAIL("--prefix-caching-hash-algo '{}' is not supported; use sha256 (vLLM's default)",
                    algo);
}

}  // namespace ctxpar::kv
