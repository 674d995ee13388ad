#include "ctxpar/model/dummy_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using testing::same_bytes;
using testing::uniform_int;

TEST(DummyWeights, RankSlicesConcatenateToTheFullTensor) {
  CTXPAR_SEEDED_RNG(rng);
  const DummyWeights w(rng());
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape(static_cast<size_t>(uniform_int(rng, 1, 3)));
    for (auto& d : shape) d = uniform_int(rng, 1, 11);
    const int dim = static_cast<int>(uniform_int(rng, 0, static_cast<int64_t>(shape.size()) - 1));
    const std::string name = "model.layers." + std::to_string(trial) + ".mlp.up_proj.weight";
    const Tensor full = w.get(name, shape, DType::kF32, Slice::full());
    SCOPED_TRACE(name + " " + full.describe() + " dim " + std::to_string(dim));
    // Exact parts for every part count dividing the dim; padded parts for any count.
    for (int64_t parts = 1; parts <= 7; ++parts) {
      const bool exact = shape[dim] % parts == 0;
      const int64_t p = exact ? shape[dim] / parts : padded_extent(shape[dim], parts) / parts;
      for (int64_t r = 0; r < parts; ++r) {
        const Slice s = exact ? Slice::part(dim, r, parts) : Slice::padded_part(dim, r, parts);
        const Tensor got = w.get(name, shape, DType::kF32, s);
        ASSERT_EQ(got.size(dim), p);
        const int64_t begin = r * p;
        const int64_t valid = std::max<int64_t>(0, std::min(p, shape[dim] - begin));
        if (valid > 0) {
          EXPECT_TRUE(same_bytes(got.slice(dim, 0, valid).contiguous(),
                                 full.slice(dim, begin, begin + valid).contiguous()))
              << s.describe();
        }
        if (valid < p) {
          const Tensor pad = got.slice(dim, valid, p).contiguous();
          for (int64_t i = 0; i < pad.numel(); ++i) EXPECT_EQ(pad.data<float>()[i], 0.0f);
        }
      }
    }
  }
}

TEST(DummyWeights, SameSeedSameValuesOtherSeedOrNameOtherValues) {
  CTXPAR_SEEDED_RNG(rng);
  const uint64_t seed = rng();
  const Shape shape{uniform_int(rng, 3, 40), uniform_int(rng, 3, 40)};
  const std::string name = "model.layers.0.self_attn.o_proj.weight";
  const Tensor a = DummyWeights(seed).get(name, shape, DType::kF32, Slice::full());
  const Tensor b = DummyWeights(seed).get(name, shape, DType::kF32, Slice::full());
  EXPECT_TRUE(same_bytes(a, b));
  const Tensor c = DummyWeights(seed + 1).get(name, shape, DType::kF32, Slice::full());
  const Tensor d = DummyWeights(seed).get("model.layers.1.self_attn.o_proj.weight", shape,
                                          DType::kF32, Slice::full());
  int64_t differ_seed = 0, differ_name = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    differ_seed += a.data<float>()[i] != c.data<float>()[i];
    differ_name += a.data<float>()[i] != d.data<float>()[i];
  }
  EXPECT_GT(differ_seed, a.numel() * 9 / 10);
  EXPECT_GT(differ_name, a.numel() * 9 / 10);
  // Lower precisions are the f32 values rounded, so every dtype agrees across ranks too.
  EXPECT_TRUE(same_bytes(DummyWeights(seed).get(name, shape, DType::kBF16, Slice::full()),
                         a.to(DType::kBF16)));
  EXPECT_TRUE(
      same_bytes(DummyWeights(seed).get(name, shape, DType::kF16, Slice::row_parallel(0, 1)),
                 a.to(DType::kF16)));
}

TEST(DummyWeights, ValuesAreFiniteAndFollowTheInitRule) {
  CTXPAR_SEEDED_RNG(rng);
  const DummyWeights w(rng());
  // Large enough that the mean check below sits > 10 standard deviations from failing.
  const int64_t hidden = uniform_int(rng, 1000, 3000), inter = uniform_int(rng, 500, 1500);
  struct Case {
    std::string name;
    Shape shape;
    bool constant;
    float value;
  };
  const std::vector<Case> cases = {
      {"model.norm.weight", {hidden}, true, 1.0f},
      {"model.layers.2.input_layernorm.weight", {hidden}, true, 1.0f},
      {"model.layers.2.self_attn.kv_a_layernorm.weight", {hidden}, true, 1.0f},
      {"model.layers.2.self_attn.indexer.k_norm.bias", {hidden}, true, 0.0f},
      {"model.layers.2.self_attn.q_proj.bias", {hidden}, false, 0.02f},
      {"model.layers.2.mlp.gate.e_score_correction_bias", {inter}, false, 0.02f},
      {"model.layers.2.mlp.down_proj.weight",
       {hidden, inter},
       false,
       static_cast<float>(1 / std::sqrt(static_cast<double>(inter)))},
      {"model.layers.2.mlp.gate_proj.weight",
       {inter, hidden},
       false,
       static_cast<float>(1 / std::sqrt(static_cast<double>(hidden)))},
      {"model.embed_tokens.weight",
       {uniform_int(rng, 100, 600), hidden},
       false,
       static_cast<float>(1 / std::sqrt(static_cast<double>(hidden)))},
      {"model.layers.2.some_scale", {inter}, false, 0.02f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const DummyInit init = dummy_init_for(c.name, c.shape);
    EXPECT_EQ(init.constant, c.constant);
    EXPECT_FLOAT_EQ(init.value, c.value);
    const Tensor t = w.get(c.name, c.shape, DType::kF32, Slice::full());
    double max_abs = 0, sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float v = t.data<float>()[i];
      ASSERT_TRUE(std::isfinite(v));
      if (c.constant) {
        ASSERT_EQ(v, c.value);
      } else {
        ASSERT_LE(std::abs(v), c.value);
      }
      max_abs = std::max(max_abs, static_cast<double>(std::abs(v)));
      sum += v;
    }
    if (!c.constant) {
      // Uniform over the whole range, centred on zero.
      EXPECT_GT(max_abs, 0.9 * c.value);
      EXPECT_LT(std::abs(sum / static_cast<double>(t.numel())), 0.15 * c.value);
    }
  }
}

// The fan-in scale keeps activations O(1): for an [out, in] weight, |W x| / |x| is about
// sqrt(out / (3 in)), so a stack of square layers neither explodes nor vanishes fast.
TEST(DummyWeights, LinearLayersKeepActivationsInRange) {
  CTXPAR_SEEDED_RNG(rng);
  const DummyWeights w(rng());
  const int64_t h = uniform_int(rng, 96, 200);
  std::vector<double> x(static_cast<size_t>(h));
  std::normal_distribution<double> normal;
  for (double& v : x) v = normal(rng);
  for (int layer = 0; layer < 40; ++layer) {
    const Tensor W = w.get("model.layers." + std::to_string(layer) + ".mlp.w.weight", {h, h},
                           DType::kF32, Slice::full());
    std::vector<double> y(static_cast<size_t>(h), 0.0);
    double nx = 0, ny = 0;
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < h; ++j) y[i] += W.data<float>()[i * h + j] * x[j];
    }
    for (int64_t i = 0; i < h; ++i) {
      nx += x[i] * x[i];
      ny += y[i] * y[i];
    }
    const double gain = std::sqrt(ny / nx);
    // Expected 1/sqrt(3) = 0.577 with a spread of about 0.04 at these sizes.
    EXPECT_GT(gain, 0.3) << "layer " << layer;
    EXPECT_LT(gain, 0.9) << "layer " << layer;
    // Residual connection, as in a transformer block: x + W x stays finite and bounded.
    for (int64_t i = 0; i < h; ++i) x[i] += y[i];
  }
  double norm = 0;
  for (double v : x) norm += v * v;
  EXPECT_TRUE(std::isfinite(norm));
  EXPECT_LT(std::sqrt(norm / static_cast<double>(h)), 1e6);
}

TEST(DummyWeights, RefusesIntegerDtypesAndMisfitSlices) {
  const DummyWeights w(1);
  EXPECT_TRUE(w.has("anything.at.all"));
  EXPECT_THROW(w.get("a.weight", {4, 4}, DType::kI32, Slice::full()), Error);
  try {
    w.get("model.layers.0.mlp.down_proj.weight", {6, 10}, DType::kF32, Slice::row_parallel(1, 3));
    ADD_FAILURE() << "10 columns split 3 ways was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.0.mlp.down_proj.weight"), std::string::npos);
  }
  EXPECT_THROW(w.get("a.weight", {4, -4}, DType::kF32, Slice::full()), Error);
}

}  // namespace
}  // namespace ctxpar::model
