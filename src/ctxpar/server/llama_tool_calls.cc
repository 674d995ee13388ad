#include "ctxpar/server/llama_tool_calls.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"
#include "ctxpar/server/python_json_decode.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

// The call an object read from the output holds: nullopt when vLLM's parser raises on it
// (KeyError for "name" or "parameters", pydantic's refusal of a name that is not a str).
std::optional<ToolCall> call_of(const ordered_json& object) {
  const auto name = object.find("name");
  if (name == object.end() || !name->is_string()) return std::nullopt;
  auto args = object.find("arguments");
  if (args == object.end()) args = object.find("parameters");
  if (args == object.end()) return std::nullopt;
  return ToolCall{"chatcmpl-tool-" + random_hex(32), name->get<std::string>(),
                  python_json_text(*args)};
}

}  // namespace

LlamaJsonScan scan_llama3_json(std::string_view text, bool finished) {
  using Outcome = LlamaJsonScan::Outcome;
  LlamaJsonScan scan;
  for (size_t at = text.find('{'); at != std::string_view::npos;) {
    const PythonJsonValue object = python_json_raw_decode(text, at);
    if (object.status == PythonJsonValue::Status::kIncomplete && !finished) {
      scan.outcome = Outcome::kUndecided;
      return scan;
    }
    std::optional<ToolCall> call;
    if (object.status == PythonJsonValue::Status::kOk) call = call_of(object.value);
    if (!call) return {};  // vLLM gives up on the whole output
    scan.calls.push_back(std::move(*call));
    // vLLM skips every `{` up to and including the index just past the object.
    at = object.end + 1 >= text.size() ? std::string_view::npos : text.find('{', object.end + 1);
  }
  if (!finished) {
    scan.outcome = Outcome::kUndecided;
    return scan;
  }
  if (scan.calls.empty()) return {};
  scan.outcome = Outcome::kCalls;
  return scan;
}

ToolCallSplit split_llama3_json(std::string_view text) {
  LlamaJsonScan scan = scan_llama3_json(text, /*finished=*/true);
  if (scan.outcome != LlamaJsonScan::Outcome::kCalls) return {std::string(text), {}};
  return {std::nullopt, std::move(scan.calls)};
}

}  // namespace ctxpar::server
