#include "ctxpar/server/system_fingerprint.h"

#include <array>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_hash.h"

namespace ctxpar::server {
namespace {

std::string config_hash8(const engine::EngineConfig& c) {
  const nlohmann::ordered_json identity = {
      {"model", c.model},
      {"tokenizer", c.tokenizer},
      {"load_format", c.load_format},
      {"quantization", c.quantization},
      {"dtype", c.dtype},
      {"kv_cache_dtype", c.kv_cache_dtype},
      {"tensor_parallel_size", c.tensor_parallel_size},
      {"decode_context_parallel_size", c.decode_context_parallel_size},
      {"cp_kv_cache_interleave_size", c.cp_kv_cache_interleave_size},
      {"block_size", c.block_size},
      {"max_model_len", c.max_model_len},
      {"additional_config", c.additional_config},
      {"hf_overrides", c.hf_overrides}};
  // The project's SHA-256 (the prefix cache's, OpenSSL's) over the identity as its one key.
  const std::array<std::string, 1> key = {identity.dump()};
  const kv::BlockHash digest = kv::sha256_block_hash(nullptr, {}, key);
  return fmt::format("{:02x}{:02x}{:02x}{:02x}", digest.bytes[0], digest.bytes[1], digest.bytes[2],
                     digest.bytes[3]);
}

}  // namespace

std::optional<std::string> system_fingerprint(const std::string& mode,
                                              const std::optional<std::string>& value,
                                              const engine::EngineConfig& config) {
  if (mode == "none") return std::nullopt;
  if (mode == "custom") return value;
  CTXPAR_CHECK_INPUT(mode == "full" || mode == "hash",
                     "--fingerprint-mode '{}' is not one of full, hash, custom, none", mode);
  std::string out = fmt::format("ctxpar-{}", CTXPAR_VERSION);
  if (mode == "full") {
    if (config.tensor_parallel_size > 1) out += fmt::format("-tp{}", config.tensor_parallel_size);
    if (config.decode_context_parallel_size > 1) {
      out += fmt::format("-dcp{}", config.decode_context_parallel_size);
    }
  }
  return out + "-" + config_hash8(config);
}

}  // namespace ctxpar::server
