// Helpers of the structured-output tests: compile a schema and feed text to a matcher.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

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

// A random walk: from each state a random byte the automaton takes (past `prefer_after` bytes,
// one of `prefer` when it takes any of them) until the text may end, where the walk stops with
// chance 1 / stop_odds, or always when nothing can follow. The text, or nullopt when it reached
// max_bytes first. A state that takes no byte and cannot end fails the test (the automaton must
// never get stuck).
inline std::optional<std::string> random_walk(const JsonAutomaton& a, std::mt19937_64& rng,
                                              std::string_view prefer, size_t prefer_after,
                                              uint64_t stop_odds, size_t max_bytes) {
  StateSet s = a.initial();
  StateSet next;
  std::string text;
  while (text.size() < max_bytes) {
    if (a.can_end(s) && (rng() % stop_odds == 0 || a.must_end(s))) return text;
    std::vector<uint8_t> allowed;
    std::vector<uint8_t> preferred;
    for (int b = 0; b < 256; ++b) {
      if (!a.advance(s, static_cast<uint8_t>(b), next)) continue;
      allowed.push_back(static_cast<uint8_t>(b));
      if (prefer.find(static_cast<char>(b)) != std::string_view::npos) {
        preferred.push_back(static_cast<uint8_t>(b));
      }
    }
    if (allowed.empty()) {
      ADD_FAILURE() << "stuck after " << text;
      return std::nullopt;
    }
    const auto& pool = text.size() > prefer_after && !preferred.empty() ? preferred : allowed;
    const uint8_t b = pool[rng() % pool.size()];
    a.advance(s, b, next);
    std::swap(s, next);
    text.push_back(static_cast<char>(b));
  }
  return std::nullopt;
}

}  // namespace ctxpar::structured::testing
