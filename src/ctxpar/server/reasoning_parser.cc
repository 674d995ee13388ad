#include "ctxpar/server/reasoning_parser.h"

#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/server/text_tags.h"

namespace ctxpar::server {
namespace {

constexpr std::string_view kStart = "<think>";
constexpr std::string_view kEnd = "</think>";

// Text after the first <think> (all of it without one), as vLLM's partition.
std::string_view after_start(std::string_view text) {
  const size_t start = text.find(kStart);
  return start == std::string_view::npos ? text : text.substr(start + kStart.size());
}

}  // namespace

ReasoningParser parse_reasoning_parser(std::string_view name) {
  if (name.empty()) return ReasoningParser::kNone;
  if (name == "deepseek_r1") return ReasoningParser::kDeepSeekR1;
  if (name == "qwen3") return ReasoningParser::kQwen3;
  if (name == "deepseek_v3") return ReasoningParser::kDeepSeekV3;
  if (name == "glm45") return ReasoningParser::kGlm45;
  CTXPAR_INPUT_FAIL(
      "--reasoning-parser '{}' is not supported; use deepseek_r1, qwen3, deepseek_v3 or glm45",
      name);
}

namespace {

// Python's bool() of a JSON value: null, false, 0, "" and empty containers are false.
bool truthy(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>() != 0;
  if (v.is_number_unsigned()) return v.get<uint64_t>() != 0;
  if (v.is_number_float()) return v.get<double>() != 0.0;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  return !v.empty();
}

}  // namespace

bool thinking_requested(ReasoningParser parser, const nlohmann::json& kwargs) {
  // A key given as null reads as absent (Python's dict.get(key, None)).
  const auto get = [&](const char* key) {
    return kwargs.is_object() && kwargs.contains(key) ? kwargs[key] : nlohmann::json(nullptr);
  };
  const nlohmann::json thinking = get("thinking"), enable = get("enable_thinking");
  switch (parser) {
    case ReasoningParser::kDeepSeekV3:
      return truthy(thinking) || truthy(enable);
    case ReasoningParser::kGlm45:
      if (thinking.is_null() && enable.is_null()) return true;  // GLM thinks by default
      return truthy(thinking) || truthy(enable);
    default:
      return false;
  }
}

ReasoningSplit::ReasoningSplit(ReasoningParser parser, bool thinking, std::string_view prompt_text)
    : parser_(parser),
      splits_(parser == ReasoningParser::kDeepSeekR1 || parser == ReasoningParser::kQwen3 ||
              ((parser == ReasoningParser::kDeepSeekV3 || parser == ReasoningParser::kGlm45) &&
               thinking)) {
  // Only a </think> that ends the prompt counts: one in an earlier assistant turn is followed
  // by that turn's content and the next turn's markers.
  const size_t last = prompt_text.find_last_not_of(" \t\r\n");
  prompt_closed_ = last != std::string_view::npos && last + 1 >= kEnd.size() &&
                   prompt_text.substr(last + 1 - kEnd.size(), kEnd.size()) == kEnd;
}

ReasoningSplit::Part ReasoningSplit::whole(std::string_view text) const {
  if (!splits_ || prompt_closed_) return {std::nullopt, std::string(text)};
  if (parser_ == ReasoningParser::kQwen3 && text.find(kEnd) == std::string_view::npos) {
    return {std::nullopt, std::string(text)};
  }
  const std::string_view rest = after_start(text);
  const size_t end = rest.find(kEnd);
  if (end == std::string_view::npos) return {std::string(rest), std::nullopt};
  const std::string_view content = rest.substr(end + kEnd.size());
  return {std::string(rest.substr(0, end)),
          content.empty() ? std::nullopt : std::optional<std::string>(content)};
}

ReasoningSplit::Delta ReasoningSplit::add(std::string_view text, bool finished) {
  Delta d;
  if (!splits_ || prompt_closed_ || ended_) {
    d.content = held_ + std::string(text);
    held_.clear();
    return d;
  }
  std::string buf = held_ + std::string(text);
  held_.clear();
  if (!started_) {
    const size_t start = buf.find(kStart);
    if (start != std::string::npos) {
      buf.erase(start, kStart.size());
      started_ = true;
    }
  }
  const size_t end = buf.find(kEnd);
  if (end != std::string::npos) {
    ended_ = true;
    d.reasoning = buf.substr(0, end);
    d.content = buf.substr(end + kEnd.size());
    return d;
  }
  size_t keep = 0;
  if (!finished) {
    keep = partial_tag_tail(buf, kEnd);
    if (!started_) keep = std::max(keep, partial_tag_tail(buf, kStart));
  }
  d.reasoning = buf.substr(0, buf.size() - keep);
  held_ = buf.substr(buf.size() - keep);
  return d;
}

}  // namespace ctxpar::server
