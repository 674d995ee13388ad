#include "ctxpar/server/block_call_stream.h"

#include <algorithm>

#include "ctxpar/server/python_json.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {

void BlockCallStream::add(std::string_view body, int& calls_sent, std::vector<ToolCallPiece>& out) {
  // A character cut in two (deltas from byte-level pieces) waits for its other bytes.
  for (size_t back = 1; back <= std::min<size_t>(3, body.size()); ++back) {
    const auto byte = static_cast<unsigned char>(body[body.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    if (tokenizer::utf8::char_length(byte) > back) body.remove_suffix(back);
    break;
  }
  const std::optional<StableBlock> stable = stable_cut_(body);
  if (!stable) return;
  if (stable->open_string && stable->value_at == value_at_ && value_at_ != std::string_view::npos &&
      stable->value_end >= value_sent_) {
    // More of the same string value: its escaped text is what the parse would add.
    const std::string_view more = body.substr(value_sent_, stable->value_end - value_sent_);
    if (more.empty()) return;
    const std::string quoted = python_json_text(nlohmann::ordered_json(std::string(more)));
    const std::string escaped = quoted.substr(1, quoted.size() - 2);
    Sent& s = sent_.back();
    out.push_back({s.index, "", "", escaped});
    s.arguments += escaped;
    value_sent_ = stable->value_end;
    return;
  }
  value_at_ = std::string_view::npos;
  const std::optional<std::vector<ToolCall>> calls = parse_(stable->text);
  if (!calls) return;
  for (size_t k = 0; k < calls->size(); ++k) {
    std::string args = (*calls)[k].arguments;
    std::string closers;
    if (k + 1 == calls->size() && stable->open_call && !stable->raw_arguments) {
      closers = stable->open_string ? "\"}" : "}";
      if (!args.ends_with(closers)) return;  // the open value is not last (a repeated key)
      args.resize(args.size() - closers.size());
    }
    const std::string expected = args;
    const bool raw_open = k + 1 == calls->size() && stable->open_call && stable->raw_arguments;
    update(k, (*calls)[k], std::move(args), std::move(closers), raw_open, calls_sent, out);
    // The last call stands at the end of an open string value: the fast path may follow it.
    if (k + 1 == calls->size() && stable->open_string && !sent_.empty() &&
        k + vanished_ + 1 == sent_.size() && !sent_.back().diverged &&
        sent_.back().arguments == expected) {
      value_at_ = stable->value_at;
      value_sent_ = stable->value_end;
    }
  }
}

size_t BlockCallStream::slot(size_t k, const std::string& args) {
  const size_t i = k + vanished_;
  // Raw arguments only grow, so one that stops continuing what went out was no call after all
  // (its line broke): it is dropped, and the parse's calls after it move up a place.
  if (i < sent_.size() && sent_[i].raw_open && !sent_[i].diverged &&
      args.compare(0, sent_[i].arguments.size(), sent_[i].arguments) != 0) {
    sent_[i].diverged = true;
    ++vanished_;
    return i + 1;
  }
  return i;
}

void BlockCallStream::update(size_t k, const ToolCall& call, std::string args, std::string closers,
                             bool raw_open, int& calls_sent, std::vector<ToolCallPiece>& out) {
  const size_t i = slot(k, args);
  if (i > sent_.size()) return;
  if (i == sent_.size()) {
    sent_.push_back({calls_sent, args, std::move(closers), raw_open});
    out.push_back({calls_sent++, call.id, call.name, std::move(args)});
    return;
  }
  Sent& s = sent_[i];
  if (s.diverged) return;
  if (args.compare(0, s.arguments.size(), s.arguments) != 0) {
    // It can only be ended, and is now, before any piece of a later call.
    s.diverged = true;
    if (!s.closers.empty()) out.push_back({s.index, "", "", s.closers});
    return;
  }
  if (args.size() > s.arguments.size()) {
    out.push_back({s.index, "", "", args.substr(s.arguments.size())});
  }
  s.arguments = std::move(args);
  s.closers = std::move(closers);
  s.raw_open = raw_open;
}

void BlockCallStream::close(const std::optional<std::vector<ToolCall>>& calls, int& calls_sent,
                            std::vector<ToolCallPiece>& out) {
  const size_t whole = calls ? calls->size() : 0;
  std::vector<bool> continued(sent_.size(), false);
  for (size_t k = 0; k < whole; ++k) {
    const ToolCall& call = (*calls)[k];
    const size_t i = slot(k, call.arguments);
    if (i >= sent_.size()) {
      out.push_back({calls_sent++, call.id, call.name, call.arguments});
      continue;
    }
    const Sent& s = sent_[i];
    if (s.diverged) continue;  // ended already
    continued[i] = true;
    if (call.arguments.compare(0, s.arguments.size(), s.arguments) == 0) {
      if (call.arguments.size() > s.arguments.size())
        out.push_back({s.index, "", "", call.arguments.substr(s.arguments.size())});
    } else if (!s.closers.empty()) {
      out.push_back({s.index, "", "", s.closers});
    }
  }
  // Sent calls the whole parse does not have end as the JSON they had.
  for (size_t i = 0; i < sent_.size(); ++i) {
    if (!continued[i] && !sent_[i].diverged && !sent_[i].closers.empty())
      out.push_back({sent_[i].index, "", "", sent_[i].closers});
  }
  sent_.clear();
  vanished_ = 0;
}

}  // namespace ctxpar::server
