// Drives a Scheduler through a random workload with the FakeModel, checking every invariant
// after every step, and computes what each request must end with.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "ctxpar/engine/request.h"
#include "ctxpar/engine/sampling_params.h"
#include "ctxpar/engine/scheduler.h"

namespace ctxpar::engine::testing {

struct WorkloadRequest {
  RequestId id;
  std::vector<int32_t> prompt;
  SamplingParams params;
  int64_t arrival_step = 0;  // the driver adds it before scheduling this step
};

struct WorkloadShape {
  int num_requests = 100;
  int64_t max_prompt_len = 40;  // prompts are 1..max_prompt_len, a few longer or empty
  int64_t max_new_tokens = 40;  // max_tokens is 1..max_new_tokens
  int64_t arrival_spread = 50;  // arrival steps are 0..arrival_spread
  double eos_weight = 0.5;      // share of requests that stop at EOS (the rest ignore it)
  int32_t vocab_size = 64;
  // Share of prompts that begin with some earlier prompt's first tokens (prefix-cache hits).
  double shared_prefix_weight = 0.0;
};

// Requests sorted by arrival step, ids "r0", "r1", ...
std::vector<WorkloadRequest> random_workload(std::mt19937_64& rng, const WorkloadShape& shape);

// What a request must end with when the FakeModel generates for it alone.
struct ExpectedResult {
  RequestStatus status;
  std::vector<int32_t> output;
};
ExpectedResult expected_result(const WorkloadRequest& request, const Scheduler& scheduler,
                               int32_t vocab_size);

struct DriveOptions {
  double abort_probability = 0.0;  // per step, of aborting a random live request
  int64_t max_steps = 200000;      // a scheduler that stops making progress fails here
};

struct DriveResult {
  std::map<RequestId, std::unique_ptr<Request>> finished;
  int64_t steps = 0;
  int64_t max_entries_in_a_step = 0;
  int64_t partial_chunks = 0;  // prefill entries that did not reach the end of the sequence
  int64_t restarts = 0;        // entries that restarted a preempted request
  int64_t hit_tokens = 0;      // computed tokens that requests started with (cache hits)
  // Each request's entries that started a table (its first, and one per resumption).
  std::map<RequestId, std::vector<ScheduledEntry>> starts;
};

// Runs the workload to the end, checking after every schedule(): the step limits, decodes
// before unfinished prefills before admissions (arrival order within each), each entry's
// computed count against the driver's own count (a table starts only for a new or preempted
// request: at 0, or with prefix caching after whole cached blocks, never the last token, whose
// rows then hold the request's own tokens), its tokens, sampling flag and block table (exactly
// the virtual blocks of num_computed + num_new), the queues' order and states, and that the
// pool's used blocks are exactly the running requests' blocks, each held once per holder (more
// than one only for cached blocks). Returns every finished request.
// Failures are gtest failures; the drive stops at the first step that has one.
DriveResult drive(Scheduler& scheduler, const std::vector<WorkloadRequest>& workload,
                  std::mt19937_64& rng, int32_t vocab_size, const DriveOptions& options);

// Checks every finished request against expected_result(): status and outputs exactly, an
// aborted one's outputs a prefix, a rejected one's message naming its prompt length.
void check_results(const DriveResult& result, const std::vector<WorkloadRequest>& workload,
                   const Scheduler& scheduler, int32_t vocab_size);

}  // namespace ctxpar::engine::testing
