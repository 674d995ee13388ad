// Scheduler: continuous batching with chunked prefill and recompute preemption, vLLM v1
// semantics (DESIGN.md §6). It runs on rank 0 only; what it decides each step is broadcast.
//
// A step is a token budget shared by requests. Each step:
//   1. running requests, decodes (one pending token) first, then unfinished prefills, oldest
//      first within each group, each taking min(pending tokens, budget left);
//   2. if nothing was preempted, waiting requests in arrival order (preempted ones at the
//      front) while a request slot, budget and KV blocks are left; with chunked prefill a
//      prompt longer than the budget left gets a chunk of it.
// Every scheduled request's block table is grown to cover num_computed + num_new tokens, in
// virtual blocks of B·N positions (one id valid on every DCP rank). When a running request's
// table cannot grow, the youngest running request is preempted by recompute (blocks freed,
// computed tokens forgotten, back at the front of the waiting queue) until it fits or the
// request itself was the youngest and is preempted; a waiting request that does not fit
// just waits. The oldest running request can always grow (a request never outgrows the pool,
// see max_request_len()), so every request finishes.
//
// Prefix caching (vLLM v1's automatic prefix caching, config.enable_prefix_caching): a waiting
// request starts on the longest run of cached virtual blocks that begins its tokens (prompt,
// and outputs after a preemption), capped so that at least its last token is computed (its
// logits are sampled): num_computed_tokens starts at that hit, a multiple of B·N. Each step,
// once no more preemption can happen, the full blocks the step computes are registered in the
// pool's cache — a later request of the same step may then hit them, since every layer writes
// the step's KV before it attends. Finishing, aborting and preempting a request free its
// blocks into the cache (tail first), where they stay until the pool reuses them.
//
// Protocol: schedule() -> run the model on the output -> update(output, sampled tokens) ->
// schedule() ... abort() may come at any time; a request aborted while in flight is skipped
// by update(). Not thread-safe: one owner drives it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctxpar/engine/engine_stats.h"
#include "ctxpar/engine/request.h"
#include "ctxpar/engine/sampling_params.h"
#include "ctxpar/engine/scheduler_config.h"
#include "ctxpar/kv/block_pool.h"

namespace ctxpar::engine {

// One request's share of a step: only what changed since the request's previous entry, as in
// vLLM v1's SchedulerOutput. Self-contained (copies, not pointers), so it stays valid whatever
// happens to the request afterwards. The request's whole block table is Request::block_table()
// here and RequestBlockTables on every rank (rebuilt from these deltas).
struct ScheduledEntry {
  RequestId request_id;
  int64_t num_computed_tokens = 0;     // tokens already in the KV cache (context)
  int64_t num_new_tokens = 0;          // >= 1, at positions num_computed_tokens ...
  std::vector<int32_t> new_token_ids;  // [num_new_tokens] the tokens at those positions
  // True on the request's first step with its current table: a new request, or one resumed
  // after preemption. Its table is then exactly new_block_ids; after a prefix-cache hit,
  // num_computed_tokens > 0 and the leading ids are the cached blocks that hold those tokens.
  // False: new_block_ids are appended to the table the request already has.
  bool new_table = false;
  std::vector<int32_t> new_block_ids;  // blocks allocated for this step, in table order
  // This step reaches the request's last token, so its logits are sampled. False for a
  // prefill chunk that leaves part of the sequence for later steps.
  bool samples = false;
  // The logits of every new token are wanted, not just the last one's: the request asks for
  // prompt_logprobs and has no output yet (a prompt being prefilled, or recomputed after a
  // preemption that came before its first token).
  bool all_logits = false;
};

struct SchedulerOutput {
  int64_t step = 0;
  // Decodes first, then unfinished prefills, then newly admitted requests.
  std::vector<ScheduledEntry> entries;
  // Preempted during this step, and finished (any way) since the previous schedule(): a
  // model runner that keeps per-request state drops it for these.
  std::vector<RequestId> preempted_request_ids;
  std::vector<RequestId> finished_request_ids;

  int64_t total_num_new_tokens() const;
  // Leading entries with one new token and a non-empty context (the decode fast path).
  int64_t num_decode_entries() const;
};

// What one step produced for a request that sampled a token.
struct RequestUpdate {
  RequestId request_id;
  int32_t new_token = -1;
  RequestStatus status = RequestStatus::kRunning;  // or the finished_* status it ended with
};

struct SchedulerStats {
  int64_t num_steps = 0;        // schedule() calls
  int64_t num_preemptions = 0;  // since construction
  int32_t num_running = 0;
  int32_t num_waiting = 0;      // including preempted
  int32_t num_blocks = 0;       // per rank, the same on every rank
  int32_t num_used_blocks = 0;  // held by a request; cached blocks nobody holds are free
  int32_t num_free_blocks = 0;
  int32_t num_cached_blocks = 0;  // with a prefix-cache entry, held or free
  PrefixCacheStats prefix_cache;
};

class Scheduler {
 public:
  // num_blocks: KV blocks per rank (the same on every rank), e.g. kv::plan_kv_capacity().
  // Throws ctxpar::Error for an invalid config or num_blocks < 0.
  Scheduler(SchedulerConfig config, int32_t num_blocks);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request and returns kWaiting, or finishes it at once as kFinishedRejected (its
  // finish_message() says why, naming the numbers) when it can never be served: an empty
  // prompt, a negative token id, invalid sampling params, a prompt longer than max_model_len
  // or than the whole KV pool holds. A rejected request is handed out by take_finished().
  // Throws only for an id already held by this scheduler (a caller bug, not a request problem).
  RequestStatus add_request(RequestId id, std::vector<int32_t> prompt_token_ids,
                            SamplingParams params);

  // The next step. Throws if the previous non-empty output has not been update()d.
  SchedulerOutput schedule();

  // Applies the step's results: every scheduled request's computed count advances by its new
  // tokens; a request whose entry samples gets sampled_token_ids[i] (one value per entry,
  // ignored where entries[i].samples is false) and finishes on max_tokens, max_model_len or
  // the KV capacity (length), or — once it has min_tokens outputs — on EOS unless ignore_eos,
  // or on a stop token (stopped). Finished requests free their blocks. Requests aborted
  // since schedule() are skipped.
  // Returns one update per request that got a token, in entry order. Throws, changing
  // nothing, if `output` is not the latest unapplied schedule() result, the sizes differ, an
  // entry does not match its request, or a sampled token is < 0.
  std::vector<RequestUpdate> update(const SchedulerOutput& output,
                                    std::span<const int32_t> sampled_token_ids);

  // Finishes a waiting or running request as kFinishedAborted and frees its blocks. Returns
  // false (changing nothing) for an unknown or already finished id.
  bool abort(const RequestId& id);

  // Hands out every finished request (including rejected and aborted ones) in the order they
  // finished; they hold no blocks and the scheduler forgets them, so their ids are free again.
  std::vector<std::unique_ptr<Request>> take_finished();

  // The request with this id, unfinished or finished and not yet taken; null otherwise.
  // Valid until take_finished().
  const Request* find(const RequestId& id) const;
  // Running in arrival order; waiting in queue order (preempted ones first).
  std::vector<const Request*> running_requests() const;
  std::vector<const Request*> waiting_requests() const;

  bool has_unfinished() const { return !running_.empty() || !waiting_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  SchedulerStats stats() const;

  const SchedulerConfig& config() const { return config_; }
  const kv::BlockPool& block_pool() const { return pool_; }
  // Tokens (prompt + output) one request may reach: min(max_model_len, the pool's token
  // capacity num_blocks·B·N). Capping by the pool is what lets the oldest request always fit.
  int64_t max_request_len() const { return max_request_len_; }

 private:
  std::optional<std::string> rejection_reason(const Request& request) const;
  // Grows request's table to `num_tokens`, preempting the youngest running requests as
  // needed. False when the request preempted itself.
  bool grow_or_preempt(Request& request, int64_t num_tokens, SchedulerOutput& output,
                       int64_t& budget);
  void preempt(Request& request, SchedulerOutput& output, int64_t& budget);
  // The cached blocks that start a waiting request's tokens, in order, at most
  // (num_tokens - 1) / (B·N) of them; empty without prefix caching and for a request with
  // prompt_logprobs (vLLM's rule: those need every prompt position's logits).
  std::vector<int32_t> find_cached_prefix(Request& request);
  // The most new tokens the request may take this step: SchedulerConfig::max_all_logits_tokens
  // while it wants every token's logits (chunked prefill only), else no limit.
  int64_t token_cap(const Request& request) const;
  // Starts a waiting request's table with `cached` and grows it to num_tokens, all or nothing:
  // false, changing nothing, when the free blocks cannot cover the new blocks and the cached
  // ones nobody holds (those leave the free queue too).
  bool start_table(Request& request, std::span<const int32_t> cached, int64_t num_tokens);
  // Registers the request's full blocks among its first num_tokens positions in the prefix
  // cache (no-op without prefix caching).
  void cache_blocks(Request& request, int64_t num_tokens);
  // first_new_block: the table's size before this step grew it (0 with new_table).
  void add_entry(Request& request, int64_t num_new_tokens, bool new_table, int64_t first_new_block,
                 SchedulerOutput& output);
  void schedule_running(SchedulerOutput& output, int64_t& budget);
  void schedule_waiting(SchedulerOutput& output, int64_t& budget);
  // Finishes the request if the token just appended to it ends it (vLLM's check_stop).
  void check_stop(Request& request, int32_t token);
  void finish(Request& request, RequestStatus status, std::string message,
              std::optional<int32_t> stop_token = std::nullopt);
  void remove_from_running(const Request& request);

  SchedulerConfig config_;
  kv::BlockPool pool_;  // declared before the requests, whose tables return blocks to it
  int64_t max_request_len_;

  // Every request not yet taken. running_ / waiting_ point into it.
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<Request*> running_;               // sorted by arrival index
  std::deque<Request*> waiting_;                // FCFS; preempted requests go back to the front
  std::vector<RequestId> finished_order_;       // finished, not yet taken
  std::vector<RequestId> finished_since_step_;  // for SchedulerOutput::finished_request_ids

  int64_t next_arrival_ = 0;
  int64_t next_step_ = 0;
  std::optional<int64_t> unapplied_step_;  // a non-empty output awaiting update()
  int64_t num_preemptions_ = 0;
  PrefixCacheStats prefix_cache_stats_;
};

}  // namespace ctxpar::engine
