// SEEDED_RNG(rng): declares `std::mt19937_64 rng` seeded from std::random_device, and names the
// seed in every failure message of the enclosing scope, so a failing draw can be replayed.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#define SEEDED_RNG(rng)                                  \
  const uint32_t seed = std::random_device{}();          \
  SCOPED_TRACE(::testing::Message() << "seed " << seed); \
  std::mt19937_64 rng(seed)
