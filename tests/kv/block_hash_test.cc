#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_hash.h"

namespace ctxpar::kv {
namespace {

std::vector<int32_t> random_tokens(std::mt19937& rng, size_t n) {
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % 50000);
  return t;
}

std::string key_of(const BlockHash& h) {
  return std::string(h.bytes.begin(), h.bytes.end());
}

TEST(BlockHash, ChainedOverParentTokensAndExtraKeys) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const BlockHashFunction h = block_hash_function("sha256");
  const std::vector<int32_t> a = random_tokens(rng, 1 + rng() % 64);
  const BlockHash root = h(nullptr, a, {});
  EXPECT_EQ(h(nullptr, a, {}), root) << "a pure function";

  // Every input matters: the parent (none vs some, and which), each token, the extra keys.
  std::set<std::string> seen{key_of(root)};
  EXPECT_TRUE(seen.insert(key_of(h(&root, a, {}))).second);
  const BlockHash other = h(nullptr, random_tokens(rng, a.size()), {});
  EXPECT_TRUE(seen.insert(key_of(h(&other, a, {}))).second);
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<int32_t> b = a;
    b[i] ^= 1;
    EXPECT_TRUE(seen.insert(key_of(h(nullptr, b, {}))).second) << "token " << i;
  }
  const std::vector<std::string> salt = {"salt"};
  EXPECT_TRUE(seen.insert(key_of(h(nullptr, a, salt))).second);
  // The encoding is unambiguous: moving bytes between keys, or a token into a key, changes it.
  const std::vector<std::string> ab = {"ab", "c"}, a_bc = {"a", "bc"};
  EXPECT_NE(h(nullptr, a, ab), h(nullptr, a, a_bc));
  const std::vector<int32_t> shorter(a.begin(), a.end() - 1);
  EXPECT_NE(h(nullptr, a, {}), h(nullptr, shorter, {}));
  EXPECT_EQ(BlockHashHasher{}(root), BlockHashHasher{}(h(nullptr, a, {})));
}

TEST(BlockHash, UnknownAlgorithmIsAnInputErrorNamingTheChoices) {
  try {
    block_hash_function("xxhash");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("xxhash"), std::string::npos) << what;
    EXPECT_NE(what.find("sha256"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ctxpar::kv
