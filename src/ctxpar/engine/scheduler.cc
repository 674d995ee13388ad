#include "ctxpar/engine/scheduler.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {
namespace {

int64_t pending_tokens(const Request& request) {
  return request.num_tokens() - request.num_computed_tokens();
}

}  // namespace

int64_t SchedulerOutput::total_num_new_tokens() const {
  int64_t total = 0;
  for (const ScheduledEntry& e : entries) total += e.num_new_tokens;
  return total;
}

int64_t SchedulerOutput::num_decode_entries() const {
  int64_t n = 0;
  while (n < static_cast<int64_t>(entries.size()) &&
         entries[static_cast<size_t>(n)].num_new_tokens == 1 &&
         entries[static_cast<size_t>(n)].num_computed_tokens > 0) {
    ++n;
  }
  return n;
}

Scheduler::Scheduler(SchedulerConfig config, int32_t num_blocks)
    : config_(std::move(config)), pool_(num_blocks) {
  config_.validate();
  const int64_t capacity = int64_t{num_blocks} * config_.layout.tokens_per_virtual_block();
  max_request_len_ = std::min(config_.max_model_len, capacity);
}

// Out of line: Request is complete here.
Scheduler::~Scheduler() = default;

RequestStatus Scheduler::add_request(RequestId id, std::vector<int32_t> prompt_token_ids,
                                     SamplingParams params) {
  CTXPAR_CHECK(!requests_.contains(id),
               "request id '{}' is already in use; ids must be unique among the requests a "
               "scheduler holds (unfinished, or finished and not yet taken)",
               id);
  auto request = std::make_unique<Request>(id, std::move(prompt_token_ids), std::move(params),
                                           next_arrival_++, kv::BlockTable(pool_, config_.layout));
  Request& r = *request;
  requests_.emplace(id, std::move(request));
  if (auto reason = rejection_reason(r)) {
    finish(r, RequestStatus::kFinishedRejected, std::move(*reason));
    return r.status();
  }
  waiting_.push_back(&r);
  return r.status();
}

std::optional<std::string> Scheduler::rejection_reason(const Request& request) const {
  const int64_t prompt_len = request.num_prompt_tokens();
  if (prompt_len == 0) return "the prompt has 0 tokens; a request needs at least 1";
  const auto prompt = request.prompt_token_ids();
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0) {
      return fmt::format("prompt token {} at position {} is negative; token ids are >= 0",
                         prompt[i], i);
    }
  }
  if (auto problem = request.sampling_params().problem()) {
    return "invalid sampling params: " + *problem;
  }
  if (prompt_len > config_.max_model_len) {
    return fmt::format("the prompt has {} tokens, more than max_model_len {}", prompt_len,
                       config_.max_model_len);
  }
  const int64_t per_block = config_.layout.tokens_per_virtual_block();
  if (prompt_len > int64_t{pool_.num_blocks()} * per_block) {
    return fmt::format(
        "the prompt has {} tokens, more than the whole KV cache holds: {} blocks of {} "
        "positions (B={} x N={}) = {} tokens",
        prompt_len, pool_.num_blocks(), per_block, config_.layout.block_size(),
        config_.layout.dcp_size(), int64_t{pool_.num_blocks()} * per_block);
  }
  return std::nullopt;
}

SchedulerOutput Scheduler::schedule() {
  CTXPAR_CHECK(!unapplied_step_,
               "step {} has not been applied; call update() with its output before scheduling "
               "the next step",
               unapplied_step_.value_or(-1));
  SchedulerOutput output;
  output.step = next_step_++;
  output.finished_request_ids = std::exchange(finished_since_step_, {});
  int64_t budget = config_.max_num_batched_tokens;
  schedule_running(output, budget);
  // No preemption happens after this point, so these blocks will be computed by this step.
  for (const ScheduledEntry& e : output.entries) {
    cache_blocks(*requests_.at(e.request_id), e.num_computed_tokens + e.num_new_tokens);
  }
  // As vLLM: a step that had to preempt is short of blocks, so admitting more would only
  // cause more preemption.
  if (output.preempted_request_ids.empty()) schedule_waiting(output, budget);
  if (!output.entries.empty()) unapplied_step_ = output.step;
  return output;
}

void Scheduler::schedule_running(SchedulerOutput& output, int64_t& budget) {
  // Decodes first (the attention fast path takes the leading run of decodes, and they keep
  // latency low), then prefills that earlier steps left unfinished. Oldest first in each.
  std::vector<Request*> order;
  order.reserve(running_.size());
  for (Request* r : running_) {
    if (pending_tokens(*r) == 1) order.push_back(r);
  }
  for (Request* r : running_) {
    if (pending_tokens(*r) > 1) order.push_back(r);
  }
  for (Request* r : order) {
    if (budget == 0) break;
    if (r->status() != RequestStatus::kRunning) continue;  // preempted earlier in this step
    const int64_t n = std::min({pending_tokens(*r), budget, token_cap(*r)});
    const int64_t blocks_before = r->block_table().num_blocks();
    if (!grow_or_preempt(*r, r->num_computed_tokens() + n, output, budget)) continue;
    add_entry(*r, n, /*new_table=*/false, blocks_before, output);
    budget -= n;
  }
}

void Scheduler::schedule_waiting(SchedulerOutput& output, int64_t& budget) {
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    Request& r = *waiting_.front();
    // Waiting requests have nothing computed: a preempted one re-prefills prompt and outputs,
    // from the end of its cached prefix.
    const std::vector<int32_t> cached = find_cached_prefix(r);
    const int64_t hit =
        static_cast<int64_t>(cached.size()) * config_.layout.tokens_per_virtual_block();
    const int64_t pending = r.num_tokens() - hit;
    if (!config_.enable_chunked_prefill && pending > budget) break;
    const int64_t n = std::min({pending, budget, token_cap(r)});
    // FCFS: a request that does not fit blocks the ones behind it, and waiting requests never
    // preempt running ones; blocks come back as running requests finish.
    if (!start_table(r, cached, hit + n)) break;
    waiting_.pop_front();
    r.set_status(RequestStatus::kRunning);
    r.set_num_computed_tokens(hit);
    if (r.num_preemptions() == 0) r.set_num_cached_tokens(hit);
    if (config_.enable_prefix_caching) {
      PrefixCacheStats& st = prefix_cache_stats_;
      const bool resumed = r.num_preemptions() > 0;
      ++(resumed ? st.preempted_requests : st.requests);
      (resumed ? st.preempted_queries : st.queries) += r.num_tokens();
      (resumed ? st.preempted_hits : st.hits) += hit;
    }
    const auto pos = std::upper_bound(
        running_.begin(), running_.end(), r.arrival_index(),
        [](int64_t arrival, const Request* other) { return arrival < other->arrival_index(); });
    running_.insert(pos, &r);
    add_entry(r, n, /*new_table=*/true, 0, output);
    cache_blocks(r, hit + n);
    budget -= n;
  }
}

int64_t Scheduler::token_cap(const Request& request) const {
  const bool all_logits =
      request.sampling_params().prompt_logprobs && request.num_output_tokens() == 0;
  // Chunked even with chunked prefill off: the step's logits rows are [tokens, vocab] f32 on
  // every rank, which for a whole long prompt would not fit in memory.
  return all_logits ? config_.max_all_logits_tokens : std::numeric_limits<int64_t>::max();
}

std::vector<int32_t> Scheduler::find_cached_prefix(Request& request) {
  std::vector<int32_t> cached;
  if (!config_.enable_prefix_caching || request.sampling_params().prompt_logprobs) return cached;
  const int64_t per_block = config_.layout.tokens_per_virtual_block();
  request.hash_full_blocks(config_.block_hash, per_block);
  // At least the last token is computed: its logits are what the request samples next.
  const int64_t max_blocks = (request.num_tokens() - 1) / per_block;
  const auto hashes = request.block_hashes();
  const auto tokens = request.all_token_ids();
  int32_t parent = -1;
  for (int64_t j = 0; j < max_blocks; ++j) {
    const auto block =
        tokens.subspan(static_cast<size_t>(j * per_block), static_cast<size_t>(per_block));
    const std::optional<int32_t> id =
        pool_.find_cached(hashes[static_cast<size_t>(j)], parent, block);
    if (!id) break;
    cached.push_back(*id);
    parent = *id;
  }
  return cached;
}

bool Scheduler::start_table(Request& request, std::span<const int32_t> cached, int64_t num_tokens) {
  kv::BlockTable& table = request.mutable_block_table();
  const int64_t fresh =
      config_.layout.num_virtual_blocks(num_tokens) - static_cast<int64_t>(cached.size());
  const auto reclaimed = std::count_if(cached.begin(), cached.end(),
                                       [&](int32_t id) { return pool_.ref_count(id) == 0; });
  if (fresh + reclaimed > pool_.free_count()) return false;
  // Touch first: a cached block nobody holds must leave the free queue before grow() takes
  // blocks from its front.
  table.append_cached(cached);
  CTXPAR_CHECK(table.grow(num_tokens), "request '{}' could not grow to {} tokens after its check",
               request.id(), num_tokens);
  return true;
}

void Scheduler::cache_blocks(Request& request, int64_t num_tokens) {
  if (!config_.enable_prefix_caching) return;
  request.hash_full_blocks(config_.block_hash, config_.layout.tokens_per_virtual_block());
  request.mutable_block_table().cache_full_blocks(num_tokens, request.block_hashes(),
                                                  request.all_token_ids());
}

bool Scheduler::grow_or_preempt(Request& request, int64_t num_tokens, SchedulerOutput& output,
                                int64_t& budget) {
  while (!request.mutable_block_table().grow(num_tokens)) {
    // running_ is sorted by arrival and still holds `request`, so it is never empty here.
    Request& victim = *running_.back();
    preempt(victim, output, budget);
    if (&victim == &request) return false;
  }
  return true;
}

void Scheduler::preempt(Request& request, SchedulerOutput& output, int64_t& budget) {
  // A victim scheduled earlier in this step leaves the batch and gives its tokens back.
  auto& entries = output.entries;
  const auto it = std::find_if(entries.begin(), entries.end(), [&](const ScheduledEntry& e) {
    return e.request_id == request.id();
  });
  if (it != entries.end()) {
    budget += it->num_new_tokens;
    entries.erase(it);
  }
  remove_from_running(request);
  request.preempt();
  // Preempting youngest first and pushing each to the front keeps the queue in arrival order.
  waiting_.push_front(&request);
  output.preempted_request_ids.push_back(request.id());
  ++num_preemptions_;
}

void Scheduler::add_entry(Request& request, int64_t num_new_tokens, bool new_table,
                          int64_t first_new_block, SchedulerOutput& output) {
  const int64_t computed = request.num_computed_tokens();
  const auto tokens = request.all_token_ids().subspan(static_cast<size_t>(computed),
                                                      static_cast<size_t>(num_new_tokens));
  const auto added = request.block_table().ids().subspan(static_cast<size_t>(first_new_block));
  output.entries.push_back(ScheduledEntry{
      .request_id = request.id(),
      .num_computed_tokens = computed,
      .num_new_tokens = num_new_tokens,
      .new_token_ids = std::vector<int32_t>(tokens.begin(), tokens.end()),
      .new_table = new_table,
      .new_block_ids = std::vector<int32_t>(added.begin(), added.end()),
      .samples = computed + num_new_tokens == request.num_tokens(),
      .all_logits =
          request.sampling_params().prompt_logprobs.has_value() && request.num_output_tokens() == 0,
  });
}

std::vector<RequestUpdate> Scheduler::update(const SchedulerOutput& output,
                                             std::span<const int32_t> sampled_token_ids) {
  CTXPAR_CHECK(sampled_token_ids.size() == output.entries.size(),
               "update() got {} sampled tokens for {} scheduled entries; pass one per entry",
               sampled_token_ids.size(), output.entries.size());
  if (output.entries.empty()) return {};
  CTXPAR_CHECK(unapplied_step_ == output.step,
               "update() got the output of step {} but the step awaiting update is {}; apply "
               "each schedule() result exactly once, in order",
               output.step,
               unapplied_step_ ? fmt::format("{}", *unapplied_step_) : std::string("none"));
  // Check everything before changing anything, so a rejected call leaves the step pending.
  std::vector<Request*> live(output.entries.size(), nullptr);
  for (size_t i = 0; i < output.entries.size(); ++i) {
    const ScheduledEntry& e = output.entries[i];
    const auto it = requests_.find(e.request_id);
    if (it == requests_.end() || it->second->is_finished()) continue;  // aborted in flight
    Request& r = *it->second;
    CTXPAR_CHECK(
        r.status() == RequestStatus::kRunning && r.num_computed_tokens() == e.num_computed_tokens,
        "entry {} of step {} (request '{}', {} computed) does not match the request "
        "({}, {} computed); the output was altered",
        i, output.step, e.request_id, e.num_computed_tokens, request_status_name(r.status()),
        r.num_computed_tokens());
    CTXPAR_CHECK(!e.samples || sampled_token_ids[i] >= 0,
                 "sampled token {} for request '{}' (entry {}) is negative; token ids are >= 0",
                 sampled_token_ids[i], e.request_id, i);
    live[i] = &r;
  }
  unapplied_step_.reset();

  std::vector<RequestUpdate> updates;
  for (size_t i = 0; i < output.entries.size(); ++i) {
    const ScheduledEntry& e = output.entries[i];
    Request* r = live[i];
    if (r == nullptr) continue;
    r->set_num_computed_tokens(e.num_computed_tokens + e.num_new_tokens);
    if (!e.samples) continue;
    const int32_t token = sampled_token_ids[i];
    r->append_output_token(token);
    check_stop(*r, token);
    updates.push_back(RequestUpdate{r->id(), token, r->status()});
  }
  return updates;
}

void Scheduler::check_stop(Request& request, int32_t token) {
  // Length first, as vLLM: the token that hits a limit is kept whatever it is.
  const SamplingParams& params = request.sampling_params();
  if (request.num_output_tokens() >= params.max_tokens) {
    finish(request, RequestStatus::kFinishedLength,
           fmt::format("reached max_tokens {}", params.max_tokens));
  } else if (request.num_tokens() >= max_request_len_) {
    finish(request, RequestStatus::kFinishedLength,
           max_request_len_ == config_.max_model_len
               ? fmt::format("reached max_model_len {}", config_.max_model_len)
               : fmt::format("reached the KV cache capacity of {} tokens", max_request_len_));
  } else if (request.num_output_tokens() < params.min_tokens) {
    // min_tokens holds back EOS and stop tokens (the sampler masks them too).
  } else if (!params.ignore_eos && params.is_eos(token)) {
    finish(request, RequestStatus::kFinishedStopped, fmt::format("EOS token {}", token), token);
  } else if (params.is_stop_token(token)) {
    finish(request, RequestStatus::kFinishedStopped, fmt::format("stop token {}", token), token);
  }
}

void Scheduler::finish(Request& request, RequestStatus status, std::string message,
                       std::optional<int32_t> stop_token) {
  if (request.status() == RequestStatus::kRunning) remove_from_running(request);
  request.finish(status, std::move(message), stop_token);
  finished_order_.push_back(request.id());
  finished_since_step_.push_back(request.id());
}

void Scheduler::remove_from_running(const Request& request) {
  const auto it = std::find(running_.begin(), running_.end(), &request);
  CTXPAR_CHECK(it != running_.end(), "request '{}' is not running", request.id());
  running_.erase(it);
}

bool Scheduler::abort(const RequestId& id) {
  const auto it = requests_.find(id);
  if (it == requests_.end() || it->second->is_finished()) return false;
  Request& r = *it->second;
  if (r.status() != RequestStatus::kRunning) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &r));
  }
  finish(r, RequestStatus::kFinishedAborted, "aborted by the caller");
  return true;
}

std::vector<std::unique_ptr<Request>> Scheduler::take_finished() {
  std::vector<std::unique_ptr<Request>> out;
  out.reserve(finished_order_.size());
  for (const RequestId& id : finished_order_) {
    auto node = requests_.extract(id);
    out.push_back(std::move(node.mapped()));
  }
  finished_order_.clear();
  return out;
}

const Request* Scheduler::find(const RequestId& id) const {
  const auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

std::vector<const Request*> Scheduler::running_requests() const {
  return {running_.begin(), running_.end()};
}

std::vector<const Request*> Scheduler::waiting_requests() const {
  return {waiting_.begin(), waiting_.end()};
}

SchedulerStats Scheduler::stats() const {
  return SchedulerStats{
      .num_steps = next_step_,
      .num_preemptions = num_preemptions_,
      .num_running = num_running(),
      .num_waiting = num_waiting(),
      .num_blocks = pool_.num_blocks(),
      .num_used_blocks = pool_.used_count(),
      .num_free_blocks = pool_.free_count(),
      .num_cached_blocks = pool_.cached_count(),
      .prefix_cache = prefix_cache_stats_,
  };
}

}  // namespace ctxpar::engine
