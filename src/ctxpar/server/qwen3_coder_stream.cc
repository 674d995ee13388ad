#include "ctxpar/server/qwen3_coder_stream.h"

#include <algorithm>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/qwen3_coder_tool_calls.h"
#include "ctxpar/server/text_tags.h"
#include "ctxpar/server/tool_schema.h"

namespace ctxpar::server {
namespace {

constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";
constexpr std::string_view kTags[] = {kFunction, kFunctionEnd, kParam, kParamEnd, "</tool_call>"};

void drop_final_newlines(std::string_view& s) {
  while (s.ends_with('\n')) s.remove_suffix(1);
}

}  // namespace

void Qwen3CoderBlockStream::add(std::string_view body, int& calls_sent,
                                std::vector<ToolCallPiece>& out) {
  const nlohmann::json& tools = tools_ != nullptr ? *tools_ : nlohmann::json();
  size_t keep = body.size();
  for (const std::string_view tag : kTags) {
    keep = std::min(keep, body.size() - partial_tag_tail(body, tag));
  }
  std::string_view stable = body.substr(0, keep);
  bool open_function = false, open_string = false;
  for (;;) {
    drop_final_newlines(stable);
    const size_t function = stable.rfind(kFunction);
    if (function == std::string_view::npos) return;
    if (stable.find(kFunctionEnd, function) != std::string_view::npos) break;
    const size_t name_end = stable.find('>', function);
    if (name_end == std::string_view::npos) {  // its name is not whole: the one before is last
      stable = stable.substr(0, function);
      continue;
    }
    open_function = true;
    const size_t param = stable.rfind(kParam);
    if (param == std::string_view::npos || param < name_end ||
        stable.find(kParamEnd, param) != std::string_view::npos) {
      break;
    }
    const size_t key_end = stable.find('>', param);
    if (key_end != std::string_view::npos) {
      const std::string name(
          stable.substr(function + kFunction.size(), name_end - function - kFunction.size()));
      const std::string key(stable.substr(param + kParam.size(), key_end - param - kParam.size()));
      const nlohmann::json& properties = tool_properties(tools, name);
      const auto schema = properties.find(key);
      open_string = schema_types(schema == properties.end() ? nlohmann::json::object() : *schema) ==
                    std::vector<std::string>{"string"};
    }
    if (!open_string) {  // typed only once whole: leave it out until it closes
      stable = stable.substr(0, param);
      drop_final_newlines(stable);
    }
    break;
  }
  const std::optional<std::vector<ToolCall>> calls =
      qwen3_coder_tool_calls(stable, /*closed=*/true, tools);
  if (!calls) return;
  for (size_t k = 0; k < calls->size(); ++k) {
    std::string args = (*calls)[k].arguments;
    std::string closers;
    if (k + 1 == calls->size() && open_function) {
      closers = open_string ? "\"}" : "}";
      if (!args.ends_with(closers)) return;  // the open value is not last (a repeated key)
      args.resize(args.size() - closers.size());
    }
    update(k, (*calls)[k], std::move(args), std::move(closers), calls_sent, out);
  }
}

void Qwen3CoderBlockStream::update(size_t k, const ToolCall& call, std::string args,
                                   std::string closers, int& calls_sent,
                                   std::vector<ToolCallPiece>& out) {
  if (k > sent_.size()) return;
  if (k == sent_.size()) {
    sent_.push_back({calls_sent, args, std::move(closers)});
    out.push_back({calls_sent++, call.id, call.name, std::move(args)});
    return;
  }
  Sent& s = sent_[k];
  if (s.diverged) return;
  if (args.compare(0, s.arguments.size(), s.arguments) != 0) {
    s.diverged = true;
    return;
  }
  if (args.size() > s.arguments.size()) {
    out.push_back({s.index, "", "", args.substr(s.arguments.size())});
  }
  s.arguments = std::move(args);
  s.closers = std::move(closers);
}

void Qwen3CoderBlockStream::close(const std::optional<std::vector<ToolCall>>& calls,
                                  int& calls_sent, std::vector<ToolCallPiece>& out) {
  const size_t whole = calls ? calls->size() : 0;
  for (size_t k = 0; k < std::max(whole, sent_.size()); ++k) {
    if (k >= sent_.size()) {
      const ToolCall& call = (*calls)[k];
      out.push_back({calls_sent++, call.id, call.name, call.arguments});
      continue;
    }
    const Sent& s = sent_[k];
    const std::string* args = k < whole ? &(*calls)[k].arguments : nullptr;
    if (args != nullptr && !s.diverged && args->compare(0, s.arguments.size(), s.arguments) == 0) {
      if (args->size() > s.arguments.size())
        out.push_back({s.index, "", "", args->substr(s.arguments.size())});
    } else if (!s.closers.empty()) {
      out.push_back({s.index, "", "", s.closers});
    }
  }
  sent_.clear();
}

}  // namespace ctxpar::server
