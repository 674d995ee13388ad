#include <gtest/gtest.h>

#include <fmt/format.h>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_hash.h"
#include "support/seeded_rng.h"

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
  const uint32_t seed = test_support::test_seed();
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

std::string hex(const BlockHash& h) {
  std::string out;
  for (const uint8_t b : h.bytes) out += fmt::format("{:02x}", b);
  return out;
}

// A chain of blocks against Python's hashlib over the encoding block_hash.h documents
// (tools/block_hash_vectors.py): empty and one-token blocks, negative ids, UTF-8 keys.
TEST(BlockHash, Sha256MatchesHashlibOverTheDocumentedEncoding) {
  struct Case {
    int k;
    int n;
    std::vector<std::string> keys;
    std::string want;
  };
  const std::vector<Case> cases = {
      {0, 0, {}, "0a88111852095cae045340ea1f0b279944b2a756a213d9b50107d7489771e159"},
      {1, 1, {}, "f8dbda8628ebbda9b437855decdd126cc0327f4e9a0d47eda66c92954dff17a6"},
      {2, 16, {}, "72b25439896dfb5e72216bb15ac221e9d95cb4b0f41aa39ab45ac01a7103463e"},
      {3, 64, {"salt"}, "2dbc7f0577f71bd96db4ffcfce7de5899558e8ed1fa52a4e36936501aac4a165"},
      {4,
       5,
       {"", "lora:\xc3\xa9"},
       "cf7e257d8bd7a9258fb2ae7199d2d589dd2f98f9135f8a9f2a593f7c3b45f5bc"},
  };
  BlockHash parent;
  for (const Case& c : cases) {
    std::vector<int32_t> tokens(c.n);
    for (int i = 0; i < c.n; ++i) tokens[i] = (7919 * i + 13 * c.k) % 150000 - 1000;
    const BlockHash h = sha256_block_hash(c.k == 0 ? nullptr : &parent, tokens, c.keys);
    EXPECT_EQ(hex(h), c.want) << "block " << c.k;
    parent = h;
  }
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
