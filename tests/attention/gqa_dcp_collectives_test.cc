// GQA-DCP issues its context collectives (q all-gather, LSE all-gather, reduce-scatter) only
// on steps where some token has cached context: a step of first prefills answers from the
// new keys alone, on every rank of the group alike.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <vector>

#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/attention/context_parallel/gqa_dcp_attention.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/thread_pool.h"
#include "support/seeded_rng.h"

namespace ctxpar::attention {
namespace {

// Forwards to another communicator and counts the collectives called through it.
class CountingCommunicator : public Communicator {
 public:
  CountingCommunicator(Communicator& inner, std::atomic<int>& calls)
      : inner_(inner), calls_(calls) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend_name() const override { return inner_.backend_name(); }
  void all_gather(const Tensor& in, Tensor& out, int dim) override {
    ++calls_;
    inner_.all_gather(in, out, dim);
  }
  void all_to_all(const Tensor& in, Tensor& out, int dim) override {
    ++calls_;
    inner_.all_to_all(in, out, dim);
  }
  void reduce_scatter(const Tensor& in, Tensor& out, int dim) override {
    ++calls_;
    inner_.reduce_scatter(in, out, dim);
  }
  void all_reduce(Tensor& t) override {
    ++calls_;
    inner_.all_reduce(t);
  }
  void broadcast(Tensor& t, int root) override {
    ++calls_;
    inner_.broadcast(t, root);
  }
  void broadcast_bytes(std::vector<uint8_t>& b, int root) override {
    ++calls_;
    inner_.broadcast_bytes(b, root);
  }
  void barrier() override {
    ++calls_;
    inner_.barrier();
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return inner_.split(color, key);
  }

 private:
  Communicator& inner_;
  std::atomic<int>& calls_;
};

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = g(rng);
  return t;
}

TEST(GqaDcpCollectives, FirstPrefillsSkipThemAndAStepWithContextDoesThem) {
  SEEDED_RNG(rng);
  for (int n : {2, 3}) {
    const int64_t block = 4, d = 8 * (1 + static_cast<int64_t>(rng() % 2));
    const int64_t heads = 1 + static_cast<int64_t>(rng() % 3);  // query heads per rank
    const int64_t prompt = 1 + static_cast<int64_t>(rng() % 11);
    const uint32_t data_seed = static_cast<uint32_t>(rng());
    SCOPED_TRACE(::testing::Message()
                 << "N " << n << " d " << d << " heads " << heads << " prompt " << prompt);
    const kv::DcpLayout layout(n, block, 1);
    const int64_t blocks = layout.num_virtual_blocks(prompt + 1);
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
    std::vector<int> prefill_calls(n), decode_calls(n);
    run_inprocess_ranks(n, [&](Communicator& world) {
      std::atomic<int> calls{0};
      CountingCommunicator group(world, calls);
      ThreadPool pool(1);
      const GqaDims dims{heads, 1, d, 0.3f};
      GqaDcpAttention attn(dims, Tensor::zeros({blocks, block, 1, d}, DType::kF32),
                           Tensor::zeros({blocks, block, 1, d}, DType::kF32), pool, group,
                           DcpCommPlan::kAllGatherReduceScatter);
      const DcpMetadataBuilder builder(layout, world.rank());
      // New keys are the same on every rank; queries are the rank's own heads.
      const uint32_t rank_seed = data_seed + 1 + static_cast<uint32_t>(world.rank());
      std::vector<ScheduledRequest> batch(1);
      batch[0].num_computed = 0;
      batch[0].num_scheduled = prompt;
      batch[0].block_table = table;
      Tensor out = Tensor::empty({prompt, heads, d}, DType::kF32);
      attn.forward(builder.build(batch), random_tensor({prompt, heads, d}, rank_seed),
                   random_tensor({prompt, 1, d}, data_seed),
                   random_tensor({prompt, 1, d}, ~data_seed), out);
      prefill_calls[static_cast<size_t>(world.rank())] = calls.exchange(0);

      batch[0].num_computed = prompt;
      batch[0].num_scheduled = 1;
      Tensor out1 = Tensor::empty({1, heads, d}, DType::kF32);
      attn.forward(builder.build(batch), random_tensor({1, heads, d}, rank_seed + 7),
                   random_tensor({1, 1, d}, data_seed + 7), random_tensor({1, 1, d}, data_seed + 8),
                   out1);
      decode_calls[static_cast<size_t>(world.rank())] = calls.load();
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(prefill_calls[static_cast<size_t>(r)], 0) << "rank " << r;
      // q all-gather, LSE all-gather, reduce-scatter.
      EXPECT_EQ(decode_calls[static_cast<size_t>(r)], 3) << "rank " << r;
    }
  }
}

}  // namespace
}  // namespace ctxpar::attention
