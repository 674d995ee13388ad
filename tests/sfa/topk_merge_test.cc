// Merging per-rank top-k lists (the sharded indexer mode): equal to its reference, and equal
// to the top-k over the whole row when every rank's list is its own top-k under any DCP
// layout — with ties, NaN, signed zeros and ranks that own nothing.
#include "ctxpar/kernels/topk_merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/topk.h"
#include "ctxpar/kv/dcp_layout.h"
#include "sfa_test_util.h"

namespace ctxpar::kernels {
namespace {

class TopkMergeTest : public sfa_test::SeededTest {
 protected:
  // Scores from few integer levels (ties everywhere), with some NaN, −0 and −inf.
  float tricky_score() {
    switch (uniform_int(0, 9)) {
      case 0:
        return std::numeric_limits<float>::quiet_NaN();
      case 1:
        return -0.0f;
      case 2:
        return -std::numeric_limits<float>::infinity();
      default:
        return static_cast<float>(uniform_int(-3, 3));
    }
  }
};

TEST_F(TopkMergeTest, LocalTopkListsMergeToTheGlobalTopkForEveryLayout) {
  for (int round = 0; round < 200; ++round) {
    const int n_ranks = static_cast<int>(uniform_int(1, 8));
    const int block = static_cast<int>(uniform_int(1, 16));
    std::vector<int> interleaves;
    for (int i = 1; i <= block; ++i)
      if (block % i == 0) interleaves.push_back(i);
    const int interleave = interleaves[static_cast<size_t>(uniform_int(0, interleaves.size() - 1))];
    const kv::DcpLayout layout(n_ranks, block, interleave);
    const int64_t len = uniform_int(1, 90), k = uniform_int(1, 30);
    SCOPED_TRACE(fmt::format("N={} B={} I={} len={} k={}", n_ranks, block, interleave, len, k));
    Tensor row = Tensor::empty({1, len}, DType::kF32);
    for (int64_t p = 0; p < len; ++p) row.data<float>()[p] = tricky_score();
    Tensor want = Tensor::empty({1, k}, DType::kI32),
           want_values = Tensor::empty({1, k}, DType::kF32);
    topk(row, k, nullptr, want, &want_values);

    // Each rank: its own keys in local order, its top-k, mapped back to global positions.
    Tensor scores = Tensor::empty({1, n_ranks * k}, DType::kF32);
    Tensor positions = Tensor::empty({1, n_ranks * k}, DType::kI32);
    for (int r = 0; r < n_ranks; ++r) {
      const int64_t local_len = layout.local_len(len, r);
      Tensor local = Tensor::empty({1, std::max<int64_t>(local_len, 1)}, DType::kF32);
      for (int64_t li = 0; li < local_len; ++li)
        local.data<float>()[li] = row.data<float>()[layout.global_position(li, r)];
      Tensor valid = Tensor::empty({1}, DType::kI32);
      valid.data<int32_t>()[0] = static_cast<int32_t>(local_len);
      Tensor idx = Tensor::empty({1, k}, DType::kI32), val = Tensor::empty({1, k}, DType::kF32);
      topk(local, k, &valid, idx, &val);
      for (int64_t j = 0; j < k; ++j) {
        const int32_t li = idx.data<int32_t>()[j];
        scores.data<float>()[r * k + j] = val.data<float>()[j];
        positions.data<int32_t>()[r * k + j] =
            li < 0 ? -1 : static_cast<int32_t>(layout.global_position(li, r));
      }
    }
    Tensor got = Tensor::empty({1, k}, DType::kI32),
           got_values = Tensor::empty({1, k}, DType::kF32);
    got.fill(-7);
    topk_merge(scores, positions, k, got, &got_values);
    ASSERT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0);
    ASSERT_EQ(std::memcmp(got_values.raw(), want_values.raw(), got.nbytes()), 0);
    Tensor ref = Tensor::empty({1, k}, DType::kI32),
           ref_values = Tensor::empty({1, k}, DType::kF32);
    topk_merge_reference(scores, positions, k, ref, &ref_values);
    ASSERT_EQ(std::memcmp(ref.raw(), want.raw(), ref.nbytes()), 0);
  }
}

TEST_F(TopkMergeTest, MatchesReferenceOnArbitraryCandidateLists) {
  const int64_t rows = 30, m = uniform_int(1, 50);
  Tensor scores = Tensor::empty({rows, m}, DType::kF32);
  Tensor positions = Tensor::empty({rows, m}, DType::kI32);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> perm(static_cast<size_t>(2 * m));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng());
    for (int64_t c = 0; c < m; ++c) {
      scores.data<float>()[r * m + c] = tricky_score();
      positions.data<int32_t>()[r * m + c] = uniform_int(0, 4) == 0 ? -1 : perm[c];
    }
  }
  for (int64_t k : {int64_t{0}, int64_t{1}, m / 2, m, m + 3}) {
    Tensor got = Tensor::empty({rows, k}, DType::kI32), ref = Tensor::empty({rows, k}, DType::kI32);
    Tensor gv = Tensor::empty({rows, k}, DType::kF32), rv = Tensor::empty({rows, k}, DType::kF32);
    topk_merge(scores, positions, k, got, &gv);
    topk_merge_reference(scores, positions, k, ref, &rv);
    ASSERT_EQ(std::memcmp(got.raw(), ref.raw(), got.nbytes()), 0) << "k " << k;
    for (int64_t i = 0; i < gv.numel(); ++i) {
      const float a = gv.data<float>()[i], b = rv.data<float>()[i];
      ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || a == b) << "k " << k << " at " << i;
    }
  }
}

TEST_F(TopkMergeTest, RejectsBadPositionsAndShapes) {
  Tensor scores = Tensor::zeros({1, 3}, DType::kF32);
  Tensor positions = Tensor::zeros({1, 3}, DType::kI32);
  positions.data<int32_t>()[1] = -2;
  Tensor out = Tensor::empty({1, 2}, DType::kI32);
  EXPECT_THROW(topk_merge(scores, positions, 2, out, nullptr), Error);
  Tensor wrong = Tensor::zeros({1, 4}, DType::kI32);
  EXPECT_THROW(topk_merge(scores, wrong, 2, out, nullptr), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
