// A damaged checkpoint fails while the model loads — before any forward pass — with an error
// naming the file or tensor and the numbers.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <filesystem>
#include <random>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/error.h"
#include "ctxpar/model/causal_lm.h"
#include "ctxpar/model/checkpoint.h"
#include "ctxpar/model/safetensors.h"

namespace ctxpar::model {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(CTXPAR_FIXTURES_DIR) + "/tiny-deepseek-v3-fixture";

// A copy of the fixture whose weights pass through `edit` (name, tensor) → keep?
std::string damaged_copy(const std::function<bool(const std::string&, Tensor&)>& edit) {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("ctxpar-bad-ckpt-{}", std::random_device{}());
  fs::create_directories(dir);
  fs::copy_file(kFixture + "/config.json", dir / "config.json");
  const SafetensorsFile original(kFixture + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& info : original.tensors()) {
    Tensor t = original.read(info.name, info.shape, info.dtype, Slice::full());
    if (edit(info.name, t)) tensors.emplace_back(info.name, t);
  }
  write_safetensors((dir / "model.safetensors").string(), tensors);
  return dir.string();
}

std::string load_error(const std::string& dir, int tp) {
  std::string message;
  try {
    run_inprocess_ranks(tp, [&](Communicator& world) {
      ParallelGroups groups(world, tp, 1);
      ThreadPool pool(1);
      ModelOptions options;
      const auto checkpoint = Checkpoint::open(dir);
      const ModelContext ctx{*checkpoint, groups, options, pool};
      CausalLM lm(load_model_config(dir + "/config.json"), ctx);
    });
  } catch (const Error& e) {
    message = e.what();
  }
  return message;
}

TEST(BadCheckpoint, MissingTensorIsNamed) {
  const std::string gone = "model.layers.2.mlp.experts.5.down_proj.weight";
  const std::string dir = damaged_copy([&](const std::string& n, Tensor&) { return n != gone; });
  const std::string err = load_error(dir, 2);
  EXPECT_NE(err.find(gone), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(BadCheckpoint, WrongShapeNamesTensorAndShapes) {
  const std::string bad = "model.layers.0.self_attn.kv_b_proj.weight";
  const std::string dir = damaged_copy([&](const std::string& n, Tensor& t) {
    if (n == bad) t = t.slice(0, 0, t.size(0) - 1).contiguous();  // one row short
    return true;
  });
  const std::string err = load_error(dir, 1);
  EXPECT_NE(err.find(bad), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(BadCheckpoint, MissingConfigOrWeightsNameThePath) {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("ctxpar-empty-{}", std::random_device{}());
  fs::create_directories(dir);
  EXPECT_THROW(load_model_config((dir / "config.json").string()), Error);
  EXPECT_THROW(Checkpoint::open(dir.string()), Error);
  fs::remove_all(dir);
}

TEST(BadCheckpoint, IndivisibleHeadsFailBeforeAnyWeightIsRead) {
  // 4 heads over 3 ranks: the config check runs before the weight source is touched.
  const ModelConfig config = load_model_config(kFixture + "/config.json");
  std::string message;
  run_inprocess_ranks(3, [&](Communicator& world) {
    ParallelGroups groups(world, 3, 1);
    ThreadPool pool(1);
    ModelOptions options;
    struct NoWeights : WeightSource {
      bool has(const std::string&) const override { return false; }
      Tensor get(const std::string& name, const Shape&, DType, const Slice&) const override {
        CTXPAR_FAIL("weight {} was read before the config was validated", name);
      }
    } none;
    const ModelContext ctx{none, groups, options, pool};
    try {
      CausalLM lm(config, ctx);
    } catch (const Error& e) {
      if (world.rank() == 0) message = e.what();
    }
  });
  EXPECT_NE(message.find("3"), std::string::npos) << message;
  EXPECT_EQ(message.find("was read before"), std::string::npos) << message;
}

}  // namespace
}  // namespace ctxpar::model
