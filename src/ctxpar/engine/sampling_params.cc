#include "ctxpar/engine/sampling_params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {
namespace {

bool contains(std::span<const int32_t> ids, int32_t token) {
  return std::find(ids.begin(), ids.end(), token) != ids.end();
}

std::optional<std::string> negative_id(std::span<const int32_t> ids, const char* field) {
  for (const int32_t id : ids) {
    if (id < 0) return fmt::format("{} {} contains {}; token ids are >= 0", field, ids, id);
  }
  return std::nullopt;
}

}  // namespace

bool SamplingParams::is_eos(int32_t token) const {
  return contains(eos_token_ids, token);
}

bool SamplingParams::is_stop_token(int32_t token) const {
  return contains(stop_token_ids, token);
}

std::optional<std::string> SamplingParams::problem() const {
  // !(x >= 0) also catches NaN.
  if (!(temperature >= 0.0f) || std::isinf(temperature)) {
    return fmt::format("temperature {} is invalid; it must be finite and >= 0 (0 = greedy)",
                       temperature);
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return fmt::format("top_p {} is outside (0, 1]; 1 turns nucleus sampling off", top_p);
  }
  if (max_tokens < 1) {
    return fmt::format("max_tokens {} is invalid; a request generates at least 1 token",
                       max_tokens);
  }
  if (auto bad = negative_id(stop_token_ids, "stop_token_ids")) return bad;
  if (auto bad = negative_id(eos_token_ids, "eos_token_ids")) return bad;
  return std::nullopt;
}

void SamplingParams::validate() const {
  if (const auto message = problem()) CTXPAR_FAIL("invalid sampling params: {}", *message);
}

}  // namespace ctxpar::engine
