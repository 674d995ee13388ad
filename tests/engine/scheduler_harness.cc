#include "engine/scheduler_harness.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "engine/fake_model.h"

namespace ctxpar::engine::testing {
namespace {

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

bool chance(std::mt19937_64& rng, double p) {
  return std::bernoulli_distribution(p)(rng);
}

bool is_decode(const ScheduledEntry& e, const Request& r) {
  return e.num_computed_tokens > 0 && e.num_computed_tokens + 1 == r.num_tokens();
}

// Checks one schedule() result against the scheduler's state and the driver's own count of
// computed tokens per request (`computed`), which it resets for preempted requests.
class StepChecker {
 public:
  explicit StepChecker(const Scheduler& scheduler) : s_(scheduler) {}

  void after_schedule(const SchedulerOutput& out, DriveResult& result);
  void after_update(const SchedulerOutput& out);
  void check_queues_and_pool() const;

 private:
  const Scheduler& s_;
  std::unordered_map<RequestId, int64_t> computed_;
};

void StepChecker::after_schedule(const SchedulerOutput& out, DriveResult& result) {
  const SchedulerConfig& c = s_.config();
  SCOPED_TRACE(::testing::Message() << "step " << out.step);
  EXPECT_LE(static_cast<int64_t>(out.entries.size()), c.max_num_seqs);
  EXPECT_LE(out.total_num_new_tokens(), c.max_num_batched_tokens);
  EXPECT_LE(s_.num_running(), c.max_num_seqs);
  result.max_entries_in_a_step =
      std::max(result.max_entries_in_a_step, static_cast<int64_t>(out.entries.size()));
  // Progress: with unfinished requests, something runs (the oldest always fits).
  if (s_.has_unfinished()) {
    EXPECT_FALSE(out.entries.empty()) << "nothing scheduled";
  }

  for (const RequestId& id : out.preempted_request_ids) {
    const Request* r = s_.find(id);
    ASSERT_NE(r, nullptr) << id;
    EXPECT_EQ(r->status(), RequestStatus::kPreempted) << id;
    EXPECT_EQ(r->num_computed_tokens(), 0) << id;
    EXPECT_EQ(r->block_table().num_blocks(), 0) << id;
    computed_[id] = 0;
  }

  // 0: decodes, 1: unfinished prefills, 2: admissions. Arrival order within each group.
  int phase = 0;
  int64_t last_arrival = -1;
  std::set<RequestId> seen;
  for (const ScheduledEntry& e : out.entries) {
    SCOPED_TRACE(::testing::Message() << "entry " << e.request_id);
    EXPECT_TRUE(seen.insert(e.request_id).second) << "scheduled twice";
    const Request* r = s_.find(e.request_id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->status(), RequestStatus::kRunning);
    const int64_t nc = e.num_computed_tokens;
    const int64_t nn = e.num_new_tokens;
    EXPECT_GE(nn, 1);
    EXPECT_EQ(nc, r->num_computed_tokens());
    ASSERT_LE(nc + nn, r->num_tokens());
    const auto ids = r->block_table().ids();
    // New, or resumed after a preemption: the request holds no table yet.
    const bool starts = computed_[e.request_id] == 0;
    EXPECT_EQ(e.new_table, starts) << "a table starts exactly when a request (re)starts";
    if (starts) {
      result.starts[e.request_id].push_back(e);
      if (r->num_preemptions() > 0) ++result.restarts;
      if (c.enable_prefix_caching) {
        // After its cached prefix: whole virtual blocks, never its last token.
        const int64_t per_block = c.layout.tokens_per_virtual_block();
        EXPECT_EQ(nc % per_block, 0) << "a cache hit of " << nc << " tokens";
        EXPECT_LT(nc, r->num_tokens()) << "the last token must be computed";
        for (int64_t j = 0; j < nc / per_block && j < static_cast<int64_t>(ids.size()); ++j) {
          EXPECT_TRUE(s_.block_pool().is_cached(ids[static_cast<size_t>(j)]))
              << "hit block " << j << " is not cached";
        }
        result.hit_tokens += nc;
      } else {
        EXPECT_EQ(nc, 0) << "a start after nothing cached";
      }
    } else {
      // The scheduler's count agrees with ours: chunks of one attempt are contiguous.
      EXPECT_EQ(nc, computed_[e.request_id]) << "chunk does not continue the previous one";
    }
    const auto all = r->all_token_ids();
    EXPECT_TRUE(std::equal(e.new_token_ids.begin(), e.new_token_ids.end(), all.begin() + nc,
                           all.begin() + nc + nn))
        << "new tokens are not the sequence's tokens at positions " << nc << "..";
    EXPECT_EQ(static_cast<int64_t>(e.new_token_ids.size()), nn);
    EXPECT_EQ(e.samples, nc + nn == r->num_tokens());
    if (!e.samples) {
      ++result.partial_chunks;
      EXPECT_TRUE(c.enable_chunked_prefill) << "a partial prefill with chunked prefill off";
      // A prompt is only split when the budget runs out.
      if (out.preempted_request_ids.empty()) {
        EXPECT_EQ(out.total_num_new_tokens(), c.max_num_batched_tokens);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(ids.size()), c.layout.num_virtual_blocks(nc + nn))
        << "the table must hold exactly the blocks of " << nc + nn << " tokens";
    // The delta: a new table is all of it, else the blocks this step appended.
    ASSERT_LE(e.new_block_ids.size(), ids.size());
    EXPECT_TRUE(std::equal(e.new_block_ids.begin(), e.new_block_ids.end(),
                           ids.end() - static_cast<std::ptrdiff_t>(e.new_block_ids.size())))
        << "new blocks are not the table's tail";
    if (e.new_table) {
      EXPECT_EQ(e.new_block_ids.size(), ids.size());
    }

    const int group = e.new_table ? 2 : is_decode(e, *r) ? 0 : 1;
    EXPECT_GE(group, phase) << "entry of group " << group << " after group " << phase;
    if (group > phase) {
      phase = group;
      last_arrival = -1;
    }
    EXPECT_GT(r->arrival_index(), last_arrival) << "not in arrival order within its group";
    last_arrival = r->arrival_index();
    if (group == 2) {
      EXPECT_TRUE(out.preempted_request_ids.empty()) << "admitted after preempting";
    }
  }
  check_queues_and_pool();
}

void StepChecker::check_queues_and_pool() const {
  const kv::BlockPool& pool = s_.block_pool();
  std::map<int32_t, int32_t> holders;  // block -> running requests whose table has it
  int64_t last_arrival = -1;
  for (const Request* r : s_.running_requests()) {
    EXPECT_EQ(r->status(), RequestStatus::kRunning) << r->id();
    EXPECT_GT(r->arrival_index(), last_arrival) << "running queue out of arrival order";
    last_arrival = r->arrival_index();
    const auto ids = r->block_table().ids();
    EXPECT_EQ(std::set<int32_t>(ids.begin(), ids.end()).size(), ids.size())
        << r->id() << " holds a block twice";
    for (const int32_t id : ids) ++holders[id];
  }
  for (const auto& [id, n] : holders) {
    EXPECT_EQ(pool.ref_count(id), n) << "block " << id;
    // Only cached blocks are shared, and only with prefix caching.
    if (n > 1) {
      EXPECT_TRUE(s_.config().enable_prefix_caching && pool.is_cached(id))
          << "block " << id << " held " << n << " times";
    }
  }
  EXPECT_EQ(static_cast<int64_t>(holders.size()), pool.used_count())
      << "used blocks that no running request holds";
  last_arrival = -1;
  for (const Request* r : s_.waiting_requests()) {
    EXPECT_TRUE(r->status() == RequestStatus::kWaiting || r->status() == RequestStatus::kPreempted)
        << r->id();
    EXPECT_EQ(r->num_computed_tokens(), 0) << r->id();
    EXPECT_EQ(r->block_table().num_blocks(), 0) << r->id();
    EXPECT_GT(r->arrival_index(), last_arrival) << "waiting queue out of arrival order";
    last_arrival = r->arrival_index();
  }
}

void StepChecker::after_update(const SchedulerOutput& out) {
  for (const ScheduledEntry& e : out.entries) {
    computed_[e.request_id] = e.num_computed_tokens + e.num_new_tokens;
    const Request* r = s_.find(e.request_id);
    if (r != nullptr && !r->is_finished()) {
      EXPECT_EQ(r->num_computed_tokens(), computed_[e.request_id]) << e.request_id;
    }
  }
}

}  // namespace

std::vector<WorkloadRequest> random_workload(std::mt19937_64& rng, const WorkloadShape& shape) {
  std::vector<WorkloadRequest> out;
  for (int i = 0; i < shape.num_requests; ++i) {
    WorkloadRequest w;
    w.id = fmt::format("r{}", i);
    int64_t len = uniform(rng, 1, shape.max_prompt_len);
    if (chance(rng, 0.03)) len = shape.max_prompt_len * 4;  // too long for most configs
    if (chance(rng, 0.01)) len = 0;
    if (!out.empty() && chance(rng, shape.shared_prefix_weight)) {
      // An earlier prompt's first tokens (any length, so across, at and inside block
      // boundaries), then maybe a tail of its own.
      const std::vector<int32_t>& earlier =
          out[static_cast<size_t>(uniform(rng, 0, int64_t(out.size()) - 1))].prompt;
      const auto shared =
          std::min<int64_t>(len, uniform(rng, 0, static_cast<int64_t>(earlier.size())));
      w.prompt.assign(earlier.begin(), earlier.begin() + shared);
    }
    while (static_cast<int64_t>(w.prompt.size()) < len)
      w.prompt.push_back(int32_t(uniform(rng, 0, shape.vocab_size - 1)));
    w.params.max_tokens = uniform(rng, 1, shape.max_new_tokens);
    w.params.eos_token_ids = {int32_t(uniform(rng, 0, shape.vocab_size - 1))};
    w.params.ignore_eos = !chance(rng, shape.eos_weight);
    if (chance(rng, 0.3))
      w.params.stop_token_ids = {int32_t(uniform(rng, 0, shape.vocab_size - 1))};
    w.arrival_step = uniform(rng, 0, shape.arrival_spread);
    out.push_back(std::move(w));
  }
  std::stable_sort(out.begin(), out.end(), [](const WorkloadRequest& a, const WorkloadRequest& b) {
    return a.arrival_step < b.arrival_step;
  });
  return out;
}

ExpectedResult expected_result(const WorkloadRequest& request, const Scheduler& scheduler,
                               int32_t vocab_size) {
  const auto len = static_cast<int64_t>(request.prompt.size());
  const int64_t capacity = int64_t{scheduler.block_pool().num_blocks()} *
                           scheduler.config().layout.tokens_per_virtual_block();
  if (len == 0 || len > scheduler.config().max_model_len || len > capacity) {
    return {RequestStatus::kFinishedRejected, {}};
  }
  const int64_t limit = std::min(scheduler.config().max_model_len, capacity);
  const SamplingParams& p = request.params;
  std::vector<int32_t> tokens = request.prompt;
  ExpectedResult r{RequestStatus::kRunning, {}};
  while (true) {
    const int32_t t = FakeModel::next_token(tokens, vocab_size);
    tokens.push_back(t);
    r.output.push_back(t);
    if (static_cast<int64_t>(r.output.size()) >= p.max_tokens ||
        static_cast<int64_t>(tokens.size()) >= limit) {
      r.status = RequestStatus::kFinishedLength;
    } else if ((!p.ignore_eos && p.is_eos(t)) || p.is_stop_token(t)) {
      r.status = RequestStatus::kFinishedStopped;
    } else {
      continue;
    }
    return r;
  }
}

DriveResult drive(Scheduler& scheduler, const std::vector<WorkloadRequest>& workload,
                  std::mt19937_64& rng, int32_t vocab_size, const DriveOptions& options) {
  DriveResult result;
  FakeModel model(scheduler.config().layout, scheduler.block_pool().num_blocks(), vocab_size,
                  scheduler.config().enable_prefix_caching);
  StepChecker checker(scheduler);
  std::vector<RequestId> live;  // added, maybe finished: abort targets
  const auto collect = [&] {
    for (auto& r : scheduler.take_finished()) {
      EXPECT_TRUE(r->is_finished()) << r->id();
      EXPECT_EQ(r->block_table().num_blocks(), 0) << r->id() << " finished holding blocks";
      const RequestId id = r->id();
      model.finished(id);
      EXPECT_TRUE(result.finished.emplace(id, std::move(r)).second) << id << " finished twice";
    }
  };
  const auto abort_random = [&] {
    if (live.empty() || !chance(rng, options.abort_probability)) return;
    const RequestId& id = live[static_cast<size_t>(uniform(rng, 0, int64_t(live.size()) - 1))];
    const Request* r = scheduler.find(id);
    const bool abortable = r != nullptr && !r->is_finished();
    const int32_t used = scheduler.block_pool().used_count();
    // Blocks only this request holds become free; shared cached ones stay held.
    const auto ids = abortable ? r->block_table().ids() : std::span<const int32_t>();
    const auto held = std::count_if(ids.begin(), ids.end(), [&](int32_t b) {
      return scheduler.block_pool().ref_count(b) == 1;
    });
    EXPECT_EQ(scheduler.abort(id), abortable) << id;
    EXPECT_EQ(scheduler.block_pool().used_count(), used - held) << "abort did not free " << id;
    EXPECT_FALSE(scheduler.abort(id)) << "aborted " << id << " twice";
  };

  size_t next = 0;
  for (int64_t step = 0;; ++step) {
    while (next < workload.size() && workload[next].arrival_step <= step) {
      const WorkloadRequest& w = workload[next++];
      const RequestStatus st = scheduler.add_request(w.id, w.prompt, w.params);
      EXPECT_TRUE(st == RequestStatus::kWaiting || st == RequestStatus::kFinishedRejected);
      live.push_back(w.id);
    }
    if (next == workload.size() && !scheduler.has_unfinished()) break;
    if (step >= options.max_steps) {
      ADD_FAILURE() << "not finished after " << step << " steps";
      break;
    }
    abort_random();
    const SchedulerOutput out = scheduler.schedule();
    checker.after_schedule(out, result);
    abort_random();  // in flight: update() must skip it
    const std::vector<int32_t> sampled = model.step(out);
    // A request that started on cached blocks reads exactly its own tokens there.
    for (const ScheduledEntry& e : out.entries) {
      const Request* r = scheduler.find(e.request_id);
      if (!e.new_table || e.num_computed_tokens == 0 || r == nullptr || r->is_finished()) continue;
      const auto want = r->all_token_ids().first(static_cast<size_t>(e.num_computed_tokens));
      EXPECT_EQ(model.read_tokens(e.request_id, e.num_computed_tokens),
                std::vector<int32_t>(want.begin(), want.end()))
          << e.request_id << " hit " << e.num_computed_tokens << " cached tokens";
    }
    // The table the rank rebuilt from the plans is the scheduler's (aborted ones are freed).
    for (const ScheduledEntry& e : out.entries) {
      const Request* r = scheduler.find(e.request_id);
      if (r == nullptr || r->is_finished()) continue;
      const auto want = r->block_table().ids();
      const auto got = model.table(e.request_id);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
          << e.request_id << ": the plans rebuilt a table of " << got.size() << " blocks, not the "
          << want.size() << " the scheduler holds";
    }
    const std::vector<RequestUpdate> updates = scheduler.update(out, sampled);
    checker.after_update(out);
    for (const RequestUpdate& u : updates) {
      const Request* r = scheduler.find(u.request_id);
      if (r == nullptr) {
        ADD_FAILURE() << "update for unknown request " << u.request_id;
        continue;
      }
      EXPECT_EQ(u.status, r->status());
      EXPECT_EQ(u.new_token, r->output_token_ids().back());
    }
    checker.check_queues_and_pool();
    collect();
    result.steps = step + 1;
    if (::testing::Test::HasFailure()) break;
  }
  collect();
  EXPECT_EQ(scheduler.block_pool().used_count(), 0) << "blocks leaked after the last request";
  return result;
}

void check_results(const DriveResult& result, const std::vector<WorkloadRequest>& workload,
                   const Scheduler& scheduler, int32_t vocab_size) {
  EXPECT_EQ(result.finished.size(), workload.size()) << "requests were lost";
  for (const WorkloadRequest& w : workload) {
    SCOPED_TRACE(::testing::Message()
                 << w.id << " prompt " << w.prompt.size() << " max_tokens " << w.params.max_tokens);
    const auto it = result.finished.find(w.id);
    if (it == result.finished.end()) {
      ADD_FAILURE() << "never finished";
      continue;
    }
    const Request& r = *it->second;
    const ExpectedResult want = expected_result(w, scheduler, vocab_size);
    const std::vector<int32_t> got(r.output_token_ids().begin(), r.output_token_ids().end());
    EXPECT_TRUE(std::equal(w.prompt.begin(), w.prompt.end(), r.prompt_token_ids().begin(),
                           r.prompt_token_ids().end()));
    if (r.status() == RequestStatus::kFinishedAborted) {
      EXPECT_NE(want.status, RequestStatus::kFinishedRejected);
      ASSERT_LT(got.size(), want.output.size() + 1);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.output.begin())) << "not a prefix";
      continue;
    }
    EXPECT_EQ(request_status_name(r.status()), request_status_name(want.status))
        << r.finish_message();
    EXPECT_EQ(got, want.output);
    if (want.status == RequestStatus::kFinishedRejected) {
      EXPECT_NE(r.finish_message().find(std::to_string(w.prompt.size())), std::string::npos)
          << r.finish_message();
    }
    if (want.status == RequestStatus::kFinishedStopped) {
      EXPECT_EQ(r.stop_token(), got.back());
    }
  }
}

}  // namespace ctxpar::engine::testing
