// Helpers of the structured-output tests: compile a schema and feed text to a matcher.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ctxpar/engine/structured/json_matcher.h"
#include "ctxpar/engine/structured/schema_compiler.h"

namespace ctxpar::structured::testing {

inline std::shared_ptr<const JsonAutomaton> automaton_of_json(
    const nlohmann::ordered_json& schema) {
  return std::make_shared<JsonAutomaton>(std::make_shared<Grammar>(compile_json_schema(schema)));
}

inline std::shared_ptr<const JsonAutomaton> automaton_of(std::string_view schema_text) {
  return automaton_of_json(nlohmann::ordered_json::parse(schema_text));
}

// Whether the matcher takes all of `text` byte by byte and then may end.
inline bool accepts(const JsonAutomaton& a, std::string_view text) {
  StateSet s = a.initial();
  StateSet next;
  for (const char c : text) {
    if (!a.advance(s, static_cast<uint8_t>(c), next)) return false;
    std::swap(s, next);
  }
  return a.can_end(s);
}

inline bool accepts(std::string_view schema_text, std::string_view text) {
  return accepts(*automaton_of(schema_text), text);
}

}  // namespace ctxpar::structured::testing
