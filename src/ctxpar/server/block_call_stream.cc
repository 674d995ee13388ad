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
    if (k + 1 == calls->size() && stable->open_call) {
      closers = stable->open_string ? "\"}" : "}";
      if (!args.ends_with(closers)) return;  // the open value is not last (a repeated key)
      args.resize(args.size() - closers.size());
    }
    const std::string expected = args;
    update(k, (*calls)[k], std::move(args), std::move(closers), calls_sent, out);
    // The last call stands at the end of an open string value: the fast path may follow it.
    if (k + 1 == calls->size() && stable->open_string && k + 1 == sent_.size() &&
        !sent_[k].diverged && sent_[k].arguments == expected) {
      value_at_ = stable->value_at;
      value_sent_ = stable->value_end;
    }
  }
}

void BlockCallStream::update(size_t k, const ToolCall& call, std::string args, std::string closers,
                             int& calls_sent, std::vector<ToolCallPiece>& out) {
  if (k > sent_.size()) return;
  if (k == sent_.size()) {
    sent_.push_back({calls_sent, args, std::move(closers)});
    out.push_back({calls_sent++, call.id, call.name, std::move(args)});
    return;
  }
  Sent& s = sent_[k];
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
}

void BlockCallStream::close(const std::optional<std::vector<ToolCall>>& calls, int& calls_sent,
                            std::vector<ToolCallPiece>& out) {
  const size_t whole = calls ? calls->size() : 0;
  for (size_t k = 0; k < std::max(whole, sent_.size()); ++k) {
    if (k >= sent_.size()) {
      const ToolCall& call = (*calls)[k];
      out.push_back({calls_sent++, call.id, call.name, call.arguments});
      continue;
    }
    const Sent& s = sent_[k];
    if (s.diverged) continue;  // ended already
    const std::string* args = k < whole ? &(*calls)[k].arguments : nullptr;
    if (args != nullptr && args->compare(0, s.arguments.size(), s.arguments) == 0) {
      if (args->size() > s.arguments.size())
        out.push_back({s.index, "", "", args->substr(s.arguments.size())});
    } else if (!s.closers.empty()) {
      out.push_back({s.index, "", "", s.closers});
    }
  }
  sent_.clear();
}

}  // namespace ctxpar::server
