#include "ctxpar/engine/step_plan.h"

#include <cstring>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {
namespace {

class Writer {
 public:
  void i64(int64_t v) { raw(&v, sizeof v); }
  void u8(uint8_t v) { bytes_.push_back(v); }
  void i32s(const std::vector<int32_t>& v) {
    i64(static_cast<int64_t>(v.size()));
    raw(v.data(), v.size() * sizeof(int32_t));
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
  uint8_t u8() {
    uint8_t v;
    raw(&v, 1);
    return v;
  }
  std::vector<int32_t> i32s() {
    const int64_t n = i64();
    CTXPAR_CHECK(n >= 0 && static_cast<size_t>(n) <= (bytes_.size() - at_) / sizeof(int32_t),
                 "step plan: list of {} ints does not fit the {} bytes left", n,
                 bytes_.size() - at_);
    std::vector<int32_t> v(static_cast<size_t>(n));
    raw(v.data(), v.size() * sizeof(int32_t));
    return v;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void raw(void* p, size_t n) {
    CTXPAR_CHECK(at_ + n <= bytes_.size(), "step plan truncated at byte {} of {}", at_,
                 bytes_.size());
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
  w.i64(static_cast<int64_t>(entries.size()));
  for (const Entry& e : entries) {
    w.i64(e.num_computed);
    w.u8(e.samples ? 1 : 0);
    w.i32s(e.token_ids);
    w.i32s(e.block_table);
  }
  return w.take();
}

StepPlan StepPlan::decode(const std::vector<uint8_t>& bytes) {
  Reader r(bytes);
  StepPlan plan;
  const uint8_t command = r.u8();
  CTXPAR_CHECK(command <= 1, "step plan: unknown command {}", command);
  plan.command = static_cast<Command>(command);
  const int64_t n = r.i64();
  CTXPAR_CHECK(n >= 0 && n <= static_cast<int64_t>(bytes.size()),
               "step plan: {} entries in {} bytes", n, bytes.size());
  for (int64_t i = 0; i < n; ++i) {
    Entry e;
    e.num_computed = r.i64();
    e.samples = r.u8() != 0;
    e.token_ids = r.i32s();
    e.block_table = r.i32s();
    plan.entries.push_back(std::move(e));
  }
  CTXPAR_CHECK(r.done(), "step plan: {} trailing bytes", bytes.size());
  return plan;
}

std::vector<attention::ScheduledRequest> StepPlan::attention_batch() const {
  std::vector<attention::ScheduledRequest> batch;
  batch.reserve(entries.size());
  for (const Entry& e : entries) {
    attention::ScheduledRequest r;
    r.num_computed = e.num_computed;
    r.num_scheduled = static_cast<int64_t>(e.token_ids.size());
    r.block_table = e.block_table;
    batch.push_back(std::move(r));
  }
  return batch;
}

int64_t StepPlan::num_tokens() const {
  int64_t n = 0;
  for (const Entry& e : entries) n += static_cast<int64_t>(e.token_ids.size());
  return n;
}

int64_t StepPlan::num_sampling_entries() const {
  int64_t n = 0;
  for (const Entry& e : entries) n += e.samples ? 1 : 0;
  return n;
}

}  // namespace ctxpar::engine
