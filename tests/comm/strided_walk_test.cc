// The kernels under both backends: strided copy, multi-input sums and rank-major packing,
// checked on random shapes and strides against element-by-element references.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "comm_test_util.h"
#include "ctxpar/comm/chunk_packing.h"
#include "ctxpar/comm/collective_check.h"
#include "ctxpar/comm/strided_walk.h"
#include "ctxpar/comm/tensor_sum.h"
#include "ctxpar/core/error.h"
#include "support/seeded_rng.h"

namespace ctxpar::testing {
namespace {

struct Drawn {
  Shape shape;
  DType dtype;
};

Drawn draw(std::mt19937_64& rng) {
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kI32, DType::kI64, DType::kU8};
  Drawn d;
  d.dtype = dtypes[rng() % 5];
  const int ndim = static_cast<int>(rng() % 5);  // 0-d tensors too
  for (int i = 0; i < ndim; ++i) d.shape.push_back(static_cast<int64_t>(rng() % 6));
  return d;
}

TEST(StridedWalk, CopyMatchesElementwiseOnRandomStrides) {
  const uint64_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 300; ++i) {
    const Drawn d = draw(rng);
    const Tensor values = random_tensor(d.shape, d.dtype, seed, i);
    Buffer src = make_buffer(d.shape, d.dtype, static_cast<Layout>(rng() % 3), 0x11);
    src.view.copy_from(values);
    Buffer dst = make_buffer(d.shape, d.dtype, static_cast<Layout>(rng() % 3), 0x77);
    strided_copy(src.view, dst.view);
    for_each_index(d.shape, [&](const std::vector<int64_t>& idx) {
      ASSERT_EQ(dst.view.item_as_double(idx), values.item_as_double(idx))
          << dst.view.describe() << " at " << index_str(idx);
    });
    if (d.shape.empty()) {
      EXPECT_EQ(dst.view.item_as_double({}), values.item_as_double({}));
    }
    EXPECT_EQ(count_padding_writes(dst), 0);
  }
}

TEST(StridedWalk, RangesCoverEachElementOnce) {
  const uint64_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200; ++i) {
    Shape shape;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) shape.push_back(1 + rng() % 5);
    Buffer b = make_buffer(shape, DType::kI32, static_cast<Layout>(rng() % 3), 0);
    const Tensor* operands[] = {&b.view};
    const StridedWalk walk(shape, operands);
    // Visit in pieces and count visits per element.
    Tensor visits = Tensor::zeros(b.host.shape(), DType::kI32);
    const int64_t n = walk.numel();
    int64_t begin = 0;
    while (begin < n) {
      const int64_t end = std::min<int64_t>(n, begin + 1 + static_cast<int64_t>(rng() % 9));
      walk.for_each_run(begin, end, [&](char* const* p, const int64_t* stride, int64_t count) {
        for (int64_t j = 0; j < count; ++j) {
          const int64_t off = (p[0] + j * stride[0] - static_cast<char*>(b.host.raw())) / 4;
          visits.data<int32_t>()[off] += 1;
        }
      });
      begin = end;
    }
    int64_t total = 0;
    for (int64_t j = 0; j < visits.numel(); ++j) {
      EXPECT_LE(visits.data<int32_t>()[j], 1);
      total += visits.data<int32_t>()[j];
    }
    EXPECT_EQ(total, n) << shape_str(shape);
  }
}

TEST(TensorSum, SumsInInputOrderWithOutputAliasingAnInput) {
  const uint64_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100; ++i) {
    Drawn d = draw(rng);
    if (d.shape.empty()) d.shape = {3};
    d.shape.back() += 600;  // longer than one accumulation block
    const int n = 1 + static_cast<int>(rng() % 6);
    std::vector<Buffer> bufs;
    std::vector<Tensor> values;
    for (int r = 0; r < n; ++r) {
      values.push_back(random_tensor(d.shape, d.dtype, seed, 100 * i + r));
      bufs.push_back(make_buffer(d.shape, d.dtype, static_cast<Layout>(rng() % 3), 0));
      bufs.back().view.copy_from(values.back());
    }
    std::vector<const Tensor*> in;
    for (auto& b : bufs) in.push_back(&b.view);
    const Tensor* out[] = {&bufs[0].view};  // in place into the first input
    sum_tensors(in, out, 0, shape_numel(d.shape));
    int64_t bad = 0;
    for_each_index(d.shape, [&](const std::vector<int64_t>& idx) {
      double want = 0;
      if (d.dtype == DType::kF32 || d.dtype == DType::kBF16) {
        float s = static_cast<float>(values[0].item_as_double(idx));
        for (int r = 1; r < n; ++r) s += static_cast<float>(values[r].item_as_double(idx));
        want = d.dtype == DType::kBF16 ? to_float(bf16(s)) : s;
      } else {
        int64_t s = 0;
        for (int r = 0; r < n; ++r) s += static_cast<int64_t>(values[r].item_as_double(idx));
        want = d.dtype == DType::kU8    ? static_cast<double>(s % 256)
               : d.dtype == DType::kI32 ? static_cast<int32_t>(static_cast<uint32_t>(s))
                                        : static_cast<double>(s);
      }
      bad += bufs[0].view.item_as_double(idx) != want;
    });
    EXPECT_EQ(bad, 0) << dtype_name(d.dtype) << shape_str(d.shape) << " n=" << n;
  }
}

TEST(ChunkPacking, PackThenUnpackRoundTripsAndConverts) {
  const uint64_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100; ++i) {
    const int n = 1 + static_cast<int>(rng() % 5);
    Shape shape;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) shape.push_back(1 + rng() % 4);
    const int dim = static_cast<int>(rng() % shape.size());
    shape[dim] *= n;
    const Tensor values = random_tensor(shape, DType::kBF16, seed, i);
    Buffer src = make_buffer(shape, DType::kBF16, static_cast<Layout>(rng() % 3), 0);
    src.view.copy_from(values);
    const Tensor packed = Tensor::empty(packed_shape(values, dim, n), DType::kF32);
    pack_chunks(src.view, dim, n, packed);
    const int64_t chunk = shape[dim] / n;
    for_each_index(packed.shape(), [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> at(idx.begin() + 1, idx.end());
      at[dim] += idx[0] * chunk;
      ASSERT_EQ(packed.item_as_double(idx), values.item_as_double(at));
    });
    Buffer back = make_buffer(shape, DType::kBF16, static_cast<Layout>(rng() % 3), 0x5a);
    unpack_chunks(packed, dim, n, back.view);
    for_each_index(shape, [&](const std::vector<int64_t>& idx) {
      ASSERT_EQ(back.view.item_as_double(idx), values.item_as_double(idx));
    });
    EXPECT_EQ(count_padding_writes(back), 0);
    EXPECT_EQ(chunks_are_rank_major(values, dim),
              std::all_of(shape.begin(), shape.begin() + dim, [](int64_t s) { return s == 1; }));
  }
}

TEST(CollectiveSignature, MismatchMessagesNameTheFirstDifferingRank) {
  Tensor a = Tensor::zeros({4, 8}, DType::kF32);
  Tensor b = Tensor::zeros({4, 8}, DType::kBF16);
  Tensor c = Tensor::zeros({4, 9}, DType::kF32);
  const auto gather = [](const Tensor& t) {
    return tensor_signature(CollectiveKind::kAllGather, t, 0);
  };
  std::vector<CollectiveSignature> same = {gather(a), gather(a), gather(a)};
  EXPECT_EQ(find_signature_mismatch(same), "");
  std::vector<CollectiveSignature> s = {gather(a), gather(a), gather(b), gather(c)};
  EXPECT_NE(find_signature_mismatch(s).find(
                "all_gather: rank 2 sent bfloat16[4, 8], rank 0 sent float32[4, 8]"),
            std::string::npos)
      << find_signature_mismatch(s);
  s = {gather(a), gather(c)};
  EXPECT_NE(find_signature_mismatch(s).find("rank 1 sent float32[4, 9]"), std::string::npos);
  CollectiveSignature barrier;
  s = {gather(a), barrier};
  EXPECT_NE(find_signature_mismatch(s).find("rank 1 called barrier, rank 0 called all_gather"),
            std::string::npos);
  EXPECT_EQ(find_signature_mismatch({}), "");
}

}  // namespace
}  // namespace ctxpar::testing
