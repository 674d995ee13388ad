#include <gtest/gtest.h>

#include <random>

#include "ctxpar/attention/attention_config.h"
#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/core/error.h"
#include "support/seeded_rng.h"

namespace ctxpar::attention {
namespace {

std::vector<ScheduledRequest> random_batch(std::mt19937& rng, const kv::DcpLayout& layout) {
  std::vector<ScheduledRequest> reqs;
  const int n = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) {
    ScheduledRequest r;
    r.num_computed = static_cast<int64_t>(rng() % 90);
    r.num_scheduled = 1 + static_cast<int64_t>(rng() % 20);
    const int64_t blocks = layout.num_virtual_blocks(r.num_computed + r.num_scheduled);
    for (int64_t b = 0; b < blocks; ++b)
      r.block_table.push_back(static_cast<int32_t>(rng() % 1000));
    reqs.push_back(std::move(r));
  }
  return reqs;
}

TEST(AttentionMetadata, EveryFieldMatchesTheLayoutOnEveryRank) {
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8);
    const int b = std::vector<int>{1, 2, 4, 16}[rng() % 4];
    const int i = b == 1 ? 1 : std::vector<int>{1, 2, b}[rng() % 3];
    const kv::DcpLayout layout(n, b, i);
    const auto reqs = random_batch(rng, layout);
    for (int r = 0; r < n; ++r) {
      const AttentionMetadata md = n == 1 ? AttentionMetadataBuilder(b).build(reqs)
                                          : DcpMetadataBuilder(layout, r).build(reqs);
      const CommonAttentionMetadata& c = md.common;
      ASSERT_EQ(md.dcp.has_value(), n > 1);
      int64_t t = 0, decodes = 0;
      bool leading = true;
      for (size_t q = 0; q < reqs.size(); ++q) {
        leading = leading && reqs[q].num_scheduled == 1 && reqs[q].num_computed > 0;
        decodes += leading;
        EXPECT_EQ(c.query_start.data<int32_t>()[q], t);
        EXPECT_EQ(c.local_context_lens[q], layout.local_len(reqs[q].num_computed, r));
        if (n > 1) {
          EXPECT_EQ(md.dcp->context_len_matrix.data<int32_t>()[q * n + r],
                    layout.local_len(reqs[q].num_computed, r));
        }
        for (int64_t j = 0; j < reqs[q].num_scheduled; ++j, ++t) {
          const int64_t p = reqs[q].num_computed + j;
          EXPECT_EQ(c.positions.data<int64_t>()[t], p);
          EXPECT_EQ(c.token_req.data<int32_t>()[t], static_cast<int32_t>(q));
          EXPECT_EQ(c.slot_mapping.data<int64_t>()[t], layout.slot(p, r, reqs[q].block_table));
          // Brute-force counts of this rank's positions below the bounds.
          int64_t ctx = 0, causal = 0;
          for (int64_t s = 0; s <= p; ++s) {
            if (layout.owner(s) != r) continue;
            causal += 1;
            ctx += s < reqs[q].num_computed;
          }
          EXPECT_EQ(c.context_key_lens.data<int32_t>()[t], ctx);
          EXPECT_EQ(c.causal_key_lens.data<int32_t>()[t], causal);
        }
      }
      EXPECT_EQ(c.num_tokens, t);
      EXPECT_EQ(c.num_decode_reqs, decodes);
    }
  }
}

TEST(AttentionMetadata, RejectsInconsistentRequests) {
  const AttentionMetadataBuilder builder(16);
  std::vector<ScheduledRequest> reqs(1);
  reqs[0].num_computed = 20;
  reqs[0].num_scheduled = 0;
  reqs[0].block_table = {0, 1};
  EXPECT_THROW(builder.build(reqs), Error);
  reqs[0].num_scheduled = 13;  // 33 tokens need 3 blocks of 16
  EXPECT_THROW(builder.build(reqs), Error);
  reqs[0].block_table.push_back(2);
  EXPECT_NO_THROW(builder.build(reqs));
}

TEST(AttentionConfig, GqaRuleNamesTheNumbers) {
  EXPECT_NO_THROW(validate_gqa_parallel(32, 8, 16, 2));
  EXPECT_NO_THROW(validate_gqa_parallel(32, 8, 4, 1));
  EXPECT_NO_THROW(validate_gqa_parallel(24, 2, 6, 3));
  try {
    validate_gqa_parallel(32, 8, 8, 2);  // one KV head per rank: nothing replicated to shard
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_key_value_heads (8)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate_gqa_parallel(32, 8, 16, 4), Error);  // 16 / 8 = 2 ranks per head
  EXPECT_THROW(validate_gqa_parallel(30, 1, 4, 2), Error);   // heads not divisible by T
  EXPECT_THROW(validate_gqa_parallel(32, 8, 4, 3), Error);   // N does not divide T
  EXPECT_THROW(validate_gqa_parallel(24, 3, 4, 1), Error);   // 3 and 4 do not divide
  EXPECT_NO_THROW(validate_mla_parallel(16, 8, 8));
  EXPECT_THROW(validate_mla_parallel(16, 8, 3), Error);
  EXPECT_THROW(validate_mla_parallel(12, 8, 1), Error);
}

}  // namespace
}  // namespace ctxpar::attention
