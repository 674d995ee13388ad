// Rendering of engine results for people (tables, escaped text) and for scripts (JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ctxpar/engine/llm_engine.h"

namespace ctxpar::app {

// Bytes as text with non-printable characters escaped (\n, \x01), for the byte tokenizer.
std::string printable(const std::string& text);
std::string human_bytes(int64_t bytes);  // "12.0 MiB"

nlohmann::json stats_json(const engine::EngineStats& stats, const engine::EngineConfig& config);
// The KV, throughput and prefix-cache lines printed after a run.
std::string stats_text(const engine::EngineStats& stats, const engine::EngineConfig& config);

}  // namespace ctxpar::app
