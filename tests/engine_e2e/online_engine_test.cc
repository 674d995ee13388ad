// The online engine on real (built-in, dummy-weight) models: requests added and aborted from
// several threads at random moments give the tokens of one batch run; plan deltas rebuild the
// same block tables on every rank; a failing step or load ends every request with an error and
// returns; shutdown drains or aborts.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/error.h"
#include "ctxpar/engine/llm_engine.h"
#include "ctxpar/engine/online_engine.h"
#include "ctxpar/engine/request_block_tables.h"
#include "ctxpar/engine/scheduler.h"
#include "ctxpar/engine/step_plan.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

EngineConfig small_config(int tp, int dcp) {
  EngineConfig c;
  c.model = "builtin:tiny-llama";
  c.tensor_parallel_size = tp;
  c.decode_context_parallel_size = dcp;
  c.block_size = 4;
  c.max_model_len = 96;
  c.max_num_batched_tokens = 32;
  c.max_num_seqs = 6;
  c.dtype = "float32";
  c.kv_cache_memory = int64_t{4} << 20;
  c.threads_per_rank = 1;
  return c;
}

std::vector<GenerationRequest> random_requests(std::mt19937_64& rng, int n) {
  std::vector<GenerationRequest> out;
  for (int i = 0; i < n; ++i) {
    GenerationRequest r;
    r.id = fmt::format("req-{}", i);
    const int64_t len = uniform(rng, 1, 50);
    for (int64_t t = 0; t < len; ++t) r.prompt_token_ids.push_back(int32_t(uniform(rng, 0, 255)));
    r.params.temperature = 0;
    r.params.max_tokens = uniform(rng, 1, 12);
    r.params.ignore_eos = true;
    out.push_back(std::move(r));
  }
  return out;
}

// Collects one request's outputs, checking their order and counts as they arrive.
struct Collected {
  std::vector<int32_t> tokens;
  std::optional<FinishReason> reason;
  int64_t outputs = 0;
  bool out_of_order = false;
  // RequestOutput::first_scheduled: set once tokens come, between the add and the output, and
  // the same on every output.
  std::optional<Clock::time_point> scheduled;
  bool bad_schedule_time = false;
};

TEST(OnlineEngine, AddAndAbortFromManyThreadsGiveTheBatchTokens) {
  SEEDED_RNG(rng);
  const EngineConfig config = small_config(4, 2);
  const std::vector<GenerationRequest> requests = random_requests(rng, 24);
  const GenerationResult batch = generate(config, requests);
  ASSERT_EQ(batch.outputs.size(), requests.size());

  // About a third are aborted, after a random number of their own outputs or at once.
  std::vector<int64_t> abort_after(requests.size(), -1);
  for (auto& a : abort_after) {
    if (uniform(rng, 0, 2) == 0) a = uniform(rng, 0, 4);
  }
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, Collected> got;
  int64_t finished = 0;
  EngineSnapshot idle;
  run_online_engine(config, [&](OnlineEngine& engine) {
    std::vector<std::thread> clients;
    const int num_clients = 4;
    std::vector<uint64_t> seeds;
    for (int c = 0; c < num_clients; ++c) seeds.push_back(rng());
    for (int c = 0; c < num_clients; ++c) {
      clients.emplace_back([&, c] {
        std::mt19937_64 local(seeds[size_t(c)]);
        for (size_t i = size_t(c); i < requests.size(); i += num_clients) {
          std::this_thread::sleep_for(std::chrono::microseconds(uniform(local, 0, 3000)));
          const GenerationRequest& g = requests[i];
          const std::string id = g.id;
          const int64_t limit = abort_after[i];
          const Clock::time_point added = Clock::now();
          engine.add_request(
              EngineRequest{.id = id, .prompt_token_ids = g.prompt_token_ids, .params = g.params},
              [&, id, limit, added](RequestOutput o) {
                std::lock_guard lock(mu);
                Collected& col = got[id];
                const std::optional<Clock::time_point> at = o.first_scheduled;
                col.bad_schedule_time = col.bad_schedule_time || (!o.token_ids.empty() && !at) ||
                                        (at && (*at < added || *at > Clock::now() ||
                                                (col.scheduled && col.scheduled != at)));
                if (at) col.scheduled = at;
                col.out_of_order = col.out_of_order || col.reason.has_value() ||
                                   o.num_output_tokens !=
                                       static_cast<int64_t>(col.tokens.size() + o.token_ids.size());
                col.tokens.insert(col.tokens.end(), o.token_ids.begin(), o.token_ids.end());
                ++col.outputs;
                if (o.finished()) {
                  col.reason = o.finish_reason;
                  ++finished;
                  cv.notify_all();
                } else if (limit >= 0 && col.outputs == limit) {
                  engine.abort(id);  // from the consumer, on the engine thread
                }
              });
          if (limit == 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(uniform(local, 0, 2000)));
            engine.abort(id);  // from this client thread, at a random moment
          }
        }
      });
    }
    for (auto& t : clients) t.join();
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120),
                            [&] { return finished == static_cast<int64_t>(requests.size()); }));
    lock.unlock();
    // The consumers ran after the step: the engine publishes its idle state right after.
    for (int i = 0; i < 1000 && engine.snapshot().num_used_blocks > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    idle = engine.snapshot();
  });

  EXPECT_EQ(idle.num_running, 0);
  EXPECT_EQ(idle.num_waiting, 0);
  EXPECT_EQ(idle.num_used_blocks, 0) << "blocks leaked";
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(requests[i].id);
    const Collected& c = got[requests[i].id];
    const std::vector<int32_t>& want = batch.outputs[i].output_token_ids;
    ASSERT_TRUE(c.reason.has_value());
    EXPECT_FALSE(c.out_of_order);
    EXPECT_FALSE(c.bad_schedule_time);
    EXPECT_TRUE(c.scheduled.has_value() || c.tokens.empty());
    if (*c.reason == FinishReason::kAbort) {
      ASSERT_LE(c.tokens.size(), want.size());
      EXPECT_TRUE(std::equal(c.tokens.begin(), c.tokens.end(), want.begin())) << "not a prefix";
      continue;
    }
    EXPECT_EQ(*c.reason, FinishReason::kLength);
    EXPECT_EQ(c.tokens, want);
    // An abort that came after the last output changes nothing.
    EXPECT_TRUE(abort_after[i] < 0 || abort_after[i] >= static_cast<int64_t>(c.outputs) ||
                abort_after[i] == 0)
        << "aborted after " << abort_after[i] << " outputs but finished normally";
  }
}

TEST(OnlineEngine, PlanDeltasRebuildTheSameTablesOnEveryRank) {
  SEEDED_RNG(rng);
  const int world_size = 4;
  SchedulerConfig config;
  config.layout = kv::DcpLayout(2, static_cast<int>(uniform(rng, 1, 4)), 1);
  config.max_num_seqs = 6;
  config.max_num_batched_tokens = 24;
  config.max_model_len = 80;
  const int32_t num_blocks = static_cast<int32_t>(uniform(rng, 24, 60));
  const uint64_t workload_seed = rng();
  std::atomic<int64_t> checked{0};
  run_inprocess_ranks(world_size, [&](Communicator& world) {
    RequestBlockTables tables(config.layout.tokens_per_virtual_block());
    std::unique_ptr<Scheduler> scheduler;
    StepPlanBuilder plans;
    std::mt19937_64 local(workload_seed);
    if (world.rank() == 0) scheduler = std::make_unique<Scheduler>(config, num_blocks);
    int next_id = 0;
    for (int step = 0; step < 120; ++step) {
      std::vector<uint8_t> bytes;
      SchedulerOutput out;
      if (world.rank() == 0) {
        while (uniform(local, 0, 2) == 0) {
          std::vector<int32_t> prompt(size_t(uniform(local, 1, 60)), 7);
          SamplingParams p;
          p.max_tokens = uniform(local, 1, 20);
          scheduler->add_request(std::to_string(next_id++), prompt, p);
          if (uniform(local, 0, 9) == 0)
            scheduler->abort(std::to_string(uniform(local, 0, next_id - 1)));
        }
        out = scheduler->schedule();
        bytes = plans.build(out).encode();
      }
      world.broadcast_bytes(bytes, 0);
      const StepPlan plan = StepPlan::decode(bytes);
      const std::vector<attention::ScheduledRequest> batch = tables.apply(plan);
      // Every rank's tables, as one checksum per entry, gathered on every rank.
      Tensor mine = Tensor::empty({static_cast<int64_t>(batch.size()) + 1}, DType::kI64);
      int64_t* sums = mine.data<int64_t>();
      sums[0] = static_cast<int64_t>(tables.num_requests());
      for (size_t i = 0; i < batch.size(); ++i) {
        uint64_t h = 1469598103934665603ull;  // FNV-1a over the table
        for (const int32_t b : batch[i].block_table) {
          h = (h ^ static_cast<uint32_t>(b)) * 1099511628211ull;
        }
        sums[i + 1] = static_cast<int64_t>(h);
      }
      const Tensor all = world.all_gather(mine, 0);
      for (int r = 1; r < world_size; ++r) {
        for (int64_t i = 0; i < mine.size(0); ++i) {
          EXPECT_EQ(all.data<int64_t>()[r * mine.size(0) + i], sums[i])
              << "rank " << r << " entry " << i << " step " << step;
        }
      }
      if (world.rank() != 0) continue;
      // Rank 0's tables are the scheduler's.
      for (size_t i = 0; i < batch.size(); ++i) {
        const auto want = scheduler->find(out.entries[i].request_id)->block_table().ids();
        EXPECT_EQ(batch[i].block_table, std::vector<int32_t>(want.begin(), want.end()));
        ++checked;
      }
      scheduler->update(out, std::vector<int32_t>(out.entries.size(), 3));
      for (const auto& r : scheduler->take_finished()) plans.finished(r->id());
    }
  });
  EXPECT_GT(checked.load(), 100);
}

TEST(OnlineEngine, AFailingStepEndsEveryRequestWithAnErrorAndReturns) {
  SEEDED_RNG(rng);
  const std::vector<GenerationRequest> requests = random_requests(rng, 6);
  OnlineEngineOptions options;
  std::atomic<int> steps{0};
  const int fail_at = static_cast<int>(uniform(rng, 1, 4));
  options.on_step = [&](const StepReport&) {
    if (++steps == fail_at) CTXPAR_FAIL("injected failure at step {}", fail_at);
  };
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, RequestOutput> last;
  std::string add_after_failure;
  OnlineEngine::State state_after = OnlineEngine::State::kRunning;
  std::string message;
  try {
    run_online_engine(
        small_config(4, 2),
        [&](OnlineEngine& engine) {
          for (const GenerationRequest& g : requests) {
            GenerationRequest long_one = g;
            long_one.params.max_tokens = 40;  // still running when the step fails
            engine.add_request(
                EngineRequest{
                    .id = g.id, .prompt_token_ids = g.prompt_token_ids, .params = long_one.params},
                [&, id = g.id](RequestOutput o) {
                  std::lock_guard lock(mu);
                  if (o.finished()) last[id] = std::move(o);
                  cv.notify_all();
                });
          }
          std::unique_lock lock(mu);
          ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60),
                                  [&] { return last.size() == requests.size(); }));
          lock.unlock();
          state_after = engine.state();
          try {
            engine.add_request(EngineRequest{.id = "late", .prompt_token_ids = {1, 2}},
                               [](RequestOutput) {});
          } catch (const Error& e) {
            add_after_failure = e.what();
          }
        },
        options);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("injected failure"), std::string::npos) << message;
  EXPECT_EQ(state_after, OnlineEngine::State::kFailed);
  EXPECT_NE(add_after_failure.find("injected failure"), std::string::npos) << add_after_failure;
  ASSERT_EQ(last.size(), requests.size());
  for (const auto& [id, o] : last) {
    EXPECT_EQ(o.finish_reason, FinishReason::kError) << id;
    EXPECT_NE(o.finish_message.find("injected failure"), std::string::npos) << id;
  }
}

TEST(OnlineEngine, ALoadFailureEndsQueuedRequestsAndIsRethrown) {
  EngineConfig config = small_config(2, 1);
  config.kv_cache_memory = 4096;  // not one max_model_len request
  bool loaded = true;
  std::optional<FinishReason> reason;
  std::string finish_message;
  std::string refused;  // add_request's error when the load had already failed
  std::string message;  // what run_online_engine rethrew
  try {
    run_online_engine(config, [&](OnlineEngine& engine) {
      std::mutex mu;
      std::condition_variable cv;
      // The load runs beside this thread and may fail before the request arrives: then
      // add_request must refuse it with the load's error instead of queueing it.
      try {
        engine.add_request(EngineRequest{.id = "a", .prompt_token_ids = {5, 6, 7}},
                           [&](RequestOutput o) {
                             std::lock_guard lock(mu);
                             reason = o.finish_reason;
                             finish_message = o.finish_message;
                             cv.notify_all();
                           });
      } catch (const Error& e) {
        refused = e.what();
      }
      loaded = engine.wait_until_loaded();
      if (!refused.empty()) return;
      std::unique_lock lock(mu);
      cv.wait_for(lock, std::chrono::seconds(60), [&] { return reason.has_value(); });
    });
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_FALSE(loaded);
  EXPECT_NE(message.find("--kv-cache-memory"), std::string::npos) << message;
  if (refused.empty()) {
    EXPECT_EQ(reason, FinishReason::kError);
    EXPECT_NE(finish_message.find("--kv-cache-memory"), std::string::npos) << finish_message;
  } else {
    EXPECT_FALSE(reason.has_value());
    EXPECT_NE(refused.find("--kv-cache-memory"), std::string::npos) << refused;
  }
}

TEST(OnlineEngine, ShutdownDrainsOrAborts) {
  SEEDED_RNG(rng);
  const std::vector<GenerationRequest> requests = random_requests(rng, 5);
  for (const ShutdownMode mode : {ShutdownMode::kDrain, ShutdownMode::kAbort}) {
    SCOPED_TRACE(mode == ShutdownMode::kDrain ? "drain" : "abort");
    std::mutex mu;
    std::map<std::string, FinishReason> reasons;
    std::string refused;
    run_online_engine(small_config(2, 1), [&](OnlineEngine& engine) {
      for (const GenerationRequest& g : requests) {
        engine.add_request(
            EngineRequest{.id = g.id, .prompt_token_ids = g.prompt_token_ids, .params = g.params},
            [&, id = g.id](RequestOutput o) {
              std::lock_guard lock(mu);
              if (o.finished()) reasons[id] = *o.finish_reason;
            });
      }
      engine.shutdown(mode);
      try {
        engine.add_request(EngineRequest{.id = "late", .prompt_token_ids = {1}},
                           [](RequestOutput) {});
      } catch (const Error& e) {
        refused = e.what();
      }
    });
    // run_online_engine returned: every request has ended.
    ASSERT_EQ(reasons.size(), requests.size());
    EXPECT_NE(refused.find("shutting down"), std::string::npos) << refused;
    for (const auto& [id, r] : reasons) {
      if (mode == ShutdownMode::kDrain) {
        EXPECT_EQ(r, FinishReason::kLength) << id;
      } else {
        EXPECT_TRUE(r == FinishReason::kAbort || r == FinishReason::kLength) << id;
      }
    }
  }
}

TEST(OnlineEngine, RejectsWhatItCanNeverServeAtOnce) {
  run_online_engine(small_config(1, 1), [&](OnlineEngine& engine) {
    const auto expect_refused = [&](EngineRequest r, const std::string& what) {
      try {
        engine.add_request(std::move(r), [](RequestOutput) {});
        ADD_FAILURE() << "accepted: " << what;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      }
    };
    expect_refused(EngineRequest{.id = "empty"}, "0 tokens");
    const int64_t vocab = engine.config().model.vocab_size;
    expect_refused(EngineRequest{.id = "vocab", .prompt_token_ids = {1, int32_t(vocab)}},
                   fmt::format("token id {}", vocab));
    expect_refused(EngineRequest{.id = "long", .prompt_token_ids = std::vector<int32_t>(97, 1)},
                   "more than max_model_len 96");
    EngineRequest bad{.id = "params", .prompt_token_ids = {1}};
    bad.params.min_p = 1.5f;
    expect_refused(bad, "min_p must be in [0, 1], got 1.5");
    // A duplicate id while the first is unfinished.
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    EngineRequest a{.id = "dup", .prompt_token_ids = {1, 2, 3}};
    a.params.max_tokens = 30;
    a.params.ignore_eos = true;
    engine.add_request(a, [&](RequestOutput o) {
      std::lock_guard lock(mu);
      done = done || o.finished();
      cv.notify_all();
    });
    expect_refused(a, "already in use");
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
  });
}

}  // namespace
}  // namespace ctxpar::engine
