// Scheduler behaviour case by case: chunking, ordering, rejection, abort, stopping,
// preemption, protocol misuse and the attention batch. Random sizes, derived expectations.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/core/error.h"
#include "ctxpar/engine/request_block_tables.h"
#include "ctxpar/engine/scheduler.h"
#include "ctxpar/engine/step_plan.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(uniform(rng, 0, 1000));
  return t;
}

kv::DcpLayout random_layout(std::mt19937_64& rng) {
  const int n = static_cast<int>(uniform(rng, 1, 4));
  const int i = static_cast<int>(uniform(rng, 1, 4));
  const int b = i * static_cast<int>(uniform(rng, 1, 3));
  return kv::DcpLayout(n, b, i);
}

SamplingParams long_running(int64_t max_tokens) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  return p;
}

// One step; every sampling entry gets `token`.
SchedulerOutput run_step(Scheduler& s, int32_t token,
                         std::vector<RequestUpdate>* updates = nullptr) {
  SchedulerOutput out = s.schedule();
  const std::vector<int32_t> sampled(out.entries.size(), token);
  auto u = s.update(out, sampled);
  if (updates) *updates = std::move(u);
  return out;
}

TEST(SchedulerConfig, RejectsLimitsThatCannotWork) {
  SEEDED_RNG(rng);
  SchedulerConfig ok;
  ok.max_num_seqs = static_cast<int32_t>(uniform(rng, 1, 64));
  ok.max_num_batched_tokens = uniform(rng, ok.max_num_seqs, 4096);
  EXPECT_NO_THROW(ok.validate());

  SchedulerConfig c = ok;
  c.max_num_seqs = static_cast<int32_t>(uniform(rng, -5, 0));
  EXPECT_THROW(c.validate(), Error);
  c = ok;
  c.max_model_len = uniform(rng, -5, 0);
  EXPECT_THROW(c.validate(), Error);
  c = ok;
  c.max_num_batched_tokens = ok.max_num_seqs - 1;
  try {
    c.validate();
    ADD_FAILURE() << "budget below max_num_seqs accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(c.max_num_batched_tokens)),
              std::string::npos)
        << e.what();
  }
  c = ok;
  c.enable_chunked_prefill = false;
  c.max_num_batched_tokens = std::max<int64_t>(c.max_num_seqs, 8);
  c.max_model_len = c.max_num_batched_tokens + uniform(rng, 1, 100);
  EXPECT_THROW(c.validate(), Error);
  c.enable_chunked_prefill = true;
  EXPECT_NO_THROW(c.validate());
  EXPECT_THROW(Scheduler(ok, -1), Error);
}

TEST(Scheduler, ChunkedPrefillSplitsALongPromptAcrossSteps) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 20; ++trial) {
    SchedulerConfig config;
    config.layout = random_layout(rng);
    config.max_num_seqs = 4;
    config.max_num_batched_tokens = uniform(rng, 4, 32);
    const int64_t budget = config.max_num_batched_tokens;
    const int64_t prompt_len = uniform(rng, budget + 1, 5 * budget);
    config.max_model_len = prompt_len + 10;
    Scheduler s(config, 1000);
    const auto prompt = random_tokens(rng, prompt_len);
    ASSERT_EQ(s.add_request("a", prompt, long_running(3)), RequestStatus::kWaiting);

    int64_t computed = 0;
    while (computed < prompt_len) {
      const SchedulerOutput out = run_step(s, 7);
      ASSERT_EQ(out.entries.size(), 1u);
      const ScheduledEntry& e = out.entries[0];
      const int64_t want = std::min(budget, prompt_len - computed);
      EXPECT_EQ(e.num_computed_tokens, computed);
      EXPECT_EQ(e.num_new_tokens, want);
      EXPECT_EQ(e.samples, computed + want == prompt_len);
      EXPECT_EQ(e.new_token_ids,
                std::vector<int32_t>(prompt.begin() + computed, prompt.begin() + computed + want));
      EXPECT_EQ(s.find("a")->block_table().num_blocks(),
                config.layout.num_virtual_blocks(computed + want));
      EXPECT_EQ(e.new_table, computed == 0);
      computed += want;
      EXPECT_EQ(s.find("a")->num_output_tokens(), computed == prompt_len ? 1 : 0)
          << "a partial prefill sampled";
    }
    // Then decodes, one token each, the last sampled token being the new input.
    for (int d = 0; d < 2; ++d) {
      const SchedulerOutput out = run_step(s, 9);
      ASSERT_EQ(out.entries.size(), 1u);
      EXPECT_EQ(out.entries[0].num_new_tokens, 1);
      EXPECT_EQ(out.entries[0].num_computed_tokens, prompt_len + d);
      EXPECT_EQ(out.num_decode_entries(), 1);
    }
    EXPECT_FALSE(s.has_unfinished());
    const auto done = s.take_finished();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0]->status(), RequestStatus::kFinishedLength);
    EXPECT_EQ(std::vector<int32_t>(done[0]->output_token_ids().begin(),
                                   done[0]->output_token_ids().end()),
              (std::vector<int32_t>{7, 9, 9}));
    EXPECT_EQ(s.stats().num_used_blocks, 0);
  }
}

// A request with prompt_logprobs returns a row of logits per prompt token, so its prefill
// takes at most max_all_logits_tokens per step, whatever the budget leaves; once it has an
// output (its decodes, a resume after preemption) it takes what others would.
// With chunked prefill off too (other prompts then go in one step, as the budget holds them).
TEST(Scheduler, PromptLogprobsPrefillInCappedChunks) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 40; ++trial) {
    SchedulerConfig config;
    config.layout = random_layout(rng);
    config.max_num_seqs = 4;
    config.max_num_batched_tokens = uniform(rng, 8, 64);
    config.max_all_logits_tokens = uniform(rng, 1, 80);
    const int64_t prompt_len = uniform(rng, 1, 200);
    config.max_model_len = 2 * prompt_len + 10;
    config.enable_chunked_prefill = trial % 2 == 0;
    if (!config.enable_chunked_prefill) {
      config.max_num_batched_tokens = config.max_model_len + uniform(rng, 0, 20);
    }
    Scheduler s(config, 10000);
    SamplingParams scored = long_running(2);
    scored.prompt_logprobs = 1;
    const auto prompt = random_tokens(rng, prompt_len);
    ASSERT_EQ(s.add_request("scored", prompt, scored), RequestStatus::kWaiting);
    ASSERT_EQ(s.add_request("plain", prompt, long_running(2)), RequestStatus::kWaiting);
    const int64_t cap = std::min(config.max_num_batched_tokens, config.max_all_logits_tokens);
    int64_t computed = 0;
    while (computed < prompt_len) {
      const SchedulerOutput out = run_step(s, 7);
      const auto it =
          std::find_if(out.entries.begin(), out.entries.end(),
                       [](const ScheduledEntry& e) { return e.request_id == "scored"; });
      ASSERT_NE(it, out.entries.end());
      EXPECT_EQ(it->num_new_tokens, std::min(cap, prompt_len - computed));
      EXPECT_TRUE(it->all_logits);
      for (const ScheduledEntry& e : out.entries) {
        EXPECT_TRUE(e.request_id != "plain" || !e.all_logits);
        // Without chunked prefill the plain prompt goes whole.
        EXPECT_TRUE(e.request_id != "plain" || config.enable_chunked_prefill ||
                    e.num_computed_tokens > 0 || e.num_new_tokens == prompt_len);
      }
      computed += it->num_new_tokens;
    }
    const SchedulerOutput decode = run_step(s, 9);
    for (const ScheduledEntry& e : decode.entries) {
      EXPECT_TRUE(e.request_id != "scored" || !e.all_logits);
    }
  }
}

TEST(Scheduler, DecodesFirstThenWaitingInArrivalOrder) {
  SEEDED_RNG(rng);
  SchedulerConfig config;
  config.layout = random_layout(rng);
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 512;
  Scheduler s(config, 4000);
  const int n_first = static_cast<int>(uniform(rng, 1, 3));
  for (int i = 0; i < n_first; ++i) {
    s.add_request("old" + std::to_string(i), random_tokens(rng, uniform(rng, 1, 20)),
                  long_running(50));
  }
  run_step(s, 1);  // the old ones are now decoding
  const int n_new = static_cast<int>(uniform(rng, 1, 4));
  for (int i = 0; i < n_new; ++i) {
    s.add_request("new" + std::to_string(i), random_tokens(rng, uniform(rng, 1, 20)),
                  long_running(50));
  }
  const SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.entries.size(), static_cast<size_t>(n_first + n_new));
  EXPECT_EQ(out.num_decode_entries(), n_first);
  for (int i = 0; i < n_first; ++i)
    EXPECT_EQ(out.entries[size_t(i)].request_id, "old" + std::to_string(i));
  for (int i = 0; i < n_new; ++i) {
    const ScheduledEntry& e = out.entries[size_t(n_first + i)];
    EXPECT_EQ(e.request_id, "new" + std::to_string(i));
    EXPECT_EQ(e.num_computed_tokens, 0);
  }
  EXPECT_EQ(s.num_running(), n_first + n_new);
  EXPECT_EQ(s.num_waiting(), 0);
}

TEST(Scheduler, MaxNumSeqsLimitsAdmission) {
  SEEDED_RNG(rng);
  SchedulerConfig config;
  config.max_num_seqs = static_cast<int32_t>(uniform(rng, 1, 6));
  config.max_num_batched_tokens = 4096;
  Scheduler s(config, 10000);
  const int total = config.max_num_seqs + static_cast<int>(uniform(rng, 1, 5));
  for (int i = 0; i < total; ++i)
    s.add_request(std::to_string(i), random_tokens(rng, 5), long_running(100));
  const SchedulerOutput out = run_step(s, 3);
  EXPECT_EQ(static_cast<int64_t>(out.entries.size()), config.max_num_seqs);
  EXPECT_EQ(s.num_running(), config.max_num_seqs);
  EXPECT_EQ(s.num_waiting(), total - config.max_num_seqs);
  EXPECT_EQ(s.waiting_requests().front()->id(), std::to_string(config.max_num_seqs));
}

TEST(Scheduler, RejectsRequestsThatCanNeverBeServed) {
  SEEDED_RNG(rng);
  SchedulerConfig config;
  config.layout = random_layout(rng);
  config.max_model_len = uniform(rng, 16, 200);
  const int64_t per_block = config.layout.tokens_per_virtual_block();
  // A pool smaller than max_model_len, so both limits can be hit separately.
  const auto num_blocks =
      static_cast<int32_t>(std::max<int64_t>(1, config.max_model_len / per_block / 2));
  const int64_t capacity = num_blocks * per_block;
  Scheduler s(config, num_blocks);
  EXPECT_EQ(s.max_request_len(), std::min(config.max_model_len, capacity));

  const auto expect_rejected = [&](const std::string& id, std::vector<int32_t> prompt,
                                   SamplingParams params, const std::vector<std::string>& words) {
    EXPECT_EQ(s.add_request(id, std::move(prompt), std::move(params)),
              RequestStatus::kFinishedRejected)
        << id;
    const Request* r = s.find(id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->finish_reason(), "rejected");
    for (const std::string& w : words) {
      EXPECT_NE(r->finish_message().find(w), std::string::npos)
          << id << ": '" << r->finish_message() << "' lacks " << w;
    }
  };
  const int64_t too_long = config.max_model_len + uniform(rng, 1, 50);
  expect_rejected("too_long", random_tokens(rng, too_long), {},
                  {std::to_string(too_long), std::to_string(config.max_model_len)});
  if (capacity < config.max_model_len) {
    const int64_t too_big = uniform(rng, capacity + 1, config.max_model_len);
    expect_rejected("too_big", random_tokens(rng, too_big), {},
                    {std::to_string(too_big), std::to_string(capacity)});
  }
  expect_rejected("empty", {}, {}, {"0 tokens"});
  expect_rejected("negative", {1, 2, -3}, {}, {"-3"});
  SamplingParams bad;
  bad.temperature = -static_cast<float>(uniform(rng, 1, 9));
  expect_rejected("bad_params", {1, 2}, bad, {"temperature"});
  bad = {};
  bad.max_tokens = 0;
  expect_rejected("zero_max_tokens", {1}, bad, {"max_tokens"});

  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.stats().num_used_blocks, 0);
  EXPECT_THROW(s.add_request("empty", {1}, {}), Error) << "duplicate id accepted";
  const auto done = s.take_finished();
  EXPECT_GE(done.size(), 5u);
  for (const auto& r : done) EXPECT_EQ(r->status(), RequestStatus::kFinishedRejected);
  // Taken requests free their ids; a fitting prompt is accepted.
  EXPECT_EQ(s.add_request("empty", random_tokens(rng, s.max_request_len()), {}),
            RequestStatus::kWaiting);
}

TEST(Scheduler, AbortFreesBlocksAndIsSkippedInFlight) {
  SEEDED_RNG(rng);
  SchedulerConfig config;
  config.layout = random_layout(rng);
  Scheduler s(config, 500);
  for (int i = 0; i < 4; ++i) {
    // A first token of its own: with prefix caching (on by default) and one-token blocks, two
    // prompts that start alike share a block, which an abort of one of them cannot free.
    std::vector<int32_t> prompt = random_tokens(rng, uniform(rng, 1, 40));
    prompt[0] = 1001 + i;
    s.add_request(std::to_string(i), prompt, long_running(100));
  }
  run_step(s, 5);
  EXPECT_EQ(s.num_running(), 4);
  s.add_request("waiting", random_tokens(rng, 3), {});

  const int32_t used = s.block_pool().used_count();
  const int64_t held = s.find("1")->block_table().num_blocks();
  EXPECT_GT(held, 0);
  EXPECT_TRUE(s.abort("1"));
  EXPECT_EQ(s.block_pool().used_count(), used - held);
  EXPECT_EQ(s.find("1")->status(), RequestStatus::kFinishedAborted);
  EXPECT_FALSE(s.abort("1"));
  EXPECT_FALSE(s.abort("nobody"));
  EXPECT_TRUE(s.abort("waiting"));
  EXPECT_EQ(s.num_waiting(), 0);

  // Aborted between schedule() and update(): its sampled token is dropped, the rest go on.
  const SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.entries.size(), 3u);
  EXPECT_TRUE(s.abort("2"));
  const auto updates = s.update(out, std::vector<int32_t>(3, 8));
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].request_id, "0");
  EXPECT_EQ(updates[1].request_id, "3");
  EXPECT_EQ(s.find("2")->num_output_tokens(), 1);
  EXPECT_EQ(out.finished_request_ids, (std::vector<RequestId>{"1", "waiting"}));
  const SchedulerOutput next = s.schedule();
  EXPECT_EQ(next.finished_request_ids, (std::vector<RequestId>{"2"}));
  s.update(next, std::vector<int32_t>(next.entries.size(), 1));
  EXPECT_TRUE(s.abort("0"));
  EXPECT_TRUE(s.abort("3"));
  EXPECT_EQ(s.block_pool().used_count(), 0);
  EXPECT_EQ(s.take_finished().size(), 5u);
}

TEST(Scheduler, StopsOnLengthEosAndStopTokens) {
  SEEDED_RNG(rng);
  SchedulerConfig config;
  config.max_model_len = 64;
  const auto eos = static_cast<int32_t>(uniform(rng, 0, 9));
  const auto stop = static_cast<int32_t>(uniform(rng, 10, 19));
  const auto other = static_cast<int32_t>(uniform(rng, 20, 29));
  const auto run = [&](SamplingParams p, int64_t prompt_len, std::vector<int32_t> tokens) {
    Scheduler s(config, 100);
    s.add_request("x", random_tokens(rng, prompt_len), std::move(p));
    for (const int32_t t : tokens) {
      if (!s.has_unfinished()) break;
      run_step(s, t);
    }
    EXPECT_FALSE(s.has_unfinished());
    auto done = s.take_finished();
    return std::move(done.at(0));
  };
  SamplingParams p;
  p.eos_token_ids = {eos};
  p.stop_token_ids = {stop};
  p.max_tokens = uniform(rng, 4, 10);

  auto r = run(p, 5, {other, other, eos, other});
  EXPECT_EQ(r->status(), RequestStatus::kFinishedStopped);
  EXPECT_EQ(r->num_output_tokens(), 3) << "the EOS token is kept";
  EXPECT_EQ(r->stop_token(), eos);
  EXPECT_EQ(r->finish_reason(), "stop");

  r = run(p, 5, {other, stop, other});
  EXPECT_EQ(r->status(), RequestStatus::kFinishedStopped);
  EXPECT_EQ(r->stop_token(), stop);

  SamplingParams ignoring = p;
  ignoring.ignore_eos = true;
  r = run(ignoring, 5, std::vector<int32_t>(20, eos));
  EXPECT_EQ(r->status(), RequestStatus::kFinishedLength);
  EXPECT_EQ(r->num_output_tokens(), p.max_tokens);
  EXPECT_NE(r->finish_message().find("max_tokens"), std::string::npos);

  // Length wins over EOS on the last allowed token, as vLLM.
  std::vector<int32_t> ends_with_eos(static_cast<size_t>(p.max_tokens - 1), other);
  ends_with_eos.push_back(eos);
  r = run(p, 5, ends_with_eos);
  EXPECT_EQ(r->status(), RequestStatus::kFinishedLength);

  // max_model_len caps prompt + output.
  SamplingParams many = p;
  many.max_tokens = 1000;
  const int64_t room = uniform(rng, 1, 6);
  r = run(many, config.max_model_len - room, std::vector<int32_t>(20, other));
  EXPECT_EQ(r->status(), RequestStatus::kFinishedLength);
  EXPECT_EQ(r->num_tokens(), config.max_model_len);
  EXPECT_EQ(r->num_output_tokens(), room);
  EXPECT_NE(r->finish_message().find("max_model_len"), std::string::npos);
}

TEST(Scheduler, PreemptsTheYoungestRunningRequestAndRecomputesIt) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 10; ++trial) {
    SchedulerConfig config;
    config.layout = random_layout(rng);
    config.enable_prefix_caching = false;  // recompute from 0 (prefix_cache_test: on cache)
    const int64_t per_block = config.layout.tokens_per_virtual_block();
    config.max_num_batched_tokens = 1024;
    // Three blocks: the two prompts fill one each; decoding soon needs more than three.
    Scheduler s(config, 3);
    const auto a_prompt = random_tokens(rng, per_block);
    const auto b_prompt = random_tokens(rng, per_block);
    s.add_request("a", a_prompt, long_running(2 * per_block));
    s.add_request("b", b_prompt, long_running(2 * per_block));
    int64_t steps = 0;
    while (s.stats().num_preemptions == 0) {
      ASSERT_LT(++steps, 10 * per_block) << "no preemption";
      run_step(s, static_cast<int32_t>(uniform(rng, 0, 50)));
    }
    // b is younger: it gave its blocks back and waits at the front, outputs kept.
    const Request* b = s.find("b");
    EXPECT_EQ(b->status(), RequestStatus::kPreempted);
    EXPECT_EQ(b->num_computed_tokens(), 0);
    EXPECT_EQ(b->block_table().num_blocks(), 0);
    EXPECT_EQ(b->num_preemptions(), 1);
    EXPECT_EQ(s.waiting_requests().front(), b);
    // a (older) was never preempted; with B·N = 1 it may already have finished.
    EXPECT_NE(s.find("a")->status(), RequestStatus::kPreempted);
    EXPECT_EQ(s.find("a")->num_preemptions(), 0);
    const std::vector<int32_t> b_tokens(b->all_token_ids().begin(), b->all_token_ids().end());
    EXPECT_GT(b->num_output_tokens(), 0);

    // Once a finishes, b re-prefills prompt and outputs from position 0, then continues.
    bool restarted = false;
    while (s.has_unfinished()) {
      ASSERT_LT(++steps, 100 * per_block);
      const SchedulerOutput out = s.schedule();
      for (const ScheduledEntry& e : out.entries) {
        if (e.request_id != "b" || restarted) continue;
        restarted = true;
        EXPECT_EQ(e.num_computed_tokens, 0);
        EXPECT_EQ(e.new_token_ids, b_tokens) << "recompute must feed prompt + outputs";
        EXPECT_TRUE(e.samples);
      }
      s.update(out, std::vector<int32_t>(out.entries.size(), 4));
    }
    EXPECT_TRUE(restarted);
    auto done = s.take_finished();
    ASSERT_EQ(done.size(), 2u);
    for (const auto& r : done) {
      EXPECT_EQ(r->status(), RequestStatus::kFinishedLength) << r->id();
      EXPECT_EQ(r->num_output_tokens(), 2 * per_block) << r->id();
    }
    EXPECT_TRUE(std::equal(b_tokens.begin(), b_tokens.end(), done[1]->all_token_ids().begin()))
        << "outputs generated before the preemption were lost";
  }
}

TEST(Scheduler, ProtocolMisuseThrows) {
  SEEDED_RNG(rng);
  Scheduler s(SchedulerConfig{}, 100);
  s.add_request("a", random_tokens(rng, 10), long_running(5));
  s.add_request("b", random_tokens(rng, 10), long_running(5));
  const SchedulerOutput out = s.schedule();
  EXPECT_THROW(s.schedule(), Error) << "scheduled twice without update";
  EXPECT_THROW(s.update(out, std::vector<int32_t>(1, 0)), Error) << "too few tokens";
  EXPECT_THROW(s.update(out, std::vector<int32_t>{1, -2}), Error) << "negative token";
  // The rejected update changed nothing that matters: a valid one still applies.
  SchedulerOutput fresh = out;
  EXPECT_NO_THROW(s.update(fresh, std::vector<int32_t>{1, 2}));
  EXPECT_THROW(s.update(out, std::vector<int32_t>{1, 2}), Error) << "applied twice";
  const SchedulerOutput next = s.schedule();
  EXPECT_THROW(s.update(out, std::vector<int32_t>{1, 2}), Error) << "stale output";
  EXPECT_NO_THROW(s.update(next, std::vector<int32_t>{1, 2}));
}

TEST(Scheduler, PlanDeltasRebuildTheTablesTheMetadataBuilderNeeds) {
  SEEDED_RNG(rng);
  SchedulerConfig config;
  // N = 1: the normal metadata builder consumes the batch (the workload tests cover N > 1).
  config.layout = kv::DcpLayout(1, static_cast<int>(uniform(rng, 1, 8)), 1);
  config.max_num_batched_tokens = uniform(rng, 16, 64);
  config.max_num_seqs = 8;
  // Few blocks, so requests are preempted and resume with new tables.
  Scheduler s(config, static_cast<int32_t>(uniform(rng, 16, 40)));
  const attention::AttentionMetadataBuilder builder(config.layout.block_size());
  StepPlanBuilder plans;
  RequestBlockTables tables(config.layout.tokens_per_virtual_block());
  int next_id = 0;
  for (int step = 0; step < 80; ++step) {
    if (uniform(rng, 0, 2) == 0) {
      s.add_request(std::to_string(next_id++), random_tokens(rng, uniform(rng, 1, 40)),
                    long_running(uniform(rng, 1, 20)));
    }
    const SchedulerOutput out = s.schedule();
    const StepPlan plan = StepPlan::decode(plans.build(out).encode());
    const std::vector<attention::ScheduledRequest> batch = tables.apply(plan);
    ASSERT_EQ(batch.size(), out.entries.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const Request* r = s.find(out.entries[i].request_id);
      const auto want = r->block_table().ids();
      EXPECT_EQ(batch[i].num_computed, out.entries[i].num_computed_tokens);
      EXPECT_EQ(batch[i].num_scheduled, out.entries[i].num_new_tokens);
      EXPECT_EQ(batch[i].block_table, std::vector<int32_t>(want.begin(), want.end()));
    }
    if (!batch.empty()) {
      const attention::AttentionMetadata md = builder.build(batch);
      EXPECT_EQ(md.common.num_reqs, static_cast<int64_t>(batch.size()));
      EXPECT_EQ(md.common.num_tokens, out.total_num_new_tokens());
      EXPECT_EQ(md.common.num_decode_reqs, out.num_decode_entries());
    }
    s.update(out, std::vector<int32_t>(out.entries.size(), 1));
    for (const auto& r : s.take_finished()) plans.finished(r->id());
  }
  // Every finished request is forgotten once the next plan goes out.
  tables.apply(plans.build(SchedulerOutput{}));
  EXPECT_EQ(tables.num_requests(), static_cast<size_t>(s.num_running()));
}

// What the issue measured: plans that carry whole block tables grow with every context, so a
// generation costs O(context^2) bytes. A decode step's plan holds one token per request, and a
// block id only on the step that starts a virtual block, whatever the contexts are.
TEST(Scheduler, DecodePlansDoNotGrowWithTheContext) {
  SEEDED_RNG(rng);
  SchedulerConfig config;
  config.layout = random_layout(rng);
  config.max_num_batched_tokens = 512;
  config.max_num_seqs = 8;
  config.max_model_len = 4096;
  // Room for every request's prompt (<= 300) and 600 decodes with no preemption, which would
  // take a request out of the decode steps: one-token virtual blocks need 8 · 901 blocks
  // (4000 failed about 1 run in 20).
  const int64_t per_block = config.layout.tokens_per_virtual_block();
  Scheduler s(config, static_cast<int32_t>(8 * ((300 + 600 + per_block) / per_block + 1)));
  StepPlanBuilder plans;
  const int num_requests = static_cast<int>(uniform(rng, 1, 8));
  for (int i = 0; i < num_requests; ++i) {
    s.add_request(std::to_string(i), random_tokens(rng, uniform(rng, 1, 300)), long_running(2000));
  }
  // Prefill (the first steps), then decodes only.
  const auto all_decoding = [&] {
    for (int i = 0; i < num_requests; ++i) {
      if (s.find(std::to_string(i))->num_output_tokens() == 0) return false;
    }
    return true;
  };
  while (!all_decoding()) {
    const SchedulerOutput out = s.schedule();
    plans.build(out);  // the ranks hear of every step, prefills included
    s.update(out, std::vector<int32_t>(out.entries.size(), 5));
  }
  size_t smallest = SIZE_MAX, largest = 0;
  int64_t block_ids = 0;
  for (int step = 0; step < 600; ++step) {
    const SchedulerOutput out = s.schedule();
    ASSERT_EQ(out.num_decode_entries(), num_requests);
    const StepPlan plan = plans.build(out);
    for (const StepPlan::Entry& e : plan.entries)
      block_ids += static_cast<int64_t>(e.new_block_ids.size());
    const size_t bytes = plan.encode().size();
    smallest = std::min(smallest, bytes);
    largest = std::max(largest, bytes);
    s.update(out, std::vector<int32_t>(out.entries.size(), 9));
  }
  // At most one new block per request per step (4 bytes each), nothing else varies.
  EXPECT_LE(largest - smallest, static_cast<size_t>(4 * num_requests));
  // Over 600 steps each request crossed about 600 / (B·N) virtual blocks, no more.
  EXPECT_LE(block_ids, num_requests * (600 / per_block + 1));
}

TEST(Request, KeepsPromptAndOutputsAsOneSequence) {
  SEEDED_RNG(rng);
  kv::BlockPool pool(4);
  const kv::DcpLayout layout(2, 2, 1);
  const auto prompt = random_tokens(rng, uniform(rng, 1, 30));
  SamplingParams params;
  params.seed = rng();
  Request r("id", prompt, params, 7, kv::BlockTable(pool, layout));
  const auto outputs = random_tokens(rng, uniform(rng, 0, 10));
  for (const int32_t t : outputs) r.append_output_token(t);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), outputs.begin(), outputs.end());
  EXPECT_EQ(std::vector<int32_t>(r.all_token_ids().begin(), r.all_token_ids().end()), all);
  EXPECT_EQ(std::vector<int32_t>(r.prompt_token_ids().begin(), r.prompt_token_ids().end()), prompt);
  EXPECT_EQ(std::vector<int32_t>(r.output_token_ids().begin(), r.output_token_ids().end()),
            outputs);
  EXPECT_EQ(r.arrival_index(), 7);
  ASSERT_NE(r.generator(), nullptr);
  std::mt19937_64 same(*params.seed);
  EXPECT_EQ((*r.generator())(), same());
  EXPECT_THROW(r.set_num_computed_tokens(r.num_tokens() + 1), Error);
  EXPECT_THROW(r.finish(RequestStatus::kRunning, ""), Error);
  EXPECT_EQ(request_status_name(RequestStatus::kFinishedRejected), "finished_rejected");
  SamplingParams unseeded;
  Request u("u", prompt, unseeded, 0, kv::BlockTable(pool, layout));
  EXPECT_EQ(u.generator(), nullptr);
}

}  // namespace
}  // namespace ctxpar::engine
