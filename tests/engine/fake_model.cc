#include "engine/fake_model.h"

namespace ctxpar::engine::testing {

FakeModel::FakeModel(const kv::DcpLayout& layout, int32_t num_blocks, int32_t vocab_size,
                     bool shared_blocks)
    : layout_(layout),
      vocab_size_(vocab_size),
      shared_blocks_(shared_blocks),
      tables_(layout.tokens_per_virtual_block()),
      cache_(static_cast<size_t>(layout.dcp_size()),
             std::vector<Row>(static_cast<size_t>(int64_t{num_blocks} * layout.block_size()))) {}

int32_t FakeModel::next_token(std::span<const int32_t> history, int32_t vocab_size) {
  // FNV-1a over the whole history, then a final mix so every token matters.
  uint64_t h = 1469598103934665603ull;
  for (const int32_t t : history) {
    h ^= static_cast<uint32_t>(t);
    h *= 1099511628211ull;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return static_cast<int32_t>(h % static_cast<uint64_t>(vocab_size));
}

int32_t FakeModel::tag(const RequestId& id) {
  return tags_.try_emplace(id, static_cast<int32_t>(tags_.size())).first->second;
}

std::vector<int32_t> FakeModel::step(const SchedulerOutput& output) {
  const int n = layout_.dcp_size();
  const StepPlan plan = StepPlan::decode(plans_.build(output).encode());
  const std::vector<attention::ScheduledRequest> batch = tables_.apply(plan);
  EXPECT_EQ(batch.size(), output.entries.size());
  if (batch.size() != output.entries.size()) return std::vector<int32_t>(output.entries.size(), -1);
  // Write first (as the attention layers do), then read.
  for (size_t k = 0; k < output.entries.size(); ++k) {
    const ScheduledEntry& e = output.entries[k];
    const std::vector<int32_t>& table = batch[k].block_table;
    EXPECT_EQ(batch[k].num_computed, e.num_computed_tokens);
    EXPECT_EQ(batch[k].num_scheduled, e.num_new_tokens);
    EXPECT_EQ(plan.entries[k].token_ids, e.new_token_ids);
    const int32_t req = tag(e.request_id);
    for (int64_t i = 0; i < e.num_new_tokens; ++i) {
      const int64_t p = e.num_computed_tokens + i;
      const int owner = layout_.owner(p);
      for (int r = 0; r < n; ++r) {
        const int64_t slot = layout_.slot(p, r, table);
        if (r != owner) {
          EXPECT_EQ(slot, -1) << "rank " << r << " got a slot for position " << p;
          continue;
        }
        auto& rows = cache_[static_cast<size_t>(r)];
        if (slot < 0 || slot >= static_cast<int64_t>(rows.size())) {
          ADD_FAILURE() << "slot " << slot << " of position " << p << " of " << e.request_id
                        << " is outside the cache of " << rows.size() << " rows";
          continue;
        }
        rows[static_cast<size_t>(slot)] = Row{e.new_token_ids[static_cast<size_t>(i)], p, req};
      }
    }
  }
  std::vector<int32_t> sampled(output.entries.size(), -1);
  std::vector<int32_t> history;
  for (size_t k = 0; k < output.entries.size(); ++k) {
    const ScheduledEntry& e = output.entries[k];
    if (!e.samples) continue;
    const std::vector<int32_t>& table = batch[k].block_table;
    const int32_t req = tag(e.request_id);
    const int64_t len = e.num_computed_tokens + e.num_new_tokens;
    history.assign(static_cast<size_t>(len), -1);
    for (int64_t p = 0; p < len; ++p) {
      const int owner = layout_.owner(p);
      const int64_t slot = layout_.slot(p, owner, table);
      const auto& rows = cache_[static_cast<size_t>(owner)];
      if (slot < 0 || slot >= static_cast<int64_t>(rows.size())) {
        ADD_FAILURE() << "slot " << slot << " of position " << p << " is outside the cache";
        continue;
      }
      const Row& row = rows[static_cast<size_t>(slot)];
      if (row.position != p || (row.request != req && !shared_blocks_)) {
        ADD_FAILURE() << e.request_id << " position " << p << " reads rank " << owner << " slot "
                      << slot << " holding position " << row.position << " of request "
                      << row.request << " (KV overwritten or misaddressed)";
      }
      history[static_cast<size_t>(p)] = row.token;
    }
    sampled[k] = next_token(history, vocab_size_);
  }
  return sampled;
}

std::vector<int32_t> FakeModel::read_tokens(const RequestId& id, int64_t len) const {
  const std::span<const int32_t> table = tables_.table(plans_.handle(id));
  std::vector<int32_t> out(static_cast<size_t>(len), -1);
  for (int64_t p = 0; p < len; ++p) {
    const int owner = layout_.owner(p);
    const int64_t slot = layout_.slot(p, owner, table);
    const auto& rows = cache_[static_cast<size_t>(owner)];
    if (slot >= 0 && slot < static_cast<int64_t>(rows.size())) {
      out[static_cast<size_t>(p)] = rows[static_cast<size_t>(slot)].token;
    }
  }
  return out;
}

}  // namespace ctxpar::engine::testing
