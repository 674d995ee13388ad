#include "ctxpar/engine/llm_engine.h"

#include <condition_variable>
#include <mutex>
#include <set>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/online_engine.h"

namespace ctxpar::engine {

GenerationResult generate(const EngineConfig& config,
                          const std::vector<GenerationRequest>& requests,
                          const RunOptions& options) {
  GenerationResult result;
  std::set<std::string> ids;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string id = requests[i].id.empty() ? std::to_string(i) : requests[i].id;
    CTXPAR_CHECK_INPUT(ids.insert(id).second, "request id '{}' is used twice", id);
  }
  // Filled by the consumers on the engine thread, read by the client thread once all are done.
  std::mutex mu;
  std::condition_variable done;
  int64_t finished = 0, generated = 0;

  OnlineEngineOptions engine_options;
  if (options.on_step) {
    engine_options.on_step = [&](const StepReport&) {
      std::lock_guard lock(mu);
      options.on_step({finished, static_cast<int64_t>(requests.size()), generated});
    };
  }
  run_online_engine(
      config,
      [&](OnlineEngine& engine) {
        result.outputs.resize(requests.size());
        std::vector<std::pair<EngineRequest, OutputConsumer>> batch;
        for (size_t i = 0; i < requests.size(); ++i) {
          GenerationOutput& out = result.outputs[i];
          out.id = requests[i].id.empty() ? std::to_string(i) : requests[i].id;
          out.prompt_token_ids = requests[i].prompt_token_ids;
          EngineRequest request{.id = out.id,
                                .prompt_token_ids = requests[i].prompt_token_ids,
                                .params = requests[i].params,
                                .return_logits = options.record_logits};
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
            generated += static_cast<int64_t>(o.token_ids.size());
            if (!o.finished()) return;
            out.finish_reason = std::string(finish_reason_name(*o.finish_reason));
            if (*o.finish_reason == FinishReason::kError)
              out.finish_reason += ": " + o.finish_message;
            ++finished;
            done.notify_all();
          });
        }
        engine.add_requests(std::move(batch));
        std::unique_lock lock(mu);
        done.wait(lock, [&] { return finished == static_cast<int64_t>(requests.size()); });
        lock.unlock();
        result.stats = engine.stats();
      },
      engine_options);
  return result;
}

}  // namespace ctxpar::engine
