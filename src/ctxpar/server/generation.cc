#include "ctxpar/server/generation.h"

#include <fmt/format.h>

#include <utility>

#include "ctxpar/core/error.h"

namespace ctxpar::server {
namespace {

double seconds_between(engine::Clock::time_point a, engine::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

Generation::Generation(engine::OnlineEngine& engine, ServerMetrics& metrics,
                       const tokenizer::Tokenizer& tokenizer, std::string request_id,
                       std::vector<ChoiceRequest> choices, const StopStrings& stop,
                       bool skip_special_tokens, engine::Clock::time_point arrival)
    : engine_(engine), metrics_(metrics), request_id_(std::move(request_id)), arrival_(arrival) {
  for (size_t i = 0; i < choices.size(); ++i) {
    StopStrings own = stop;
    own.min_tokens = choices[i].params.min_tokens;
    OutputText text(tokenizer, choices[i].prompt_token_ids, own, skip_special_tokens);
    choices_.push_back(std::make_unique<Choice>(
        std::move(choices[i]), fmt::format("{}-{}", request_id_, i), std::move(text)));
    choices_.back()->timing.queued = arrival_;
  }
}

Generation::~Generation() {
  if (!submitted_) return;
  abort();
  // The consumers point into this object: wait until the engine delivered every last output.
  // An engine that stops or fails ends every request, so this wait ends too.
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return num_released_ == choices_.size(); });
}

engine::OutputConsumer Generation::consumer(size_t i) {
  return [this, i](engine::RequestOutput output) {
    Choice& c = *choices_[i];
    const auto now = engine::Clock::now();
    if (!output.token_ids.empty()) {
      if (!c.got_first) {
        metrics_.first_token(seconds_between(arrival_, now), output.num_prompt_tokens);
        c.got_first = true;
      } else {
        metrics_.inter_token(seconds_between(c.last_output, now));
      }
      c.last_output = now;
      metrics_.generated(static_cast<int64_t>(output.token_ids.size()));
    }
    if (output.finished()) {
      const std::string_view reason = c.stopped_by_string.load()
                                          ? std::string_view("stop")
                                          : engine::finish_reason_name(*output.finish_reason);
      metrics_.finished(reason, seconds_between(arrival_, now));
    }
    const bool last = output.finished();
    {
      std::lock_guard lock(mu_);
      queue_.push_back({i, std::move(output), now});
      if (last) ++num_released_;
    }
    cv_.notify_all();
  };
}

void Generation::submit() {
  std::vector<std::pair<engine::EngineRequest, engine::OutputConsumer>> batch;
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = *choices_[i];
    batch.emplace_back(engine::EngineRequest{.id = c.engine_id,
                                             .prompt_token_ids = c.request.prompt_token_ids,
                                             .params = c.request.params,
                                             .arrival_time = arrival_},
                       consumer(i));
  }
  engine_.add_requests(std::move(batch));
  submitted_ = true;
}

std::vector<ChoiceDelta> Generation::next(std::chrono::milliseconds timeout) {
  std::deque<Queued> taken;
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !queue_.empty(); });
    taken.swap(queue_);
  }
  std::vector<ChoiceDelta> deltas;
  for (Queued& q : taken) {
    if (choices_[q.choice]->done) continue;  // ended by a stop string: the rest is dropped
    deltas.push_back(apply(q.choice, std::move(q.output), q.received));
  }
  return deltas;
}

ChoiceDelta Generation::apply(size_t i, engine::RequestOutput output,
                              engine::Clock::time_point received) {
  Choice& c = *choices_[i];
  ChoiceDelta d;
  d.choice = i;
  if (output.first_scheduled) c.timing.scheduled = output.first_scheduled;
  const OutputText::Delta text =
      c.text.add(output.token_ids, output.finished(),
                 output.finished() && *output.finish_reason == engine::FinishReason::kStop);
  d.text = text.text;
  // Only the tokens up to a matched stop string count.
  const auto kept = static_cast<size_t>(text.num_tokens - c.counted);
  d.token_ids.assign(output.token_ids.begin(),
                     output.token_ids.begin() + static_cast<std::ptrdiff_t>(kept));
  if (!output.logprobs.empty()) {
    d.logprobs.assign(output.logprobs.begin(),
                      output.logprobs.begin() + static_cast<std::ptrdiff_t>(kept));
  }
  if (kept > 0) {
    if (!c.timing.first_token) c.timing.first_token = received;
    c.timing.last_token = received;
  }
  d.prompt_logprobs = std::move(output.prompt_logprobs);
  d.num_cached_tokens = output.num_cached_tokens;
  c.counted = text.num_tokens;
  if (text.stop_string) {
    c.stopped_by_string = true;
    engine_.abort(c.engine_id);
    d.finish_reason = "stop";
    d.stop_reason = *text.stop_string;
  } else if (output.finished()) {
    switch (*output.finish_reason) {
      case engine::FinishReason::kStop:
        d.finish_reason = "stop";
        if (output.stop_token_id) d.stop_reason = *output.stop_token_id;
        break;
      case engine::FinishReason::kLength:
        d.finish_reason = "length";
        break;
      case engine::FinishReason::kAbort:
        d.finish_reason = "abort";
        break;
      case engine::FinishReason::kError:
        d.finish_reason = "error";
        d.error = output.finish_message;
        break;
    }
  }
  if (d.finish_reason) {
    c.done = true;
    ++num_done_;
    d.timing = c.timing;
  }
  return d;
}

void Generation::abort() {
  for (const auto& c : choices_) {
    if (!c->done) engine_.abort(c->engine_id);
  }
}

}  // namespace ctxpar::server
