// vLLM's human-readable integers (--max-model-len 128k, --max-num-batched-tokens 16K): every
// digit string with every suffix against the value computed here, and the refused forms name
// the flag and the value. --quantization fp8 on a model that is not FP8 picks power-of-two
// block scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/engine_config.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_human_readable_int(text, "--max-model-len");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HumanReadableInt, SuffixesScaleByThousandsOrByPowersOfTwo) {
  SEEDED_RNG(rng);
  std::uniform_int_distribution<int64_t> whole(0, 99999);
  const std::string lower = "kmgt", upper = "KMGT";
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = whole(rng);
    EXPECT_EQ(parse_human_readable_int(std::to_string(n), "f"), n);
    const int p = static_cast<int>(rng() % 3);  // k, m, g stay far below int64's range
    EXPECT_EQ(parse_human_readable_int(std::to_string(n) + upper[p], "f"), n << (10 * (p + 1)));
    // A decimal fraction with a decimal suffix: truncated after scaling, as Python's int().
    const int64_t tenths = whole(rng) % 1000;
    const std::string text =
        std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + lower[p];
    const double want = std::stod(text.substr(0, text.size() - 1)) * std::pow(1000.0, p + 1);
    EXPECT_EQ(parse_human_readable_int(text, "f"), static_cast<int64_t>(want)) << text;
  }
  EXPECT_EQ(parse_human_readable_int("25.6k", "f"), 25600);
  EXPECT_EQ(parse_human_readable_int("128K", "f"), 131072);
  EXPECT_EQ(parse_human_readable_int("1t", "f"), 1000000000000);
  EXPECT_EQ(parse_human_readable_int("1T", "f"), int64_t{1} << 40);
}

TEST(HumanReadableInt, OtherFormsAreErrorsNamingTheFlagAndValue) {
  for (const std::string bad :
       {"", "x", "12x", "1.", ".5k", "1.5", "-3", "1kk", "1 k", "1KiB", "0x10", "1e5"}) {
    const std::string msg = error_of(bad);
    EXPECT_NE(msg.find("--max-model-len '" + bad + "' is not an integer"), std::string::npos)
        << bad << ": " << msg;
  }
  const std::string msg = error_of("1.5K");
  EXPECT_NE(msg.find("decimals are not allowed with binary suffixes like K; did you mean 1.5k?"),
            std::string::npos)
      << msg;
}

// Quantizing at load, ctxpar picks the scales: powers of two (ue8m0), so that a bf16 prefill
// runs one matmul over the whole of K. An FP8 config's own scale format is kept (its dummy
// weights run as its checkpoint would).
TEST(EngineConfigFp8, QuantizingAtLoadPicksPowerOfTwoScales) {
  EngineConfig c;
  c.model = "builtin:tiny-llama";
  c.quantization = "fp8";
  const ResolvedEngineConfig r = resolve_engine_config(c);
  EXPECT_EQ(r.model.quantization.method, "fp8");
  EXPECT_TRUE(r.model.quantization.ue8m0_scales);
  EXPECT_TRUE(r.options.quantize_fp8);
  c.quantization.clear();
  const ResolvedEngineConfig plain = resolve_engine_config(c);
  EXPECT_FALSE(plain.options.quantize_fp8);
  EXPECT_FALSE(plain.model.quantization.ue8m0_scales);
}

}  // namespace
}  // namespace ctxpar::engine
