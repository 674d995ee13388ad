// Structured outputs in the engine: the per-request grammar state (rebuilt from output tokens)
// and the sampler's mask.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/tensor.h"
#include "ctxpar/engine/sampler.h"
#include "ctxpar/engine/structured/schema_compiler.h"
#include "ctxpar/engine/structured_output.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

constexpr int32_t kEos = 256;
constexpr int32_t kVocab = 260;  // bytes 0..255, then specials (EOS 256)

SamplingParams params_for(const char* schema) {
  SamplingParams p;
  p.structured_output =
      std::make_shared<structured::JsonAutomaton>(std::make_shared<structured::Grammar>(
          structured::compile_json_schema(nlohmann::ordered_json::parse(schema))));
  std::vector<std::optional<std::string>> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(std::string(1, static_cast<char>(b)));
  bytes.emplace_back(std::nullopt);
  p.token_vocabulary = std::make_shared<structured::TokenVocabulary>(std::move(bytes));
  p.eos_token_ids = {kEos};
  return p;
}

std::vector<int32_t> ids_of(const std::string& text) {
  std::vector<int32_t> ids;
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::vector<uint32_t> mask_of(StructuredOutputState& s) {
  std::vector<uint32_t> m(structured::mask_words(kVocab));
  s.fill_mask(m);
  return m;
}

TEST(StructuredOutput, StateIsRebuiltFromOutputs) {
  const SamplingParams p = params_for(R"({"type": "object", "properties": {"a": {"type":
      "array", "items": {"type": "integer"}}}, "required": ["a"]})");
  StructuredOutputState live(p);
  const std::vector<int32_t> out = ids_of(R"({"a": [12, 3)");
  for (size_t n = 0; n <= out.size(); ++n) live.sync(std::span(out).first(n));
  StructuredOutputState rebuilt(p);  // e.g. after a preemption dropped the state
  rebuilt.sync(out);
  EXPECT_EQ(mask_of(live), mask_of(rebuilt));
  EXPECT_FALSE(live.broken());
  // Outputs that do not extend what was seen: replayed from the start.
  const std::vector<int32_t> other = ids_of(R"({"a": [)");
  live.sync(other);
  StructuredOutputState fresh(p);
  fresh.sync(other);
  EXPECT_EQ(mask_of(live), mask_of(fresh));
  const auto m = mask_of(live);
  EXPECT_TRUE(structured::mask_allows(m, '7'));
  EXPECT_TRUE(structured::mask_allows(m, ']'));
  EXPECT_FALSE(structured::mask_allows(m, '}'));
  EXPECT_FALSE(structured::mask_allows(m, kEos));
}

TEST(StructuredOutput, StartsAfterTheReasoning) {
  SamplingParams p = params_for(R"({"type": "boolean"})");
  p.structured_output_after = ids_of("</think>");
  StructuredOutputState s(p);
  s.sync(ids_of("<think>x</thi"));
  EXPECT_FALSE(s.constrained());  // reasoning: anything goes
  s.sync(ids_of("<think>x</think>"));
  EXPECT_TRUE(s.constrained());
  auto m = mask_of(s);
  EXPECT_TRUE(structured::mask_allows(m, 't'));
  EXPECT_FALSE(structured::mask_allows(m, '{'));
  s.sync(ids_of("<think>x</think>tr"));
  m = mask_of(s);
  EXPECT_TRUE(structured::mask_allows(m, 'u'));
  EXPECT_FALSE(structured::mask_allows(m, 't'));
  StructuredOutputState rebuilt(p);  // from the outputs alone, marker included
  rebuilt.sync(ids_of("<think>x</think>tr"));
  EXPECT_EQ(mask_of(rebuilt), m);
  s.sync(ids_of("<think>y"));  // not a continuation: back to waiting
  EXPECT_FALSE(s.constrained());
}

TEST(StructuredOutput, WholeDocumentForcesEos) {
  const SamplingParams p = params_for(R"({"type": "boolean"})");
  StructuredOutputState s(p);
  s.sync(ids_of("true"));
  const auto m = mask_of(s);
  for (int32_t t = 0; t < kVocab; ++t) EXPECT_EQ(structured::mask_allows(m, t), t == kEos) << t;
  // A token the grammar refuses breaks the state: only stop tokens from then on.
  s.sync(ids_of("truex"));
  EXPECT_TRUE(s.broken());
  EXPECT_EQ(mask_of(s), m);
}

TEST(StructuredOutput, SamplerFollowsTheMask) {
  SEEDED_RNG(rng);
  SamplingParams p = params_for(R"({"type": "integer"})");
  StructuredOutputState s(p);
  const auto mask = mask_of(s);  // a digit or '-'
  std::uniform_real_distribution<float> logit(-5.0f, 5.0f);
  Tensor logits = Tensor::empty({2, kVocab}, DType::kF32);
  for (int64_t i = 0; i < 2 * kVocab; ++i) logits.data<float>()[i] = logit(rng);
  for (const int64_t r : {0, 1}) logits.data<float>()[r * kVocab + 'x'] = 100.0f;  // not allowed
  for (const float t : {0.0f, 1.0f}) {
    p.temperature = t;
    std::vector<SamplingRow> rows(2);
    rows[0] = {&p, nullptr, {}, {}, mask};
    rows[1] = {&p, nullptr, {}, {}, {}};
    Sampler sampler(rng());
    for (int k = 0; k < 20; ++k) {
      const auto tokens = sampler.sample(logits, rows);
      EXPECT_TRUE(structured::mask_allows(mask, tokens[0])) << tokens[0];
      if (t == 0.0f) {
        EXPECT_EQ(tokens[1], 'x');
      }
    }
  }
}

TEST(StructuredOutput, MaskFallbacks) {
  const std::vector<float> raw = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<float> processed = {1.0f, -std::numeric_limits<float>::infinity(), 3.0f, 4.0f};
  const std::vector<uint32_t> only_1 = {0b0010};
  apply_token_mask(raw, only_1, processed);  // min_tokens masked the only allowed token
  EXPECT_EQ(processed[1], 2.0f);
  EXPECT_TRUE(std::isinf(processed[0]) && std::isinf(processed[2]) && std::isinf(processed[3]));
  std::vector<float> none_allowed = raw;
  apply_token_mask(raw, std::vector<uint32_t>{0}, none_allowed);
  EXPECT_EQ(none_allowed, raw);
}

}  // namespace
}  // namespace ctxpar::engine
