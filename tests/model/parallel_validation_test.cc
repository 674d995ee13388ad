#include "ctxpar/model/parallel_validation.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using testing::uniform_int;

struct Case {
  int64_t T, N;
  bool ok;
  std::vector<std::string> message_parts;  // for rejections: what the message must name
};

void check_table(const ModelConfig& c, const std::vector<Case>& cases) {
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message() << c.source << " T=" << k.T << " N=" << k.N);
    if (k.ok) {
      EXPECT_NO_THROW(validate_for_parallel(c, k.T, k.N));
      continue;
    }
    try {
      validate_for_parallel(c, k.T, k.N);
      ADD_FAILURE() << "accepted, expected a rejection";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const std::string& part : k.message_parts) {
        EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
      }
    }
  }
}

ModelConfig gqa(int64_t heads, int64_t kv_heads, int64_t intermediate) {
  ModelConfig c = resolve_model_config("builtin:tiny-llama");
  c.source = "gqa-test";
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.intermediate_size = intermediate;
  return c;
}

TEST(ParallelValidation, TinyLlamaReplicatesOrShardsKvHeads) {
  // 8 heads, 2 KV heads, intermediate 384.
  const ModelConfig c = resolve_model_config("builtin:tiny-llama");
  check_table(c,
              {
                  {1, 1, true, {}},
                  {2, 1, true, {}},  // each rank: its own KV head
                  {4, 2, true, {}},  // KV head replicated on 2 ranks = one DCP group
                  {8, 4, true, {}},  // replicated on 4 ranks
                  {8, 2, true, {}},
                  {8, 1, true, {}},
                  {2, 2, false, {"N=2", "T=2", "num_key_value_heads=2", "T/num_key_value_heads=1"}},
                  {8, 8, false, {"N=8", "T=8", "num_key_value_heads=2", "divisors of 4"}},
                  {4, 4, false, {"N=4", "T=4"}},
                  {3, 1, false, {"T=3", "num_attention_heads=8"}},
                  {8, 3, false, {"N=3", "T=8"}},
                  {0, 1, false, {"0"}},
                  {4, 0, false, {"0"}},
                  {16, 1, false, {"T=16", "num_attention_heads=8"}},
              });
}

TEST(ParallelValidation, GqaRulesOnOddHeadCounts) {
  // 12 heads over 3 KV heads: T=6 replicates each KV head on 2 ranks.
  check_table(gqa(12, 3, 360), {
                                   {3, 1, true, {}},
                                   {6, 2, true, {}},
                                   {6, 1, true, {}},
                                   {12, 4, true, {}},
                                   {12, 2, true, {}},
                                   {12, 3, false, {"N=3", "T=12", "num_key_value_heads=3"}},
                                   {4, 1, false, {"num_key_value_heads=3", "T=4"}},
                                   {6, 3, false, {"N=3"}},
                               });
  // 16 heads over 8 KV heads.
  check_table(gqa(16, 8, 480), {
                                   {8, 1, true, {}},
                                   {4, 1, true, {}},
                                   {16, 2, true, {}},
                                   {8, 2, false, {"N=2", "num_key_value_heads=8"}},
                                   {4, 2, false, {"N=2"}},
                                   {16, 4, false, {"N=4"}},
                               });
  // 10 KV heads, T = 4 does not divide them.
  check_table(
      gqa(20, 10, 400),
      {{4, 1, false, {"num_key_value_heads=10", "T=4"}}, {5, 1, true, {}}, {10, 1, true, {}}});
}

TEST(ParallelValidation, MlpAndExpertsMustSplitEvenly) {
  check_table(gqa(8, 8, 300), {{8, 1, false, {"intermediate_size=300", "T=8"}}, {4, 1, true, {}}});
  ModelConfig v3 = resolve_model_config("builtin:tiny-deepseek-v3");  // moe_intermediate 48
  check_table(v3, {{8, 1, true, {}}});
  v3.moe.moe_intermediate_size = 44;
  check_table(v3, {{8, 1, false, {"moe_intermediate_size=44", "T=8"}}, {4, 4, true, {}}});
}

TEST(ParallelValidation, MlaAllowsAnyNDividingT) {
  const ModelConfig v2 = resolve_model_config("builtin:tiny-deepseek-v2");
  check_table(v2, {
                      {8, 8, true, {}},
                      {8, 4, true, {}},
                      {8, 2, true, {}},
                      {4, 4, true, {}},
                      {2, 2, true, {}},
                      {1, 1, true, {}},
                      {8, 3, false, {"N=3", "T=8"}},
                      {6, 2, false, {"T=6", "num_attention_heads=8"}},
                  });
}

TEST(ParallelValidation, SparseNeedsNEqualToTWhenDcpIsOn) {
  const ModelConfig v32 = resolve_model_config("builtin:tiny-deepseek-v32");
  check_table(v32, {
                       {8, 8, true, {}},
                       {8, 1, true, {}},
                       {4, 4, true, {}},
                       {2, 2, true, {}},
                       {8, 4, false, {"N=4", "T=8", "N == T"}},
                       {8, 2, false, {"N=2", "T=8"}},
                       {4, 2, false, {"N=2", "T=4"}},
                   });
}

// Independent statement of the GQA rule: lay the KV heads on ranks as TP does and demand
// that every rank holds whole heads and every DCP group holds one and the same KV head set.
bool gqa_layout_ok(int64_t heads, int64_t kv, int64_t intermediate, int64_t T, int64_t N) {
  if (T % N != 0 || heads % T != 0 || intermediate % T != 0) return false;
  std::vector<std::set<int64_t>> held(T);
  if (kv >= T) {
    if (kv % T != 0) return false;
    for (int64_t r = 0; r < T; ++r)
      for (int64_t h = r * kv / T; h < (r + 1) * kv / T; ++h) held[r].insert(h);
  } else {
    if (T % kv != 0) return false;
    for (int64_t r = 0; r < T; ++r) held[r].insert(r / (T / kv));
  }
  for (int64_t g = 0; g < T / N; ++g)
    for (int64_t i = 1; i < N; ++i)
      if (held[g * N + i] != held[g * N]) return false;
  return true;
}

TEST(ParallelValidation, RandomGqaLayoutsAgreeWithRankByRankCheck) {
  CTXPAR_SEEDED_RNG(rng);
  int accepted = 0, rejected = 0;
  const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 8, 12, 16, 24};
  auto draw = [&] { return sizes[uniform_int(rng, 0, 9)]; };
  int accepted_with_dcp = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    // Sizes that often fit each other, so both outcomes (and N > 1 accepted) are common.
    const int64_t kv = draw();
    const int64_t heads = kv * draw();
    const int64_t intermediate = uniform_int(rng, 1, 8) * 24;
    const int64_t T = draw();
    const int64_t N = uniform_int(rng, 0, 3) == 0 ? uniform_int(rng, 1, 8) : T / draw();
    if (N < 1) continue;
    const bool expected = gqa_layout_ok(heads, kv, intermediate, T, N);
    bool got = true;
    try {
      validate_for_parallel(gqa(heads, kv, intermediate), T, N);
    } catch (const Error&) {
      got = false;
    }
    ASSERT_EQ(got, expected) << "heads=" << heads << " kv=" << kv << " inter=" << intermediate
                             << " T=" << T << " N=" << N;
    (got ? accepted : rejected)++;
    accepted_with_dcp += got && N > 1;
  }
  EXPECT_GT(accepted, 50);  // the draw covers both outcomes
  EXPECT_GT(rejected, 50);
  EXPECT_GT(accepted_with_dcp, 20);
}

}  // namespace
}  // namespace ctxpar::model
