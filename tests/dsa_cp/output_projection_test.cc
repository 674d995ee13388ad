// OutputProjection, the o_proj of MLA-family layers, on random weights and inputs for
// T in {1, 2, 4} and f32, bf16 and int8 weights:
//  - the row-parallel form (summed over the ranks) and the gathered full weight give the
//    unsplit projection, which matches a double reference;
//  - int8 quantization does not depend on T: the full weight a rank gathers is bit for bit
//    the T = 1 quantized weight, smoothing and scale;
//  - the full-weight alias is restored when the code using it throws, and one workspace
//    serves every layer without growing.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/linear.h"
#include "ctxpar/kernels/linear_int8.h"
#include "ctxpar/model/dummy_weights.h"
#include "ctxpar/model/layers/output_projection.h"
#include "support/seeded_rng.h"

namespace ctxpar::model {
namespace {

constexpr int64_t kOut = 48, kIn = 96;  // in: 4 ranks × 24 input columns
const char* const kName = "model.layers.0.self_attn.o_proj.weight";

double relative_error(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = static_cast<double>(a.data<float>()[i]) - b.data<float>()[i];
    num += d * d;
    den += static_cast<double>(b.data<float>()[i]) * b.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().raw(), b.contiguous().raw(), a.nbytes()) == 0;
}

struct Variant {
  const char* name;
  DType weight_dtype;
  OProjQuant quant;
  double tol_vs_reference;  // against the double reference of the same weights
};

// The unsplit projection's tensors and output (T = 1).
struct Unsplit {
  Tensor y;
  std::vector<Tensor> tensors;  // copies of persistent_tensors()
};

Unsplit run_unsplit(const WeightSource& weights, const ModelOptions& options, const Tensor& x) {
  Unsplit u;
  run_inprocess_ranks(1, [&](Communicator& world) {
    ParallelGroups groups(world, 1, 1);
    ThreadPool pool(1);
    const OutputProjection proj(ModelContext{weights, groups, options, pool}, kName, {kOut, kIn});
    u.y = proj.forward(x);
    for (const Tensor* t : proj.persistent_tensors()) u.tensors.push_back(t->clone());
  });
  return u;
}

TEST(OutputProjection, RowParallelAndFullWeightEqualTheUnsplitProjection) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const DummyWeights weights(rng());
  const int64_t tokens = 1 + static_cast<int64_t>(rng() % 9);
  Tensor x = Tensor::empty({tokens, kIn}, DType::kF32);
  std::normal_distribution<float> normal(0, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = normal(rng);

  const Variant variants[] = {{"f32", DType::kF32, OProjQuant::kNone, 1e-5},
                              {"bf16", DType::kBF16, OProjQuant::kNone, 1e-5},
                              {"int8", DType::kF32, OProjQuant::kInt8, 1e-5}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    ModelOptions options;
    options.weight_dtype = v.weight_dtype;
    options.o_proj_quant = v.quant;
    const Unsplit unsplit = run_unsplit(weights, options, x);
    // The double reference of the weights the projection keeps.
    Tensor reference = Tensor::empty({tokens, kOut}, DType::kF32);
    if (v.quant == OProjQuant::kInt8) {
      kernels::int8_linear_reference(x, unsplit.tensors[0], unsplit.tensors[1], &unsplit.tensors[2],
                                     nullptr, reference);
      // And the quantized model stays close to the f32 one.
      Tensor f32 = Tensor::empty({tokens, kOut}, DType::kF32);
      const Tensor w = weights.get(kName, {kOut, kIn}, DType::kF32, Slice::full());
      kernels::linear_reference(x, w, nullptr, f32);
      EXPECT_LE(relative_error(reference, f32), 3e-2) << "int8 vs f32 weights";
    } else {
      Tensor xr = x;
      if (v.weight_dtype == DType::kBF16) xr = x.to(DType::kBF16).to(DType::kF32);
      kernels::linear_reference(xr, unsplit.tensors[0], nullptr, reference);
    }
    EXPECT_LE(relative_error(unsplit.y, reference), v.tol_vs_reference) << "T=1 vs reference";

    for (int t : {2, 4}) {
      SCOPED_TRACE(fmt::format("T={}", t));
      run_inprocess_ranks(t, [&](Communicator& world) {
        ParallelGroups groups(world, t, 1);
        ThreadPool pool(1);
        OutputProjection proj(ModelContext{weights, groups, options, pool}, kName, {kOut, kIn});
        const int64_t w = kIn / t, r = groups.tp_rank();
        const Tensor row_parallel = proj.forward(x.slice(1, r * w, (r + 1) * w).contiguous());
        FullWeightWorkspace workspace;
        Tensor full_out;
        {
          const OutputProjection::FullWeight full = proj.use_full_weight(workspace);
          EXPECT_TRUE(proj.full_weight_active());
          EXPECT_TRUE(same_bytes(proj.active_weight(), unsplit.tensors[0]))
              << "the gathered weight is the unsplit one";
          if (v.quant == OProjQuant::kInt8) {
            EXPECT_TRUE(same_bytes(workspace.vector(FullWeightWorkspace::kScale, kOut),
                                   unsplit.tensors[1]));
            EXPECT_TRUE(same_bytes(workspace.vector(FullWeightWorkspace::kSmoothing, kIn),
                                   unsplit.tensors[2]));
          }
          full_out = proj.forward_full(x);
        }
        EXPECT_FALSE(proj.full_weight_active());
        EXPECT_LE(relative_error(row_parallel, unsplit.y), 1e-5) << "row-parallel, rank " << r;
        EXPECT_LE(relative_error(full_out, unsplit.y), 1e-5) << "full weight, rank " << r;
        // (T - 1) / T of the full weight (and smoothing) came from the other ranks.
        const int64_t full_bytes =
            kOut * kIn * static_cast<int64_t>(dtype_size(proj.active_weight().dtype())) +
            (v.quant == OProjQuant::kInt8 ? kIn * 4 : 0);
        EXPECT_EQ(workspace.gathered_bytes(), full_bytes * (t - 1) / t);
      });
    }
  }
}

TEST(OutputProjection, FullWeightAliasIsRestoredWhenItsUserThrows) {
  const DummyWeights weights(std::random_device{}());
  for (OProjQuant quant : {OProjQuant::kNone, OProjQuant::kInt8}) {
    ModelOptions options;
    options.o_proj_quant = quant;
    run_inprocess_ranks(2, [&](Communicator& world) {
      ParallelGroups groups(world, 2, 1);
      ThreadPool pool(1);
      const ModelContext ctx{weights, groups, options, pool};
      OutputProjection a(ctx, kName, {kOut, kIn});
      OutputProjection b(ctx, "model.layers.1.self_attn.o_proj.weight", {kOut, kIn});
      const void* shard = a.active_weight().raw();
      FullWeightWorkspace workspace;
      try {
        const OutputProjection::FullWeight full = a.use_full_weight(workspace);
        EXPECT_NE(a.active_weight().raw(), shard);
        a.forward_full(Tensor::zeros({3, kIn / 2}, DType::kF32));  // a shard-wide input: throws
        ADD_FAILURE() << "a wrongly shaped input was accepted";
      } catch (const Error&) {
      }
      EXPECT_FALSE(a.full_weight_active());
      EXPECT_EQ(a.active_weight().raw(), shard) << "the TP shard alias is back";
      EXPECT_THROW(a.forward_full(Tensor::zeros({1, kIn}, DType::kF32)), Error);
      // A second gather while one is active is refused and leaves the alias as it was.
      {
        const OutputProjection::FullWeight full = a.use_full_weight(workspace);
        EXPECT_THROW((void)a.use_full_weight(workspace), Error);
        EXPECT_TRUE(a.full_weight_active());
      }
      EXPECT_FALSE(a.full_weight_active());
      // One workspace serves every layer: no growth after the first gather.
      const int64_t capacity = workspace.capacity_bytes();
      { const OutputProjection::FullWeight full = b.use_full_weight(workspace); }
      { const OutputProjection::FullWeight full = a.use_full_weight(workspace); }
      EXPECT_EQ(workspace.allocations(), quant == OProjQuant::kInt8 ? 3 : 1);
      EXPECT_EQ(workspace.capacity_bytes(), capacity);
    });
  }
}

}  // namespace
}  // namespace ctxpar::model
