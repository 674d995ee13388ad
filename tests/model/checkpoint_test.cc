#include "ctxpar/model/checkpoint.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using testing::error_of;
using testing::random_tensor;
using testing::same_bytes;
using testing::uniform_int;

// A small random "model": names like an HF Llama, odd sizes, bf16 and f32 mixed.
std::vector<std::pair<std::string, Tensor>> random_model(std::mt19937_64& rng) {
  const int64_t hidden = 6 * uniform_int(rng, 1, 5), inter = 6 * uniform_int(rng, 1, 7);
  const int64_t vocab = uniform_int(rng, 7, 40);
  std::vector<std::pair<std::string, Tensor>> t;
  t.emplace_back("model.embed_tokens.weight", random_tensor({vocab, hidden}, DType::kBF16, rng));
  const int64_t layers = uniform_int(rng, 1, 3);
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.emplace_back(p + "input_layernorm.weight", random_tensor({hidden}, DType::kF32, rng));
    t.emplace_back(p + "self_attn.q_proj.weight",
                   random_tensor({hidden, hidden}, DType::kBF16, rng));
    t.emplace_back(p + "self_attn.q_proj.bias", random_tensor({hidden}, DType::kBF16, rng));
    t.emplace_back(p + "mlp.gate_proj.weight", random_tensor({inter, hidden}, DType::kBF16, rng));
    t.emplace_back(p + "mlp.down_proj.weight", random_tensor({hidden, inter}, DType::kF16, rng));
  }
  t.emplace_back("lm_head.weight", random_tensor({vocab, hidden}, DType::kF32, rng));
  return t;
}

// Writes the model as `shards` files plus an index, assigning tensors to shards at random.
void write_sharded(const testing::TempDir& dir,
                   const std::vector<std::pair<std::string, Tensor>>& model, int shards,
                   std::mt19937_64& rng) {
  std::vector<std::vector<std::pair<std::string, Tensor>>> parts(static_cast<size_t>(shards));
  std::map<std::string, std::string> weight_map;
  for (const auto& entry : model) {
    const auto s = static_cast<size_t>(rng() % static_cast<uint64_t>(shards));
    parts[s].push_back(entry);
    weight_map[entry.first] =
        "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
  }
  for (int s = 0; s < shards; ++s) {
    write_safetensors(dir.file("model-0000" + std::to_string(s + 1) + "-of-0000" +
                               std::to_string(shards) + ".safetensors"),
                      parts[static_cast<size_t>(s)]);
  }
  write_safetensors_index(dir.file("model.safetensors.index.json"), weight_map);
}

void expect_serves(const Checkpoint& ckpt,
                   const std::vector<std::pair<std::string, Tensor>>& model) {
  EXPECT_EQ(ckpt.tensor_names().size(), model.size());
  for (const auto& [name, t] : model) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(ckpt.has(name));
    EXPECT_EQ(ckpt.info(name).shape, t.shape());
    EXPECT_TRUE(same_bytes(ckpt.get(name, t.shape(), t.dtype(), Slice::full()), t));
    EXPECT_TRUE(
        same_bytes(ckpt.get(name, t.shape(), DType::kF32, Slice::full()), t.to(DType::kF32)));
  }
  EXPECT_FALSE(ckpt.has("model.norm.weight"));
}

TEST(Checkpoint, ShardedIndexServesEveryTensor) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const auto model = random_model(rng);
  const int shards = static_cast<int>(uniform_int(rng, 2, 5));
  write_sharded(dir, model, shards, rng);
  const auto by_dir = Checkpoint::open(dir.path().string());
  expect_serves(*by_dir, model);
  EXPECT_LE(by_dir->file_paths().size(), static_cast<size_t>(shards));  // empty shards unnamed
  const auto by_index = Checkpoint::open(dir.file("model.safetensors.index.json"));
  expect_serves(*by_index, model);
}

TEST(Checkpoint, SingleFileByDirectoryOrPath) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const auto model = random_model(rng);
  write_safetensors(dir.file("model.safetensors"), model);
  expect_serves(*Checkpoint::open(dir.path().string()), model);
  expect_serves(*Checkpoint::open(dir.file("model.safetensors")), model);
}

// Bytes of `path` this process has resident through its mappings (/proc/self/smaps Rss).
int64_t mapped_resident_bytes(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  EXPECT_TRUE(smaps.good()) << "cannot read /proc/self/smaps";
  int64_t kib = 0;
  bool in_file = false;
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first == "Rss:") {
      int64_t n = 0;
      fields >> n;
      if (in_file) kib += n;
    } else if (first.find('-') != std::string::npos && first.back() != ':') {
      // A mapping's header: range, perms, offset, device, inode, then the path if any.
      std::string perms, offset, dev, inode, mapped;
      fields >> perms >> offset >> dev >> inode;
      std::getline(fields >> std::ws, mapped);
      in_file = mapped == path;
    }
  }
  return kib * 1024;
}

// Once a model has copied its weights out, the engine releases the checkpoint's pages: they
// leave the process's RSS (they were a second copy of the model), and the checkpoint still
// serves every tensor, reading the pages again.
TEST(Checkpoint, ReleasedPagesLeaveTheRssAndReadAgain) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  // Several MiB, so that resident pages are far from zero whatever the page size.
  const int64_t rows = uniform_int(rng, 1500, 2500), cols = uniform_int(rng, 1000, 1500);
  std::vector<std::pair<std::string, Tensor>> model = random_model(rng);
  model.emplace_back("model.big.weight", random_tensor({rows, cols}, DType::kBF16, rng));
  const std::string file = dir.file("model.safetensors");
  write_safetensors(file, model);
  const auto ckpt = Checkpoint::open(file);
  const std::string mapped = std::filesystem::canonical(file).string();
  expect_serves(*ckpt, model);
  const int64_t big = rows * cols * 2;
  EXPECT_GE(mapped_resident_bytes(mapped), big) << mapped;
  ckpt->release_pages();
  EXPECT_EQ(mapped_resident_bytes(mapped), 0) << mapped;
  expect_serves(*ckpt, model);
  EXPECT_GE(mapped_resident_bytes(mapped), big) << mapped;
}

TEST(Checkpoint, TensorParallelSlicesReassembleTheFullWeights) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const auto model = random_model(rng);
  write_sharded(dir, model, 3, rng);
  const auto ckpt = Checkpoint::open(dir.path().string());
  for (int64_t tp : {1, 2, 3, 6}) {  // hidden and intermediate are multiples of 6
    SCOPED_TRACE(::testing::Message() << "T=" << tp);
    for (const auto& [name, t] : model) {
      if (t.ndim() != 2) continue;
      const bool embedding =
          name.find("embed") != std::string::npos || name.find("lm_head") != std::string::npos;
      const bool row_parallel = name.find("down_proj") != std::string::npos;
      std::vector<Tensor> parts;
      for (int64_t r = 0; r < tp; ++r) {
        const Slice s = embedding      ? Slice::vocab_parallel(r, tp)
                        : row_parallel ? Slice::row_parallel(r, tp)
                                       : Slice::column_parallel(r, tp);
        parts.push_back(ckpt->get(name, t.shape(), DType::kF32, s));
      }
      const int dim = row_parallel ? 1 : 0;
      const int64_t per_rank = parts[0].size(dim);
      for (int64_t r = 0; r < tp; ++r) {
        const int64_t begin = r * per_rank;
        const int64_t valid = std::max<int64_t>(0, std::min(per_rank, t.size(dim) - begin));
        const Tensor full = t.to(DType::kF32);
        if (valid > 0) {
          EXPECT_TRUE(same_bytes(parts[r].slice(dim, 0, valid).contiguous(),
                                 full.slice(dim, begin, begin + valid).contiguous()))
              << name << " rank " << r;
        }
        for (int64_t row = valid; row < per_rank; ++row) {  // vocab padding
          for (int64_t c = 0; c < parts[r].size(1); ++c)
            EXPECT_EQ(parts[r].item_as_double({row, c}), 0.0) << name << " rank " << r;
        }
      }
      EXPECT_GE(per_rank * tp, t.size(dim));
    }
  }
}

TEST(Checkpoint, ErrorsNameThePathAndTheTensor) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const auto model = random_model(rng);
  write_sharded(dir, model, 2, rng);
  const auto ckpt = Checkpoint::open(dir.path().string());

  std::string msg =
      error_of([&] { ckpt->get("model.norm.weight", {4}, DType::kF32, Slice::full()); });
  EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
  for (const std::string& f : ckpt->file_paths()) EXPECT_NE(msg.find(f), std::string::npos) << msg;

  const auto& [name, t] = model.front();
  Shape wrong = t.shape();
  wrong[0] += 1;
  msg = error_of([&] { ckpt->get(name, wrong, DType::kF32, Slice::full()); });
  EXPECT_NE(msg.find(name), std::string::npos) << msg;
  EXPECT_NE(msg.find(shape_str(wrong)), std::string::npos) << msg;

  testing::TempDir empty;
  msg = error_of([&] { Checkpoint::open(empty.path().string()); });
  EXPECT_NE(msg.find(empty.path().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  msg = error_of([&] { Checkpoint::open(empty.file("missing")); });
  EXPECT_NE(msg.find(empty.file("missing")), std::string::npos) << msg;
}

TEST(Checkpoint, RejectsIndexesThatDisagreeWithTheirShards) {
  CTXPAR_SEEDED_RNG(rng);
  const auto model = random_model(rng);
  const std::string name = model.front().first;
  auto index_with = [&](const testing::TempDir& dir, const nlohmann::json& weight_map) {
    testing::write_text(dir.file("model.safetensors.index.json"),
                        nlohmann::json{{"weight_map", weight_map}}.dump());
  };
  {
    testing::TempDir dir;  // a shard that does not exist
    write_safetensors(dir.file("a.safetensors"), model);
    index_with(dir, {{name, "b.safetensors"}});
    const std::string msg = error_of([&] { Checkpoint::open(dir.path().string()); });
    EXPECT_NE(msg.find("b.safetensors"), std::string::npos) << msg;
  }
  {
    testing::TempDir dir;  // a tensor the named shard does not hold
    write_safetensors(dir.file("a.safetensors"), model);
    index_with(dir, {{"model.extra.weight", "a.safetensors"}});
    const std::string msg = error_of([&] { Checkpoint::open(dir.path().string()); });
    EXPECT_NE(msg.find("model.extra.weight"), std::string::npos) << msg;
  }
  {
    testing::TempDir dir;  // one tensor in two shards
    write_safetensors(dir.file("a.safetensors"), {model[0], model[1]});
    write_safetensors(dir.file("b.safetensors"), {model[0]});
    index_with(dir, {{model[0].first, "a.safetensors"}, {model[1].first, "b.safetensors"}});
    const std::string msg = error_of([&] { Checkpoint::open(dir.path().string()); });
    EXPECT_NE(msg.find(model[0].first), std::string::npos) << msg;
  }
  {
    testing::TempDir dir;  // shard names that leave the checkpoint folder; malformed indexes
    write_safetensors(dir.file("a.safetensors"), model);
    index_with(dir, {{name, "../a.safetensors"}});
    EXPECT_THROW(Checkpoint::open(dir.path().string()), Error);
    index_with(dir, {{name, "/etc/passwd"}});
    EXPECT_THROW(Checkpoint::open(dir.path().string()), Error);
    index_with(dir, {{name, 7}});
    EXPECT_THROW(Checkpoint::open(dir.path().string()), Error);
    index_with(dir, nlohmann::json::object());
    EXPECT_THROW(Checkpoint::open(dir.path().string()), Error);
    testing::write_text(dir.file("model.safetensors.index.json"), "{\"weight_map\": [");
    EXPECT_THROW(Checkpoint::open(dir.path().string()), Error);
    testing::write_text(dir.file("model.safetensors.index.json"), "[]");
    EXPECT_THROW(Checkpoint::open(dir.path().string()), Error);
  }
}

}  // namespace
}  // namespace ctxpar::model
