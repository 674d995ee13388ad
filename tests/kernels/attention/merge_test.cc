// Partial merges (DESIGN.md §3): attention over a key set split into N disjoint parts, merged
// pairwise, with merge_partials (a2a plan) and with rescale_partial + sum (ag_rs plan), must
// reproduce attention over the whole set; empty / non-finite lse rules.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_test_util.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/attention.h"
#include "ctxpar/kernels/merge.h"

namespace ctxpar::kernels::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class MergeTest : public SeededTest {
 protected:
  // Attention of q ([tokens, H, d], two sequences: tokens [0, t1) see the keys `ids` of k/v,
  // tokens [t1, tokens) see none) through the double reference. Rows of an empty result get
  // garbage (NaN) o, which a merge must never read.
  void attend(const Tensor& q, int64_t t1, const Tensor& k, const Tensor& v,
              const std::vector<int64_t>& ids, Tensor out, Tensor lse) {
    const int64_t n = static_cast<int64_t>(ids.size());
    Tensor kp = Tensor::empty({n, k.size(1), k.size(2)}, DType::kF32);
    Tensor vp = Tensor::empty({n, v.size(1), v.size(2)}, DType::kF32);
    for (int64_t i = 0; i < n; ++i) {
      kp.select(0, i).copy_from(k.select(0, ids[i]));
      vp.select(0, i).copy_from(v.select(0, ids[i]));
    }
    const int32_t tokens = static_cast<int32_t>(q.size(0));
    varlen_attention_reference(q, kp, vp, i32_tensor({0, static_cast<int32_t>(t1), tokens}),
                               i32_tensor({0, static_cast<int32_t>(n), static_cast<int32_t>(n)}),
                               scale_, out, lse);
    for (int64_t t = 0; t < q.size(0); ++t) {
      for (int64_t h = 0; h < q.size(1); ++h) {
        if (lse.item_as_double({t, h}) == -INFINITY) out.select(0, t).select(0, h).fill(kNaN);
      }
    }
  }

  float scale_ = 0.125f;
};

TEST_F(MergeTest, SplitKeySetsReproduceTheUnsplitResult) {
  // The unsplit result and every partial come from the f32 kernel, each within ~1e-6 of exact,
  // so the identity merge(partials) == unsplit holds to their sum; the merge arithmetic itself
  // is checked at 1e-6 against the double-precision merge of the same partials.
  constexpr double kIdentityTol = 2e-6;
  for (int64_t parts : {1, 2, 3, 5, 8, static_cast<int>(uniform_int(1, 8))}) {
    SCOPED_TRACE("parts " + std::to_string(parts));
    const int64_t tokens = uniform_int(2, 5), t1 = tokens - 1, heads = uniform_int(1, 6);
    const int64_t d = uniform_int(0, 3) == 0 ? uniform_int(1, 40) : 128;  // odd sizes too
    const int64_t n = uniform_int(0, 3) == 0 ? uniform_int(0, parts) : uniform_int(1, 400);
    const Tensor q = normal({tokens, heads, d}, 2.0);
    const Tensor k = normal({n, heads, d}), v = normal({n, heads, d});
    // Each key goes to a random part, so parts can be empty.
    std::vector<std::vector<int64_t>> ids(parts);
    std::vector<int64_t> all;
    for (int64_t j = 0; j < n; ++j) {
      ids[uniform_int(0, parts - 1)].push_back(j);
      all.push_back(j);
    }
    Tensor whole = Tensor::empty({tokens, heads, d}, DType::kF32);
    Tensor whole_lse = Tensor::empty({tokens, heads}, DType::kF32);
    attend(q, t1, k, v, all, whole, whole_lse);
    for (int64_t t = 0; t < tokens; ++t) {  // empty rows: the expected o is 0 (not garbage)
      for (int64_t h = 0; h < heads; ++h) {
        if (whole_lse.item_as_double({t, h}) == -INFINITY) whole.select(0, t).select(0, h).fill(0);
      }
    }
    Tensor outs = Tensor::empty({parts, tokens, heads, d}, DType::kF32);
    Tensor lses = Tensor::empty({parts, tokens, heads}, DType::kF32);
    for (int64_t p = 0; p < parts; ++p)
      attend(q, t1, k, v, ids[p], outs.select(0, p), lses.select(0, p));

    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_trace(isa));
      {  // Pairwise, in a random order.
        std::vector<int64_t> order(parts);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng_);
        Tensor o = outs.select(0, order[0]).clone();
        Tensor l = lses.select(0, order[0]).clone();
        for (int64_t i = 1; i < parts; ++i) {
          merge_attn_states(o, l, outs.select(0, order[i]), lses.select(0, order[i]), isa);
        }
        // A single empty part keeps its garbage o until merged with nothing; only compare
        // once at least two parts were merged or the row is non-empty.
        if (parts > 1) expect_attention_close(o, l, whole, whole_lse, kIdentityTol);
      }
      {  // All at once (a2a).
        Tensor o = poisoned_view({tokens, heads, d}, 3);
        Tensor l = poisoned_view({tokens, heads}, 1);
        merge_partials(outs, lses, o, l, isa);
        expect_attention_close(o, l, whole, whole_lse, kIdentityTol);
        Tensor ref = Tensor::empty({tokens, heads, d}, DType::kF32);
        Tensor ref_lse = Tensor::empty({tokens, heads}, DType::kF32);
        merge_partials_reference(outs, lses, ref, ref_lse);
        expect_attention_close(o, l, ref, ref_lse, 1e-6);
      }
      {  // Rescale each partial against the gathered lses, then sum (ag_rs).
        Tensor sum = Tensor::zeros({tokens, heads, d}, DType::kF32);
        Tensor merged = poisoned_view({tokens, heads}, 0);
        for (int64_t p = 0; p < parts; ++p) {
          Tensor o = outs.select(0, p).clone();
          rescale_partial(o, lses.select(0, p), lses, merged, isa);
          for (int64_t i = 0; i < sum.numel(); ++i) sum.data<float>()[i] += o.data<float>()[i];
        }
        expect_attention_close(sum, merged, whole, whole_lse, kIdentityTol);
      }
    }
    {  // The references obey the same identity.
      Tensor o = Tensor::empty({tokens, heads, d}, DType::kF32);
      Tensor l = Tensor::empty({tokens, heads}, DType::kF32);
      merge_partials_reference(outs, lses, o, l);
      expect_attention_close(o, l, whole, whole_lse, kIdentityTol);
    }
  }
}

TEST_F(MergeTest, NonFiniteLseCountsAsEmptyAndAllEmptyGivesZero) {
  const int64_t parts = uniform_int(2, 6), tokens = 7, heads = 3, d = uniform_int(1, 70);
  Tensor outs = normal({parts, tokens, heads, d});
  Tensor lses = normal({parts, tokens, heads}, 3.0);
  // Token 0: every partial empty (-inf, NaN, +inf mixed). Tokens 1..: random empties.
  const float specials[3] = {-kInf, kNaN, kInf};
  for (int64_t p = 0; p < parts; ++p) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        if (t == 0 || uniform_int(0, 2) == 0) {
          lses.data<float>()[(p * tokens + t) * heads + h] = specials[uniform_int(0, 2)];
          outs.select(0, p).select(0, t).select(0, h).fill(kNaN);  // garbage, never read
        }
      }
    }
  }
  // Expected: the merge of the finite partials only (0 / -inf where none), by the reference
  // on inputs without special values.
  Tensor expect = Tensor::empty({tokens, heads, d}, DType::kF32);
  Tensor expect_lse = Tensor::empty({tokens, heads}, DType::kF32);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<int64_t> finite;
      for (int64_t p = 0; p < parts; ++p) {
        if (std::isfinite(lses.item_as_double({p, t, h}))) finite.push_back(p);
      }
      Tensor o1 = Tensor::empty({static_cast<int64_t>(finite.size()), 1, 1, d}, DType::kF32);
      Tensor l1 = Tensor::empty({static_cast<int64_t>(finite.size()), 1, 1}, DType::kF32);
      for (size_t i = 0; i < finite.size(); ++i) {
        o1.select(0, static_cast<int64_t>(i))
            .select(0, 0)
            .select(0, 0)
            .copy_from(outs.select(0, finite[i]).select(0, t).select(0, h));
        l1.data<float>()[i] = static_cast<float>(lses.item_as_double({finite[i], t, h}));
      }
      Tensor o = expect.slice(0, t, t + 1).slice(1, h, h + 1);
      Tensor l = expect_lse.slice(0, t, t + 1).slice(1, h, h + 1);
      merge_partials_reference(o1, l1, o, l);
    }
  }
  for (int64_t h = 0; h < heads; ++h) EXPECT_EQ(expect_lse.item_as_double({0, h}), -INFINITY);

  Tensor ref = poisoned_view({tokens, heads, d}, 0);
  Tensor ref_lse = poisoned_view({tokens, heads}, 0);
  merge_partials_reference(outs, lses, ref, ref_lse);
  expect_attention_close(ref, ref_lse, expect, expect_lse, 1e-6);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_trace(isa));
    Tensor o = poisoned_view({tokens, heads, d}, 2);
    Tensor l = poisoned_view({tokens, heads}, 2);
    merge_partials(outs, lses, o, l, isa);
    expect_attention_close(o, l, expect, expect_lse, 1e-6);

    // Pairwise: an empty side (any non-finite lse, garbage o) leaves the other side as is.
    Tensor a = outs.select(0, 0).clone(), la = lses.select(0, 0).clone();
    merge_attn_states(a, la, outs.select(0, 1), lses.select(0, 1), isa);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        const double l0 = lses.item_as_double({0, t, h}), l1 = lses.item_as_double({1, t, h});
        const bool e0 = !std::isfinite(l0), e1 = !std::isfinite(l1);
        for (int64_t x = 0; x < d; ++x) {
          const double got = a.item_as_double({t, h, x});
          if (e0 && e1) {
            EXPECT_EQ(got, 0.0);
          } else if (e0) {
            EXPECT_FLOAT_EQ(got, outs.item_as_double({1, t, h, x}));
          } else if (e1) {
            EXPECT_FLOAT_EQ(got, outs.item_as_double({0, t, h, x}));
          } else {
            EXPECT_TRUE(std::isfinite(got));
          }
        }
        if (e0 && e1) {
          EXPECT_EQ(la.item_as_double({t, h}), -INFINITY);
        }
      }
    }

    // rescale_partial: an empty local partial becomes exactly 0 even though its o is NaN.
    Tensor r = outs.select(0, 0).clone();
    Tensor merged = poisoned_view({tokens, heads}, 0);
    rescale_partial(r, lses.select(0, 0), lses, merged, isa);
    Tensor rr = outs.select(0, 0).clone();
    Tensor merged_ref = Tensor::empty({tokens, heads}, DType::kF32);
    rescale_partial_reference(rr, lses.select(0, 0), lses, merged_ref);
    expect_attention_close(r, merged, rr, merged_ref, 1e-6);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        if (std::isfinite(lses.item_as_double({0, t, h}))) continue;
        for (int64_t x = 0; x < d; ++x) EXPECT_EQ(r.item_as_double({t, h, x}), 0.0);
      }
    }
  }
}

TEST_F(MergeTest, FastMatchesReferenceOnStridedRandomInputs) {
  const int64_t parts = uniform_int(1, 9), tokens = uniform_int(0, 6), heads = uniform_int(1, 5);
  const int64_t d = uniform_int(1, 200);
  const Tensor outs = stored_as(normal({parts, tokens, heads, d}), DType::kF32, 3);
  const Tensor lses = stored_as(normal({parts, tokens, heads}, 5.0), DType::kF32, 2);
  Tensor ref = Tensor::empty({tokens, heads, d}, DType::kF32);
  Tensor ref_lse = Tensor::empty({tokens, heads}, DType::kF32);
  merge_partials_reference(outs, lses, ref, ref_lse);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_trace(isa));
    Tensor o = poisoned_view({tokens, heads, d}, 5);
    Tensor l = poisoned_view({tokens, heads}, 3);
    merge_partials(outs, lses, o, l, isa);
    expect_attention_close(o, l, ref, ref_lse, 1e-6);
  }
}

TEST_F(MergeTest, RejectsMismatchedShapes) {
  Tensor out = normal({2, 3, 8}), lse = normal({2, 3});
  EXPECT_THROW(merge_attn_states(out, lse, normal({2, 3, 9}), normal({2, 3})), Error);
  EXPECT_THROW(merge_attn_states(out, lse, normal({2, 3, 8}), normal({3, 2})), Error);
  EXPECT_THROW(merge_partials(normal({4, 2, 3, 8}), normal({4, 2, 2}), out, lse), Error);
  EXPECT_THROW(merge_partials(normal({4, 2, 3, 8}), normal({4, 2, 3}).to(DType::kBF16), out, lse),
               Error);
  EXPECT_THROW(rescale_partial(out, lse, normal({4, 3, 3}), lse), Error);
}

}  // namespace
}  // namespace ctxpar::kernels::testing
