// FP8 checkpoints and dummy weights in the model layer: the FP8 fixture's linears stay FP8 in
// memory; tensor parallelism that cuts a 128-row block is refused with the rule; FP8 tensors
// read back through Checkpoint as stored (aligned slices with their block scales; any slice
// with per-tensor or per-channel `_scale`s) or dequantized (any slice); bad scales are errors
// naming the tensor; dummy FP8 weights
// (quantized at load) give the same greedy tokens for every (T, N), and FP8 linears give the
// logits of a dense model holding the same dequantized weights; an e4m3 KV cache's k/v scales
// are read under vLLM's names and act as the same scales folded into the weights.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/kernels/linear_fp8.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/model/causal_lm.h"
#include "ctxpar/model/checkpoint.h"
#include "ctxpar/model/dummy_weights.h"
#include "ctxpar/model/kv_cache_scales.h"
#include "ctxpar/model/layers/model_linear.h"
#include "ctxpar/model/safetensors.h"
#include "ctxpar/model/sfa_mode.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using testing::error_of;

const std::string kFp8Fixture = std::string(CTXPAR_FIXTURES_DIR) + "/tiny-glm5-fp8-fixture";

TEST(Fp8Checkpoint, FixtureLinearsStayFp8InMemory) {
  const ModelConfig config = load_model_config(kFp8Fixture + "/config.json");
  ASSERT_TRUE(config.quantization.is_fp8());
  const auto ckpt = Checkpoint::open(kFp8Fixture);
  EXPECT_TRUE(ckpt->is_fp8("model.layers.0.self_attn.o_proj.weight"));
  EXPECT_FALSE(ckpt->is_fp8("model.layers.0.self_attn.indexer.weights_proj.weight"));
  EXPECT_FALSE(ckpt->is_fp8("lm_head.weight"));
  run_inprocess_ranks(1, [&](Communicator& world) {
    ParallelGroups groups(world, 1, 1);
    ThreadPool pool(1);
    ModelOptions options;
    CausalLM lm(config, ModelContext{*ckpt, groups, options, pool});
    for (int64_t l = 0; l < lm.num_layers(); ++l) {
      const auto* mla = dynamic_cast<const MlaAttentionLayer*>(&lm.layer(l).attention());
      ASSERT_NE(mla, nullptr);
      const std::vector<const Tensor*> kept = mla->o_proj().persistent_tensors();
      ASSERT_EQ(kept.size(), 2u) << "weight and scale";
      EXPECT_EQ(kept[0]->dtype(), DType::kF8E4M3) << "layer " << l;
      EXPECT_EQ(kept[1]->shape(), kernels::fp8_scale_shape(160, 256));
    }
  });
}

// The compressed-tensors fixture: q, k and v (one scale each) stack into one FP8 linear with
// per-row scales, as do gate and up (one scale per row), for T = 1 and 2; each rank's fused
// linear gives x · Wᵀ of the dequantized parts it holds.
TEST(Fp8Checkpoint, CompressedTensorsPartsStackIntoOneFp8LinearPerRank) {
  const std::string dir = std::string(CTXPAR_FIXTURES_DIR) + "/tiny-qwen3-fp8-fixture";
  const ModelConfig config = load_model_config(dir + "/config.json");
  ASSERT_TRUE(config.quantization.is_fp8());
  const auto ckpt = Checkpoint::open(dir);
  const std::string p = "model.layers.1.";
  const std::vector<std::pair<std::string, int64_t>> qkv = {{p + "self_attn.q_proj.weight", 96},
                                                            {p + "self_attn.k_proj.weight", 48},
                                                            {p + "self_attn.v_proj.weight", 48}};
  const std::vector<std::pair<std::string, int64_t>> gate_up = {{p + "mlp.gate_proj.weight", 128},
                                                                {p + "mlp.up_proj.weight", 128}};
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor x = Tensor::empty({3, 64}, DType::kF32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  for (int tp : {1, 2}) {
    run_inprocess_ranks(tp, [&](Communicator& world) {
      ParallelGroups groups(world, tp, 1);
      ThreadPool pool(1);
      ModelOptions options;
      const ModelContext ctx{*ckpt, groups, options, pool};
      for (const auto& fused : {qkv, gate_up}) {
        std::vector<LinearPart> parts;
        std::vector<Tensor> dense;
        for (const auto& [name, rows] : fused) {
          const Slice slice = Slice::part(0, world.rank(), tp);
          parts.push_back({name, {rows, 64}, slice, ""});
          dense.push_back(ckpt->get(name, {rows, 64}, DType::kF32, slice));
        }
        const ModelLinear lin = load_model_linear(ctx, parts);
        EXPECT_TRUE(lin.is_fp8()) << parts[0].name << " T=" << tp;
        const Tensor y = lin.forward(x);
        int64_t at = 0;
        for (const Tensor& w : dense) {
          for (int64_t t = 0; t < 3; ++t) {
            for (int64_t o = 0; o < w.size(0); ++o) {
              double want = 0;
              for (int64_t i = 0; i < 64; ++i)
                want += double{x.data<float>()[t * 64 + i]} * w.data<float>()[o * 64 + i];
              EXPECT_NEAR(y.data<float>()[t * y.size(1) + at + o], want,
                          1e-5 * (1 + std::fabs(want)))
                  << parts[0].name << " T=" << tp << " rank " << world.rank() << " row " << at + o;
            }
          }
          at += w.size(0);
        }
      }
    });
  }
}

TEST(Fp8Checkpoint, TensorParallelSizesThatCutABlockAreRefusedWithTheRule) {
  const ModelConfig config = load_model_config(kFp8Fixture + "/config.json");
  const auto ckpt = Checkpoint::open(kFp8Fixture);
  const std::string msg = error_of([&] {
    run_inprocess_ranks(4, [&](Communicator& world) {
      ParallelGroups groups(world, 4, 1);
      ThreadPool pool(1);
      ModelOptions options;
      CausalLM lm(config, ModelContext{*ckpt, groups, options, pool});
    });
  });
  EXPECT_NE(msg.find("FP8 tensor 'model.layers.0."), std::string::npos) << msg;
  EXPECT_NE(msg.find("into 4 parts"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64 columns per part"), std::string::npos) << msg;
  EXPECT_NE(msg.find("part counts that cut on blocks: 1, 2"), std::string::npos) << msg;
}

class Fp8Files : public ::testing::Test {
 protected:
  Fp8Files() : rng_(std::random_device{}()) {}

  Tensor random_f32(const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::kF32);
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng_);
    return t;
  }

  testing::TempDir dir_;
  std::mt19937 rng_;
};

TEST_F(Fp8Files, SlicesComeBackWithTheirBlockScalesOrDequantized) {
  const int64_t out = 256 + 40, in = 384;  // rows end in a partial block
  const kernels::Fp8Weight full = kernels::quantize_fp8(random_f32({out, in}));
  // Scales in their own shard, stored BF16 (exact: they are rounded to bf16 first).
  const Tensor scale_bf16 = full.scale_inv.to(DType::kBF16);
  const kernels::Fp8Weight stored{full.weight, scale_bf16.to(DType::kF32)};
  write_safetensors(dir_.file("a.safetensors"), {{"w.weight", full.weight}});
  write_safetensors(dir_.file("b.safetensors"), {{"w.weight_scale_inv", scale_bf16}});
  write_safetensors_index(dir_.file("model.safetensors.index.json"),
                          {{"w.weight", "a.safetensors"}, {"w.weight_scale_inv", "b.safetensors"}});
  const auto ckpt = Checkpoint::open(dir_.path().string());
  ASSERT_TRUE(ckpt->is_fp8("w.weight"));
  const Tensor dense = kernels::dequantize_fp8(stored);
  // Column parts of 128 (3 of 384): bytes and the matching scale columns.
  for (int64_t r = 0; r < 3; ++r) {
    const kernels::Fp8Weight part = ckpt->get_fp8("w.weight", {out, in}, Slice::part(1, r, 3));
    ASSERT_EQ(part.weight.shape(), (Shape{out, 128}));
    ASSERT_EQ(part.scale_inv.shape(), (Shape{3, 1}));
    const Tensor got = kernels::dequantize_fp8(part);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < 128; ++i) {
        ASSERT_EQ(got.data<float>()[o * 128 + i], dense.data<float>()[o * in + r * 128 + i]);
      }
    }
  }
  // A dense read of any slice dequantizes (here 3 parts of 128 rows... 296 rows do not split
  // in 2, so take columns in 4 parts of 96: not block-aligned, fine for a dense read).
  for (int64_t r = 0; r < 4; ++r) {
    const Tensor got = ckpt->get("w.weight", {out, in}, DType::kF32, Slice::part(1, r, 4));
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < 96; ++i) {
        ASSERT_EQ(got.data<float>()[o * 96 + i], dense.data<float>()[o * in + r * 96 + i]);
      }
    }
  }
  // ...but not as FP8, which would cut scale blocks.
  const std::string msg = error_of([&] {
    ckpt->get_fp8("w.weight", {out, in}, Slice::part(1, 0, 4));
  });
  EXPECT_NE(msg.find("'w.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("96 columns per part"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1, 3"), std::string::npos) << msg;
}

// compressed-tensors / fbgemm_fp8 / AutoFP8 name the scale `<weight>_scale`: one scale ([1]
// or a scalar), one per output row ([out, 1] or [out], here BF16), or 128×128 blocks. Row and
// column parts of any size come back with their rows' scales, as FP8 and dequantized.
TEST_F(Fp8Files, PerTensorPerChannelAndBlockScaleSiblingsReadAsStored) {
  const int64_t out = 150, in = 70;  // not multiples of 128 or of the part counts' blocks
  const kernels::Fp8Weight channel = kernels::quantize_fp8_per_row(random_f32({out, in}));
  const Tensor channel_bf16 = channel.scale_inv.to(DType::kBF16);
  const kernels::Fp8Weight block = kernels::quantize_fp8(random_f32({out, in}));
  Tensor one = Tensor::empty({1}, DType::kF32);
  one.data<float>()[0] = 0.0123f;
  Tensor scalar = Tensor::empty({}, DType::kF32);  // AutoFP8 writes 0-d scales
  scalar.data<float>()[0] = 0.0123f;
  Tensor flat = Tensor::empty({out}, DType::kF32);
  for (int64_t o = 0; o < out; ++o) flat.data<float>()[o] = channel.scale_inv.data<float>()[o];
  write_safetensors(dir_.file("model.safetensors"), {{"c.weight", channel.weight},
                                                     {"c.weight_scale", channel_bf16},
                                                     {"f.weight", channel.weight},
                                                     {"f.weight_scale", flat},
                                                     {"t.weight", channel.weight},
                                                     {"t.weight_scale", one},
                                                     {"s.weight", channel.weight},
                                                     {"s.weight_scale", scalar},
                                                     {"b.weight", block.weight},
                                                     {"b.weight_scale", block.scale_inv}});
  const auto ckpt = Checkpoint::open(dir_.path().string());
  for (const char* name : {"c.weight", "f.weight", "t.weight", "s.weight", "b.weight"}) {
    SCOPED_TRACE(name);
    const std::string n = name;
    ASSERT_TRUE(ckpt->is_fp8(n));
    const bool is_block = n == "b.weight";
    EXPECT_EQ(ckpt->fp8_scaling(n),
              is_block ? kernels::Fp8Scaling::kBlock128 : kernels::Fp8Scaling::kPerRow);
    // What the stored bytes and scales mean, computed here from the written tensors.
    Tensor want = Tensor::empty({out, in}, DType::kF32);
    const auto* q = static_cast<const uint8_t*>((is_block ? block : channel).weight.raw());
    for (int64_t o = 0; o < out; ++o) {
      const float s = n == "t.weight" || n == "s.weight" ? 0.0123f
                      : is_block        ? block.scale_inv.data<float>()[(o / 128) * 1]
                      : n == "c.weight" ? channel_bf16.to(DType::kF32).data<float>()[o]
                                        : flat.data<float>()[o];
      for (int64_t i = 0; i < in; ++i)
        want.data<float>()[o * in + i] = fp8_e4m3::to_f32(q[o * in + i]) * s;
    }
    const kernels::Fp8Weight whole = ckpt->get_fp8(n, {out, in}, Slice::full());
    const Tensor got = kernels::dequantize_fp8(whole);
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
    if (is_block) continue;
    ASSERT_EQ(whole.scale_inv.shape(), (Shape{out, 1}));
    // Three row parts of 50 and two column parts of 35: FP8 with their rows' scales.
    for (int64_t r = 0; r < 3; ++r) {
      const Tensor part =
          kernels::dequantize_fp8(ckpt->get_fp8(n, {out, in}, Slice::part(0, r, 3)));
      const Tensor dense = ckpt->get(n, {out, in}, DType::kF32, Slice::part(0, r, 3));
      for (int64_t i = 0; i < 50 * in; ++i) {
        ASSERT_EQ(part.data<float>()[i], want.data<float>()[r * 50 * in + i]) << r << " " << i;
        ASSERT_EQ(dense.data<float>()[i], want.data<float>()[r * 50 * in + i]) << r << " " << i;
      }
    }
    for (int64_t r = 0; r < 2; ++r) {
      const Tensor part =
          kernels::dequantize_fp8(ckpt->get_fp8(n, {out, in}, Slice::part(1, r, 2)));
      for (int64_t o = 0; o < out; ++o) {
        for (int64_t i = 0; i < 35; ++i) {
          ASSERT_EQ(part.data<float>()[o * 35 + i], want.data<float>()[o * in + r * 35 + i]);
        }
      }
    }
  }
}

TEST_F(Fp8Files, BadScalesAreErrorsNamingTheTensor) {
  const kernels::Fp8Weight w = kernels::quantize_fp8(random_f32({130, 64}));
  write_safetensors(dir_.file("model.safetensors"),
                    {{"x.weight", w.weight},
                     {"x.weight_scale_inv", Tensor::zeros({1, 1}, DType::kF32)},
                     {"y.weight", w.weight}});
  const auto ckpt = Checkpoint::open(dir_.path().string());
  std::string msg = error_of([&] { ckpt->get_fp8("x.weight", {130, 64}, Slice::full()); });
  EXPECT_NE(msg.find("x.weight_scale_inv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[1, 1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 1]"), std::string::npos) << msg;
  msg = error_of([&] { ckpt->get("y.weight", {130, 64}, DType::kF32, Slice::full()); });
  EXPECT_NE(msg.find("y.weight_scale_inv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("y.weight_scale'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("F8_E4M3"), std::string::npos) << msg;
}

TEST_F(Fp8Files, ScaleSiblingsOfNoKnownLayoutAreErrorsNamingTheValidShapes) {
  const kernels::Fp8Weight w = kernels::quantize_fp8_per_row(random_f32({130, 200}));
  write_safetensors(dir_.file("model.safetensors"),
                    {{"x.weight", w.weight},
                     {"x.weight_scale", Tensor::zeros({3}, DType::kF32)},
                     {"z.weight", w.weight},
                     {"z.weight_scale", Tensor::zeros({130, 1}, DType::kI32)}});
  const auto ckpt = Checkpoint::open(dir_.path().string());
  std::string msg = error_of([&] { ckpt->get_fp8("x.weight", {130, 200}, Slice::full()); });
  for (const char* part :
       {"'x.weight_scale'", "[3]", "[2, 2]", "[1] (per tensor)", "[130, 1] (per channel)"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  }
  msg = error_of([&] { ckpt->get("z.weight", {130, 200}, DType::kF32, Slice::full()); });
  EXPECT_NE(msg.find("F32 or BF16"), std::string::npos) << msg;
}

// An e4m3 KV cache's per-tensor scales, under every name vLLM remaps, in any float dtype and
// any one-element shape; ignored unless the cache is e4m3, as in vLLM.
TEST_F(Fp8Files, KvCacheScalesReadUnderEveryNameVllmRemaps) {
  std::uniform_real_distribution<float> u(0.01f, 4.0f);
  const auto value = [&](const Shape& shape, DType dtype, float* stored) {
    Tensor t = Tensor::empty(shape, DType::kF32);
    t.data<float>()[0] = u(rng_);
    Tensor out = t.to(dtype);
    *stored = out.to(DType::kF32).data<float>()[0];  // what the dtype keeps
    return out;
  };
  struct Layout {
    std::string k, v;  // suffixes after "model.layers.<i>.self_attn."; v "" = none stored
  };
  const std::vector<Layout> layouts{{"k_scale", "v_scale"},
                                    {"k_proj.k_scale", "v_proj.v_scale"},
                                    {"qkv_proj.k_scale", "qkv_proj.v_scale"},
                                    {"k_proj.output_scale", "v_proj.output_scale"},
                                    {"kv_scale", ""},
                                    {"k_scale", ""}};
  const std::vector<std::pair<Shape, DType>> forms{
      {{}, DType::kF32}, {{1}, DType::kBF16}, {{1, 1}, DType::kF16}};
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::vector<std::pair<float, float>> want;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const std::string p = fmt::format("model.layers.{}.self_attn.", i);
    float k = 0, v = 0;
    const auto& [kshape, kdtype] = forms[rng_() % forms.size()];
    tensors.emplace_back(p + layouts[i].k, value(kshape, kdtype, &k));
    if (!layouts[i].v.empty()) {
      const auto& [vshape, vdtype] = forms[rng_() % forms.size()];
      tensors.emplace_back(p + layouts[i].v, value(vshape, vdtype, &v));
    } else {
      v = k;  // kv_scale, or a lone k_scale: vLLM scales v with it too
    }
    want.emplace_back(k, v);
  }
  write_safetensors(dir_.file("model.safetensors"), tensors);
  const auto ckpt = Checkpoint::open(dir_.path().string());
  for (size_t i = 0; i < layouts.size(); ++i) {
    SCOPED_TRACE(layouts[i].k);
    const std::string p = fmt::format("model.layers.{}.self_attn", i);
    const KvCacheScales got = read_kv_cache_scales(*ckpt, p, DType::kF8E4M3);
    EXPECT_TRUE(got.from_checkpoint);
    EXPECT_EQ(got.k, want[i].first);
    EXPECT_EQ(got.v, want[i].second);
    for (DType other : {DType::kBF16, DType::kF32}) {
      const KvCacheScales ignored = read_kv_cache_scales(*ckpt, p, other);
      EXPECT_FALSE(ignored.from_checkpoint);
      EXPECT_EQ(ignored.k, 1.0f);
      EXPECT_EQ(ignored.v, 1.0f);
    }
  }
  // A layer without scales, and dummy weights (every name "exists" there), scale by 1.
  const DummyWeights dummy(3);
  for (const WeightSource* w :
       {static_cast<const WeightSource*>(ckpt.get()), static_cast<const WeightSource*>(&dummy)}) {
    const KvCacheScales none = read_kv_cache_scales(*w, "model.layers.9.self_attn", DType::kF8E4M3);
    EXPECT_FALSE(none.from_checkpoint);
    EXPECT_EQ(none.k, 1.0f);
    EXPECT_EQ(none.v, 1.0f);
  }
}

TEST_F(Fp8Files, BadKvCacheScalesAreErrorsNamingTheTensor) {
  const auto scalar = [](float v) {
    Tensor t = Tensor::empty({1}, DType::kF32);
    t.data<float>()[0] = v;
    return t;
  };
  write_safetensors(dir_.file("model.safetensors"),
                    {{"model.layers.0.self_attn.v_scale", scalar(0.5f)},
                     {"model.layers.1.self_attn.k_scale", scalar(0.5f)},
                     {"model.layers.1.self_attn.k_proj.k_scale", scalar(0.5f)},
                     {"model.layers.2.self_attn.k_scale", scalar(-0.5f)},
                     {"model.layers.2.self_attn.v_scale", scalar(0.5f)},
                     {"model.layers.3.self_attn.k_scale", Tensor::zeros({2}, DType::kF32)},
                     {"model.layers.4.self_attn.kv_scale", scalar(0.5f)},
                     {"model.layers.4.self_attn.v_scale", scalar(0.5f)},
                     {"model.layers.5.self_attn.k_scale", scalar(INFINITY)}});
  const auto ckpt = Checkpoint::open(dir_.path().string());
  const auto msg = [&](int layer) {
    return error_of([&] {
      read_kv_cache_scales(*ckpt, fmt::format("model.layers.{}.self_attn", layer), DType::kF8E4M3);
    });
  };
  const std::vector<std::vector<std::string>> want{
      {"'model.layers.0.self_attn.v_scale'", "no k scale"},
      {"'model.layers.1.self_attn.k_scale'", "'model.layers.1.self_attn.k_proj.k_scale'", "twice"},
      {"'model.layers.2.self_attn.k_scale' is -0.5", "positive finite"},
      {"'model.layers.3.self_attn.k_scale'", "[2]", "one value"},
      {"'model.layers.4.self_attn.kv_scale'", "'model.layers.4.self_attn.v_scale'", "one form"},
      {"'model.layers.5.self_attn.k_scale' is inf", "positive finite"}};
  for (int layer = 0; layer < static_cast<int>(want.size()); ++layer) {
    const std::string m = msg(layer);
    for (const std::string& part : want[static_cast<size_t>(layer)])
      EXPECT_NE(m.find(part), std::string::npos) << part << " in: " << m;
  }
  // A bf16 cache never reads them.
  EXPECT_EQ(
      error_of([&] { read_kv_cache_scales(*ckpt, "model.layers.2.self_attn", DType::kBF16); }), "");
}

// A DeepSeek-V3-shaped tiny config whose tensor-parallel cuts fall on 128-row blocks for T = 2:
// q_b rows 4·64, o_proj columns 4·64, intermediates 256; hidden 192 ends in a partial block.
constexpr const char* kAlignedMla = R"json({
  "architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 512, "hidden_size": 192,
  "intermediate_size": 256, "moe_intermediate_size": 256, "num_hidden_layers": 2,
  "num_attention_heads": 4, "q_lora_rank": 128, "kv_lora_rank": 128, "qk_nope_head_dim": 48,
  "qk_rope_head_dim": 16, "v_head_dim": 64, "n_routed_experts": 4, "n_shared_experts": 1,
  "num_experts_per_tok": 2, "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1,
  "norm_topk_prob": true, "routed_scaling_factor": 2.5, "max_position_embeddings": 512,
  "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128],
                          "scale_fmt": "ue8m0"}})json";

// Dummy weights whose linear weights are quantized like an FP8 checkpoint's (the full tensor,
// then sliced), in 128×128 blocks or per row: as FP8 (is_fp8, get_fp8) or, with as_dense, only
// as their dequantized values — the same numbers, so the two models differ only in how the
// linears run.
class QuantizedDummy : public WeightSource {
 public:
  QuantizedDummy(uint64_t seed, bool as_dense,
                 kernels::Fp8Scaling scaling = kernels::Fp8Scaling::kBlock128)
      : dummy_(seed), as_dense_(as_dense), scaling_(scaling) {}
  bool has(const std::string& name) const override { return dummy_.has(name); }
  bool is_fp8(const std::string& name) const override { return !as_dense_ && quantized(name); }
  kernels::Fp8Scaling fp8_scaling(const std::string& /*name*/) const override { return scaling_; }
  Tensor get(const std::string& name, const Shape& full_shape, DType want,
             const Slice& slice) const override {
    if (!quantized(name)) return dummy_.get(name, full_shape, want, slice);
    const Tensor full = kernels::dequantize_fp8(fp8(name, full_shape));
    return copy_slice(full.raw(), DType::kF32, full_shape, slice, want, name);
  }
  kernels::Fp8Weight get_fp8(const std::string& name, const Shape& full_shape,
                             const Slice& slice) const override {
    check_fp8_slice(name, full_shape, slice, scaling_);
    const kernels::Fp8Weight w = fp8(name, full_shape);
    // Row scales go with the rows; a column cut keeps them all.
    const Slice scale_slice =
        scaling_ == kernels::Fp8Scaling::kPerRow && slice.dim == 1 ? Slice::full() : slice;
    return {copy_slice(w.weight.raw(), DType::kF8E4M3, full_shape, slice, DType::kF8E4M3, name),
            copy_slice(w.scale_inv.raw(), DType::kF32, w.scale_inv.shape(), scale_slice,
                       DType::kF32, name),
            scaling_};
  }

 private:
  static bool quantized(const std::string& name) {
    const auto ends = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    return ends("proj.weight") || ends("proj_with_mqa.weight");
  }
  kernels::Fp8Weight fp8(const std::string& name, const Shape& full_shape) const {
    const Tensor w = dummy_.get(name, full_shape, DType::kF32, Slice::full());
    return scaling_ == kernels::Fp8Scaling::kPerRow ? kernels::quantize_fp8_per_row(w)
                                                    : kernels::quantize_fp8(w);
  }
  DummyWeights dummy_;
  bool as_dense_;
  kernels::Fp8Scaling scaling_;
};

// Greedy continuation of `prompt` (prefill, then `steps` decodes) on T in-process ranks with
// N, and the prefill's last logits row.
std::pair<std::vector<int32_t>, std::vector<float>> greedy(
    const ModelConfig& config, const WeightSource& weights, const ModelOptions& options, int tp,
    int dcp, const std::vector<int32_t>& prompt, int steps) {
  std::vector<int32_t> tokens;
  std::vector<float> first_logits;
  run_inprocess_ranks(tp, [&](Communicator& world) {
    ParallelGroups groups(world, tp, dcp);
    ThreadPool pool(2);
    const ModelContext ctx{weights, groups, options, pool};
    CausalLM lm(config, ctx);
    lm.allocate_kv_cache(16);
    const auto builder = make_metadata_builder(config, ctx);
    kv::BlockPool blocks(16);
    kv::BlockTable table(blocks, kv::DcpLayout(dcp, options.block_size, 1));
    std::vector<int32_t> known = prompt;
    int64_t done = 0;
    for (int s = 0; s <= steps; ++s) {
      const int64_t n = static_cast<int64_t>(known.size()) - done;
      EXPECT_TRUE(table.grow(done + n));
      attention::ScheduledRequest r;
      r.num_computed = done;
      r.num_scheduled = n;
      r.block_table.assign(table.ids().begin(), table.ids().end());
      const std::vector<attention::ScheduledRequest> batch{r};
      const auto md = builder->build(batch);
      Tensor ids = Tensor::empty({n}, DType::kI32);
      for (int64_t i = 0; i < n; ++i) ids.data<int32_t>()[i] = known[static_cast<size_t>(done + i)];
      Tensor rows = Tensor::empty({1}, DType::kI64);
      rows.data<int64_t>()[0] = n - 1;
      const Tensor logits = lm.forward(md, ids, rows);
      const float* l = logits.data<float>();
      int32_t best = 0;
      for (int32_t v = 1; v < logits.size(1); ++v) best = l[v] > l[best] ? v : best;
      if (world.rank() == 0 && s == 0) first_logits.assign(l, l + logits.size(1));
      done += n;
      known.push_back(best);
    }
    if (world.rank() == 0)
      tokens.assign(known.begin() + static_cast<int64_t>(prompt.size()), known.end());
  });
  return {tokens, first_logits};
}

std::vector<int32_t> random_prompt(int n) {
  std::mt19937 rng(std::random_device{}());
  std::vector<int32_t> prompt;
  for (int i = 0; i < n; ++i) prompt.push_back(static_cast<int32_t>(rng() % 512));
  return prompt;
}

TEST(Fp8Dummy, QuantizedAtLoadGreedyTokensAgreeForEveryLayout) {
  const ModelConfig config = parse_model_config(kAlignedMla, "aligned-mla");
  const std::vector<int32_t> prompt = random_prompt(13);
  const DummyWeights weights(99);
  ModelOptions fp8;
  fp8.quantize_fp8 = true;
  const auto want = greedy(config, weights, fp8, 1, 1, prompt, 5);
  const auto f32 = greedy(config, weights, ModelOptions{}, 1, 1, prompt, 0);
  EXPECT_NE(want.second, f32.second) << "quantized weights must change the logits";
  for (const auto& [tp, dcp] : std::vector<std::pair<int, int>>{{2, 1}, {2, 2}}) {
    SCOPED_TRACE(fmt::format("T={} N={}", tp, dcp));
    EXPECT_EQ(greedy(config, weights, fp8, tp, dcp, prompt, 5).first, want.first);
  }
}

TEST(Fp8Dummy, Fp8LinearsGiveTheLogitsOfTheDequantizedDenseModel) {
  const ModelConfig config = parse_model_config(kAlignedMla, "aligned-mla");
  const std::vector<int32_t> prompt = random_prompt(9);
  for (const kernels::Fp8Scaling scaling :
       {kernels::Fp8Scaling::kBlock128, kernels::Fp8Scaling::kPerRow}) {
    const QuantizedDummy fp8(5, false, scaling), dense(5, true, scaling);
    for (int tp : {1, 2}) {
      SCOPED_TRACE(fmt::format("T={} {}", tp, kernels::fp8_scaling_name(scaling)));
      const auto a = greedy(config, fp8, ModelOptions{}, tp, 1, prompt, 0).second;
      const auto b = greedy(config, dense, ModelOptions{}, tp, 1, prompt, 0).second;
      double num = 0, den = 0;
      for (size_t v = 0; v < a.size(); ++v) {
        num += (a[v] - b[v]) * (a[v] - b[v]);
        den += b[v] * b[v];
      }
      EXPECT_LE(std::sqrt(num / den), 1e-4);
    }
  }
}

// A Llama-shaped model (GQA: 4 query heads over 1 KV head, so T = 2 can run N = 2).
constexpr const char* kTinyLlama = R"json({
  "architectures": ["LlamaForCausalLM"], "vocab_size": 512, "hidden_size": 64,
  "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 1, "max_position_embeddings": 512, "rms_norm_eps": 1e-5})json";

// Dummy weights as an FP8-KV checkpoint stores them: k_scale and v_scale on every layer
// (`folded` false), or the same model with the scales folded into its weights instead (none
// stored): k_proj / k_scale with q_proj · k_scale keep every score, v_proj / v_scale with
// o_proj · v_scale every output, and its scale-1 cache holds the same e4m3 bytes. Powers of two
// keep the folding exact.
class KvScaledDummy : public WeightSource {
 public:
  KvScaledDummy(float k_scale, float v_scale, bool folded)
      : dummy_(17), k_(k_scale), v_(v_scale), folded_(folded) {}
  bool has(const std::string& name) const override { return dummy_.has(name); }
  std::optional<float> stored_scalar(const std::string& name) const override {
    if (folded_) return std::nullopt;
    if (name.ends_with(".self_attn.k_scale")) return k_;
    if (name.ends_with(".self_attn.v_scale")) return v_;
    return std::nullopt;
  }
  Tensor get(const std::string& name, const Shape& full_shape, DType want,
             const Slice& slice) const override {
    Tensor t = dummy_.get(name, full_shape, DType::kF32, slice);
    const float factor = !folded_                          ? 1.0f
                         : name.ends_with("q_proj.weight") ? k_
                         : name.ends_with("k_proj.weight") ? 1.0f / k_
                         : name.ends_with("v_proj.weight") ? 1.0f / v_
                         : name.ends_with("o_proj.weight") ? v_
                                                           : 1.0f;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= factor;
    return t.to(want);
  }

 private:
  DummyWeights dummy_;
  float k_, v_;
  bool folded_;
};

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t v = 0; v < a.size(); ++v) {
    num += (a[v] - b[v]) * (a[v] - b[v]);
    den += b[v] * b[v];
  }
  return std::sqrt(num / den);
}

// With --kv-cache-dtype fp8, a model whose checkpoint stores k_scale 2^-8 and v_scale 2^6 gives
// the logits and greedy tokens of the same model with those scales folded into its weights
// (which stores the same e4m3 bytes at scale 1), for every (T, N); the scales are far enough
// from 1 (keys ×256 saturate, values /64 go subnormal) that the model without them differs.
TEST(Fp8KvCache, CheckpointScalesActAsScalesFoldedIntoTheWeights) {
  const ModelConfig config = parse_model_config(kTinyLlama, "tiny-llama");
  const std::vector<int32_t> prompt = random_prompt(11);
  const float k_scale = 1.0f / 256, v_scale = 64.0f;
  const KvScaledDummy stored(k_scale, v_scale, false), folded(k_scale, v_scale, true);
  const KvScaledDummy unscaled(1.0f, 1.0f, false);
  ModelOptions fp8_kv;
  fp8_kv.kv_cache_dtype = DType::kF8E4M3;
  const auto want = greedy(config, folded, fp8_kv, 1, 1, prompt, 5);
  EXPECT_GE(
      relative_difference(greedy(config, unscaled, fp8_kv, 1, 1, prompt, 0).second, want.second),
      1e-2)
      << "the scales must matter here";
  for (const auto& [tp, dcp] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {2, 2}}) {
    SCOPED_TRACE(fmt::format("T={} N={}", tp, dcp));
    const auto got = greedy(config, stored, fp8_kv, tp, dcp, prompt, 5);
    EXPECT_LE(relative_difference(got.second, want.second), 1e-5);
    EXPECT_EQ(got.first, want.first);
  }
}

// ctxpar's e4m3 latent cache has no scales yet: an MLA checkpoint that stores them is refused
// with an e4m3 cache, naming the layer and the cache dtypes that run it; a bf16 cache ignores
// them, as vLLM does.
TEST(Fp8KvCache, MlaCheckpointScalesAreRefusedWithAnE4m3CacheOnly) {
  const ModelConfig config = parse_model_config(kAlignedMla, "aligned-mla");
  const KvScaledDummy stored(0.5f, 0.25f, false);
  const auto build = [&](DType kv_dtype) {
    return error_of([&] {
      run_inprocess_ranks(1, [&](Communicator& world) {
        ParallelGroups groups(world, 1, 1);
        ThreadPool pool(1);
        ModelOptions options;
        options.kv_cache_dtype = kv_dtype;
        CausalLM lm(config, ModelContext{stored, groups, options, pool});
      });
    });
  };
  const std::string msg = build(DType::kF8E4M3);
  for (const char* part : {"MLA layer 'model.layers.0.self_attn'", "k 0.5, v 0.25",
                           "--kv-cache-dtype auto or bfloat16"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  EXPECT_EQ(build(DType::kBF16), "");
}

}  // namespace
}  // namespace ctxpar::model
