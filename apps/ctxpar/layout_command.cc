// `ctxpar layout`: where each token of one request lives in a DCP group's KV caches, as a
// readable table or as one JSON object for tools. All placement comes from kv::DcpLayout.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "commands.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::app {
namespace {

// Longest request laid out: every token is printed in --json mode (~50 bytes each), and the
// default block table is materialized.
constexpr int64_t kMaxSeqLen = int64_t{1} << 24;
// Longer requests get a per-rank summary instead of one row per token.
constexpr int64_t kMaxTokenRows = 256;

struct LayoutOptions {
  int dcp_size = 1;
  int block_size = 16;
  int interleave = 1;
  int64_t seq_len = -1;
  std::vector<int64_t> block_table;  // empty: 0, 1, 2, ...
  bool json = false;
};

// The request's block table: the given ids (checked to be valid, distinct int32 ids covering
// seq_len), or 0, 1, 2, ... for the virtual blocks seq_len needs.
std::vector<int32_t> resolve_block_table(const LayoutOptions& o, const kv::DcpLayout& layout) {
  const int64_t needed = layout.num_virtual_blocks(o.seq_len);
  std::vector<int32_t> table;
  if (o.block_table.empty()) {
    for (int64_t id = 0; id < needed; ++id) table.push_back(static_cast<int32_t>(id));
    return table;
  }
  CTXPAR_CHECK_INPUT(
      static_cast<int64_t>(o.block_table.size()) >= needed,
      "--block-table has {} entries but --seq-len {} needs {} (one per virtual block of "
      "{} positions = block size {} x dcp size {})",
      o.block_table.size(), o.seq_len, needed, layout.tokens_per_virtual_block(),
      layout.block_size(), layout.dcp_size());
  std::unordered_set<int64_t> seen;
  for (int64_t id : o.block_table) {
    CTXPAR_CHECK_INPUT(id >= 0 && id <= std::numeric_limits<int32_t>::max(),
                       "--block-table id {} is invalid; block ids are in [0, {}]", id,
                       std::numeric_limits<int32_t>::max());
    CTXPAR_CHECK_INPUT(seen.insert(id).second,
                       "--block-table names block {} twice; each virtual block needs its own block",
                       id);
    table.push_back(static_cast<int32_t>(id));
  }
  return table;
}

std::string join(const std::vector<int32_t>& values) {
  return fmt::format("{}", fmt::join(values, ","));
}
std::string join(const std::vector<int64_t>& values) {
  return fmt::format("{}", fmt::join(values, ","));
}

// One JSON object; written by hand rather than through a DOM so that 16M tokens stream out
// without holding a tree of them in memory (every value is an integer: nothing to escape).
void print_json(const LayoutOptions& o, const kv::DcpLayout& layout,
                const std::vector<int32_t>& table) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "{{\"dcp_size\":{},\"block_size\":{},\"interleave\":{},\"seq_len\":{},"
                 "\"block_table\":[{}],\"local_seq_lens\":[{}],\"tokens\":[",
                 layout.dcp_size(), layout.block_size(), layout.interleave(), o.seq_len,
                 join(table), join(layout.local_lens(o.seq_len)));
  for (int64_t p = 0; p < o.seq_len; ++p) {
    const int rank = layout.owner(p);
    fmt::format_to(std::back_inserter(out),
                   "{}{{\"pos\":{},\"rank\":{},\"local_index\":{},\"slot\":{}}}", p ? "," : "", p,
                   rank, layout.local_index(p), layout.slot(p, rank, table));
    if (out.size() > (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  fmt::format_to(std::back_inserter(out), "]}}\n");
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_table(const LayoutOptions& o, const kv::DcpLayout& layout,
                 const std::vector<int32_t>& table) {
  const int n = layout.dcp_size();
  const int64_t b = layout.block_size();
  const int64_t used_blocks = layout.num_virtual_blocks(o.seq_len);
  fmt::print("DCP KV layout: {} rank(s), block size {}, interleave {}, {} token(s)\n", n, b,
             layout.interleave(), o.seq_len);
  fmt::print("one block id = {} positions ({} rows on each rank); block table [{}]\n",
             layout.tokens_per_virtual_block(), b,
             join(std::vector<int32_t>(table.begin(), table.begin() + used_blocks)));

  const std::vector<int64_t> lens = layout.local_lens(o.seq_len);
  fmt::print("\n{:>6} {:>11} {:>13} {:>14} {:>14}\n", "rank", "local_len", "rows_reserved",
             "first_pos", "last_pos");
  for (int r = 0; r < n; ++r) {
    const int64_t len = lens[static_cast<size_t>(r)];
    const std::string first = len ? fmt::format("{}", layout.global_position(0, r)) : "-";
    const std::string last = len ? fmt::format("{}", layout.global_position(len - 1, r)) : "-";
    // Every block id reserves B rows on every rank; a rank's tokens fill the first len.
    fmt::print("{:>6} {:>11} {:>13} {:>14} {:>14}\n", r, len, used_blocks * b, first, last);
  }
  const int64_t most = *std::max_element(lens.begin(), lens.end());
  fmt::print(
      "\nthe fullest rank stores {} of {} tokens ({:.1f}%); without DCP each rank of the "
      "group would store all {}\n",
      most, o.seq_len, o.seq_len ? 100.0 * static_cast<double>(most) / o.seq_len : 0.0, o.seq_len);

  if (o.seq_len > kMaxTokenRows) {
    fmt::print("(per-token rows are shown for --seq-len <= {}; use --json for all {})\n",
               kMaxTokenRows, o.seq_len);
    return;
  }
  if (o.seq_len == 0) return;
  fmt::print("\n{:>6} {:>6} {:>12} {:>10}\n", "pos", "rank", "local_index", "slot");
  for (int64_t p = 0; p < o.seq_len; ++p) {
    const int rank = layout.owner(p);
    fmt::print("{:>6} {:>6} {:>12} {:>10}\n", p, rank, layout.local_index(p),
               layout.slot(p, rank, table));
  }
}

void run_layout(const LayoutOptions& o) {
  const kv::DcpLayout layout(o.dcp_size, o.block_size, o.interleave);
  CTXPAR_CHECK_INPUT(o.seq_len >= 0 && o.seq_len <= kMaxSeqLen,
                     "--seq-len {} is invalid; it must be in [0, {}]", o.seq_len, kMaxSeqLen);
  const std::vector<int32_t> table = resolve_block_table(o, layout);
  if (o.json) {
    print_json(o, layout, table);
  } else {
    print_table(o, layout, table);
  }
}

}  // namespace

void add_layout_command(CLI::App& app) {
  auto options = std::make_shared<LayoutOptions>();
  CLI::App* cmd = app.add_subcommand(
      "layout", "Show which DCP rank stores each token's KV, at which local index and cache slot");
  cmd->add_option("--decode-context-parallel-size", options->dcp_size,
                  "DCP group size N (alias -dcp)")
      ->capture_default_str();
  cmd->add_option("--block-size", options->block_size, "KV block size B in tokens, per rank")
      ->capture_default_str();
  cmd->add_option("--cp-kv-cache-interleave-size", options->interleave,
                  "interleave I: consecutive tokens per rank before moving on; divides B")
      ->capture_default_str();
  cmd->add_option("--seq-len", options->seq_len, "tokens in the request")->required();
  cmd->add_option("--block-table", options->block_table,
                  "comma-separated block ids, one per virtual block of B*N positions "
                  "(default 0,1,2,...)")
      ->delimiter(',');
  cmd->add_flag("--json", options->json, "print one JSON object instead of tables");
  cmd->callback([options] { run_layout(*options); });
}

}  // namespace ctxpar::app
