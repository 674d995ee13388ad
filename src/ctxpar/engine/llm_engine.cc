#include "ctxpar/engine/llm_engine.h"

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/online_engine.h"

namespace ctxpar::engine {

namespace {

std::string id_of(const GenerationRequest& r, size_t index) {
  return r.id.empty() ? std::to_string(index) : r.id;
}

// Runs `requests` on `engine` to completion (engine ids: id_prefix + id), filling outputs[i]
// for request i (a rejected request finishes as "rejected: <why>" without running). finished
// and generated count on across batches, under mu.
void run_batch(OnlineEngine& engine, const std::vector<GenerationRequest>& requests,
               const std::string& id_prefix, bool record_logits,
               std::vector<GenerationOutput>& outputs, std::mutex& mu, int64_t& finished,
               int64_t& generated) {
  std::condition_variable done;
  outputs.resize(requests.size());
  int64_t want = 0;
  {
    std::lock_guard lock(mu);
    want = finished + static_cast<int64_t>(requests.size());
  }
  std::vector<std::pair<EngineRequest, OutputConsumer>> batch;
  for (size_t i = 0; i < requests.size(); ++i) {
    GenerationOutput& out = outputs[i];
    out.id = id_of(requests[i], i);
    out.prompt_token_ids = requests[i].prompt_token_ids;
    EngineRequest request{.id = id_prefix + out.id,
                          .prompt_token_ids = requests[i].prompt_token_ids,
                          .params = requests[i].params,
                          .return_logits = record_logits};
    if (auto why = engine.problem(request)) {
      out.finish_reason = "rejected: " + *why;
      std::lock_guard lock(mu);
      ++finished;
      continue;
    }
    batch.emplace_back(std::move(request), [&, &out = out](RequestOutput o) {
      std::lock_guard lock(mu);
      out.output_token_ids.insert(out.output_token_ids.end(), o.token_ids.begin(),
                                  o.token_ids.end());
      for (auto& row : o.logits) out.logits.push_back(std::move(row));
      for (auto& scored : o.prompt_logprobs) out.prompt_logprobs.push_back(std::move(scored));
      generated += static_cast<int64_t>(o.token_ids.size());
      if (!o.finished()) return;
      out.finish_reason = std::string(finish_reason_name(*o.finish_reason));
      if (*o.finish_reason == FinishReason::kError) out.finish_reason += ": " + o.finish_message;
      ++finished;
      done.notify_all();
    });
  }
  engine.add_requests(std::move(batch));
  std::unique_lock lock(mu);
  done.wait(lock, [&] { return finished == want; });
}

}  // namespace

GenerationResult generate(const EngineConfig& config,
                          const std::vector<GenerationRequest>& requests,
                          const RunOptions& options) {
  GenerationResult result;
  std::set<std::string> ids;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string id = id_of(requests[i], i);
    CTXPAR_CHECK_INPUT(ids.insert(id).second, "request id '{}' is used twice", id);
  }
  // Filled by the consumers on the engine thread, read by the client thread once all are done.
  std::mutex mu;
  int64_t finished = 0, generated = 0;
  int64_t total = static_cast<int64_t>(requests.size());
  for (const auto& round : options.warmup) total += static_cast<int64_t>(round.size());

  OnlineEngineOptions engine_options;
  if (options.on_step) {
    engine_options.on_step = [&](const StepReport&) {
      std::lock_guard lock(mu);
      options.on_step({finished, total, generated});
    };
  }
  run_online_engine(
      config,
      [&](OnlineEngine& engine) {
        for (size_t w = 0; w < options.warmup.size(); ++w) {
          std::vector<GenerationOutput> dropped;
          run_batch(engine, options.warmup[w], "warmup" + std::to_string(w) + "-", false, dropped,
                    mu, finished, generated);
          for (const GenerationOutput& o : dropped) {
            CTXPAR_CHECK(o.finish_reason.rfind("error", 0) != 0, "warm-up request '{}' failed: {}",
                         o.id, o.finish_reason);
          }
        }
        const EngineStats before = engine.stats();
        run_batch(engine, requests, "", options.record_logits, result.outputs, mu, finished,
                  generated);
        result.stats = counters_since(engine.stats(), before);
      },
      engine_options);
  return result;
}

}  // namespace ctxpar::engine
