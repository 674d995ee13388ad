#include "ctxpar/engine/step_plan.h"

#include <cstring>
#include <utility>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {
namespace {

class Writer {
 public:
  void i64(int64_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void u8(uint8_t v) { bytes_.push_back(v); }
  template <typename T>
  void list(const std::vector<T>& v) {
    i64(static_cast<int64_t>(v.size()));
    raw(v.data(), v.size() * sizeof(T));
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& b) : bytes_(b) {}
  int64_t i64() {
    int64_t v;
    raw(&v, sizeof v);
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    raw(&v, sizeof v);
    return v;
  }
  uint8_t u8() {
    uint8_t v;
    raw(&v, 1);
    return v;
  }
  template <typename T>
  std::vector<T> list() {
    const int64_t n = i64();
    CTXPAR_CHECK(n >= 0 && static_cast<size_t>(n) <= (bytes_.size() - at_) / sizeof(T),
                 "step plan: list of {} values of {} bytes does not fit the {} bytes left", n,
                 sizeof(T), bytes_.size() - at_);
    std::vector<T> v(static_cast<size_t>(n));
    raw(v.data(), v.size() * sizeof(T));
    return v;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void raw(void* p, size_t n) {
    CTXPAR_CHECK(at_ + n <= bytes_.size(), "step plan truncated at byte {} of {}", at_,
                 bytes_.size());
    if (n == 0) return;  // an empty list's data() may be null, which memcpy must not get
    std::memcpy(p, bytes_.data() + at_, n);
    at_ += n;
  }
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

}  // namespace

std::vector<uint8_t> StepPlan::encode() const {
  Writer w;
  w.u8(static_cast<uint8_t>(command));
  w.list(finished);
  w.list(preempted);
  w.i64(static_cast<int64_t>(entries.size()));
  for (const Entry& e : entries) {
    w.u64(e.request);
    w.i64(e.num_computed);
    w.u8(
        static_cast<uint8_t>((e.samples ? 1 : 0) | (e.new_table ? 2 : 0) | (e.all_logits ? 4 : 0)));
    w.list(e.token_ids);
    w.list(e.new_block_ids);
  }
  return w.take();
}

StepPlan StepPlan::decode(const std::vector<uint8_t>& bytes) {
  Reader r(bytes);
  StepPlan plan;
  const uint8_t command = r.u8();
  CTXPAR_CHECK(command <= 1, "step plan: unknown command {}", command);
  plan.command = static_cast<Command>(command);
  plan.finished = r.list<RequestHandle>();
  plan.preempted = r.list<RequestHandle>();
  const int64_t n = r.i64();
  CTXPAR_CHECK(n >= 0 && n <= static_cast<int64_t>(bytes.size()),
               "step plan: {} entries in {} bytes", n, bytes.size());
  for (int64_t i = 0; i < n; ++i) {
    Entry e;
    e.request = r.u64();
    e.num_computed = r.i64();
    const uint8_t flags = r.u8();
    CTXPAR_CHECK(flags <= 7, "step plan: entry {} has unknown flags {}", i, flags);
    e.samples = (flags & 1) != 0;
    e.new_table = (flags & 2) != 0;
    e.all_logits = (flags & 4) != 0;
    e.token_ids = r.list<int32_t>();
    e.new_block_ids = r.list<int32_t>();
    plan.entries.push_back(std::move(e));
  }
  CTXPAR_CHECK(r.done(), "step plan: {} trailing bytes", bytes.size());
  return plan;
}

int64_t StepPlan::num_tokens() const {
  int64_t n = 0;
  for (const Entry& e : entries) n += static_cast<int64_t>(e.token_ids.size());
  return n;
}

int64_t StepPlan::num_logit_rows() const {
  int64_t n = 0;
  for (const Entry& e : entries) {
    n += e.all_logits ? static_cast<int64_t>(e.token_ids.size()) : (e.samples ? 1 : 0);
  }
  return n;
}

StepPlan StepPlanBuilder::build(const SchedulerOutput& output) {
  StepPlan plan;
  plan.finished = std::exchange(finished_, {});
  for (const RequestId& id : output.preempted_request_ids) {
    // A request preempted in the step that first scheduled it never reached the ranks.
    const auto it = handles_.find(id);
    if (it != handles_.end()) plan.preempted.push_back(it->second);
  }
  plan.entries.reserve(output.entries.size());
  for (const ScheduledEntry& e : output.entries) {
    const auto [it, added] = handles_.try_emplace(e.request_id, next_handle_);
    if (added) ++next_handle_;
    CTXPAR_CHECK(!added || e.new_table,
                 "request '{}' is scheduled for the first time without a new table", e.request_id);
    plan.entries.push_back(StepPlan::Entry{.request = it->second,
                                           .num_computed = e.num_computed_tokens,
                                           .token_ids = e.new_token_ids,
                                           .new_table = e.new_table,
                                           .new_block_ids = e.new_block_ids,
                                           .samples = e.samples,
                                           .all_logits = e.all_logits});
  }
  return plan;
}

void StepPlanBuilder::finished(const RequestId& id) {
  const auto it = handles_.find(id);
  if (it == handles_.end()) return;  // never scheduled: no rank knows it
  finished_.push_back(it->second);
  handles_.erase(it);
}

RequestHandle StepPlanBuilder::handle(const RequestId& id) const {
  const auto it = handles_.find(id);
  CTXPAR_CHECK(it != handles_.end(), "request '{}' has no handle: never scheduled, or finished",
               id);
  return it->second;
}

}  // namespace ctxpar::engine
