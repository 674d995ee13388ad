#include "ctxpar/server/openai_responses.h"

#include <algorithm>
#include <array>
#include <random>

#include <fmt/format.h>

namespace ctxpar::server {
namespace {

using nlohmann::json;

constexpr float kLowestLogprob = -9999.0f;

float clamped(float logprob) {
  return std::max(logprob, kLowestLogprob);
}

// The sampled token first, then the most likely ones without it: the order of vLLM's logprob
// dicts (row 0 is the sampled token, rows 1.. the top-k).
std::vector<engine::TokenLogprob> ranked_entries(const engine::SampledLogprobs& lp) {
  std::vector<engine::TokenLogprob> out = {lp.sampled};
  for (const engine::TokenLogprob& t : lp.top) {
    if (t.token != lp.sampled.token) out.push_back(t);
  }
  return out;
}

json utf8_bytes(const std::string& text) {
  json bytes = json::array();
  for (const char c : text) bytes.push_back(static_cast<uint8_t>(c));
  return bytes;
}

}  // namespace

std::string token_text(const tokenizer::Tokenizer& tokenizer, int32_t token) {
  const std::array<int32_t, 1> one = {token};
  return tokenizer.decode(one, /*skip_special_tokens=*/false);
}

std::string LogprobTokenNames::operator()(int32_t token) const {
  return as_token_ids ? fmt::format("token_id:{}", token) : token_text(tokenizer, token);
}

json completion_logprobs(const LogprobTokenNames& names, const std::vector<int32_t>& tokens,
                         const std::vector<engine::SampledLogprobs>& logprobs, int32_t num_top,
                         int64_t text_offset, size_t num_unscored) {
  json out = {{"text_offset", json::array()},
              {"token_logprobs", json::array()},
              {"tokens", json::array()},
              {"top_logprobs", json::array()}};
  int64_t offset = text_offset;
  for (size_t i = 0; i < tokens.size() && i < num_unscored + logprobs.size(); ++i) {
    const std::string text = names(tokens[i]);
    out["text_offset"].push_back(offset);
    // Python counts characters.
    offset += text_length(text);
    out["tokens"].push_back(text);
    if (i < num_unscored) {
      out["token_logprobs"].push_back(nullptr);
      out["top_logprobs"].push_back(nullptr);
      continue;
    }
    const engine::SampledLogprobs& scored = logprobs[i - num_unscored];
    out["token_logprobs"].push_back(clamped(scored.sampled.logprob));
    json top = json::object();
    const auto entries = ranked_entries(scored);
    for (size_t k = 0; k < entries.size() && k <= static_cast<size_t>(num_top); ++k) {
      const std::string key = names(entries[k].token);
      if (!top.contains(key)) top[key] = clamped(entries[k].logprob);
    }
    out["top_logprobs"].push_back(top);
  }
  return out;
}

json prompt_logprobs_json(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                          const std::vector<engine::SampledLogprobs>& scores) {
  json out = json::array();
  if (prompt.empty()) return out;
  out.push_back(nullptr);
  for (size_t i = 0; i < scores.size() && i + 1 < prompt.size(); ++i) {
    const engine::SampledLogprobs& s = scores[i];
    json entry = json::object();
    const auto add = [&](const engine::TokenLogprob& t, int64_t rank) {
      entry[std::to_string(t.token)] = {{"logprob", clamped(t.logprob)},
                                        {"rank", rank},
                                        {"decoded_token", token_text(tokenizer, t.token)}};
    };
    add(s.sampled, s.rank);
    for (size_t k = 0; k < s.top.size(); ++k) add(s.top[k], static_cast<int64_t>(k) + 1);
    out.push_back(std::move(entry));
  }
  return out;
}

json chat_logprobs(const LogprobTokenNames& names, const std::vector<int32_t>& tokens,
                   const std::vector<engine::SampledLogprobs>& logprobs, int32_t num_top) {
  json content = json::array();
  for (size_t i = 0; i < tokens.size() && i < logprobs.size(); ++i) {
    json top = json::array();
    const auto entries = ranked_entries(logprobs[i]);
    for (size_t k = 0; k < entries.size() && k < static_cast<size_t>(num_top); ++k) {
      const std::string t = names(entries[k].token);
      top.push_back(
          {{"token", t}, {"logprob", clamped(entries[k].logprob)}, {"bytes", utf8_bytes(t)}});
    }
    const std::string text = token_text(names.tokenizer, tokens[i]);
    content.push_back({{"token", names.as_token_ids ? names(tokens[i]) : text},
                       {"logprob", clamped(logprobs[i].sampled.logprob)},
                       {"bytes", utf8_bytes(text)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

std::string random_hex(size_t n) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string out;
  while (out.size() < n) out += fmt::format("{:016x}", rng());
  out.resize(n);
  return out;
}

int64_t text_length(std::string_view text) {
  int64_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"completion_tokens", completion_tokens}};
}

std::string sse_event(const json& data) {
  return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace ctxpar::server
