// The system_fingerprint of responses, as vLLM 0.34 builds it (--fingerprint-mode,
// --fingerprint-value):
//   full (vLLM's default)  "ctxpar-<version>[-tp<T>][-dcp<N>]-<hash8>" (each degree only above 1)
//   hash                   "ctxpar-<version>-<hash8>"
//   custom                 the value (null without one, as vLLM)
//   none                   null
// hash8 is the first 8 hex digits of SHA-256 over what decides a server's outputs: the model,
// tokenizer and weight format, dtypes and quantization, the parallel layout, block size,
// max_model_len, the additional config and the hf overrides (not memory sizes, threads or seed).
#pragma once

#include <optional>
#include <string>

#include "ctxpar/engine/engine_config.h"

namespace ctxpar::server {

// Throws InputError naming a mode outside the four above.
std::optional<std::string> system_fingerprint(const std::string& mode,
                                              const std::optional<std::string>& value,
                                              const engine::EngineConfig& config);

}  // namespace ctxpar::server
