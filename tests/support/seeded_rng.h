// Random seeds for tests. Each test draws a fresh seed and names it in its failure messages;
// CTXPAR_TEST_SEED=N in the environment replays a failing draw instead.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

namespace ctxpar::test_support {

// CTXPAR_TEST_SEED when set (a decimal uint32; anything else throws naming the value), else a
// fresh draw from std::random_device.
inline uint32_t test_seed() {
  const char* fixed = std::getenv("CTXPAR_TEST_SEED");
  if (fixed == nullptr || *fixed == '\0') return std::random_device{}();
  const std::string text = fixed;
  size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value > UINT32_MAX || text[0] == '-') {
    throw std::invalid_argument("CTXPAR_TEST_SEED='" + text +
                                "' is not a seed: use a decimal number from 0 to 4294967295");
  }
  return static_cast<uint32_t>(value);
}

}  // namespace ctxpar::test_support

// SEEDED_RNG(rng): declares `std::mt19937_64 rng` seeded from test_seed(), and names the seed
// in every failure message of the enclosing scope, so a failing draw can be replayed.
#define SEEDED_RNG(rng)                                      \
  const uint32_t seed = ::ctxpar::test_support::test_seed(); \
  SCOPED_TRACE(::testing::Message() << "seed " << seed);     \
  std::mt19937_64 rng(seed)
