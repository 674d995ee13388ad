#include <gtest/gtest.h>

#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/kv/sha256.h"

namespace ctxpar::kv {
namespace {

std::string hex(const Sha256::Digest& d) {
  std::string out;
  for (const uint8_t b : d) out += fmt::format("{:02x}", b);
  return out;
}

std::string digest_of(const std::string& text) {
  return hex(Sha256::of(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> msg(n);
  for (size_t i = 0; i < n; ++i) msg[i] = static_cast<uint8_t>((31 * i + 7) % 256);
  return msg;
}

// FIPS 180-4's examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf").
TEST(Sha256, StandardTestVectors) {
  EXPECT_EQ(digest_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(digest_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklm"
                      "nopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(digest_of(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths on the padding boundaries (55/56 bytes left in a block, whole blocks), against
// Python's hashlib (tools/sha256_vectors.py).
TEST(Sha256, PaddingBoundariesMatchHashlib) {
  const std::vector<std::pair<size_t, std::string>> vectors = {
      {1, "ca358758f6d27e6cf45272937977a748fd88391db679ceda7dc7bf1f005ee879"},
      {55, "8aa994584139d128848eeebc4e815639ba5ab6e6e39574195a63ac4f14f7c43b"},
      {56, "ad574708f75c044c9b85de64cb568ee7711ff4f36448c6242f053ba8f6cc2b63"},
      {57, "5b46e502092be01b1100193e089fdda95638c12e19a1d24f308eb2c3d3ae849d"},
      {63, "280ed3e8ff1df845b2e7dfe6ac6cee817bef20e783cc65abc41b818b4d2fe076"},
      {64, "c6ab9724ade5b6a7a1edfffb12f3aa9181351355af8fd08c919952ad211339dd"},
      {65, "788367c73c7ddf4c53f65e68cc0d943e6227ab55b0e78ba63ace822b1c6301c0"},
      {111, "dd1413178fb627f9abbc041ffe39c44aa7aaa0e2e6d2ca5c4528ac7073a2da45"},
      {119, "3d610547d68216dedf7435a4fb6260353911f6b3fd3f18805ddb8be285d726fe"},
      {120, "1f80156a804cb7862ad113e8200e9d74499723e7c7854d5f48776d3148e09656"},
      {127, "192409cd280e14b743642ad1343fbd3e82d9305de72c078117745a679210cc3d"},
      {128, "cc548ca2dec1f6fe4f58b2e27aa9c7521607df1130d140b55a4dad0665302356"},
      {129, "81e89a7b2911aaa7795f9e3d4910cb47d6cd2b00d83b8399481527261a1a7519"},
      {1000, "5097e7d587352f5097062ae679f37bda5802d9f875aba14c8cb4d1a188ada179"},
  };
  for (const auto& [n, want] : vectors) {
    EXPECT_EQ(hex(Sha256::of(pattern(n))), want) << n << " bytes";
  }
}

TEST(Sha256, AnySplitOfTheMessageGivesTheSameDigest) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<uint8_t> msg = pattern(rng() % 300);
    Sha256 h;
    for (size_t at = 0; at < msg.size();) {
      const size_t take = std::min<size_t>(msg.size() - at, rng() % 80);
      h.update(std::span(msg).subspan(at, take));
      at += take;
    }
    ASSERT_EQ(hex(h.finish()), hex(Sha256::of(msg))) << msg.size() << " bytes";
  }
}

}  // namespace
}  // namespace ctxpar::kv
