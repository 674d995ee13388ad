// The JSON of vLLM's responses (completion and chat, whole and streamed chunk by chunk), from
// the server's choice deltas. Field sets follow vLLM's pydantic models as dumped: whole
// responses with every field, stream chunks with the fields vLLM sets (exclude_unset), the
// final usage chunk without nulls (exclude_none).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/engine/logprobs.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::server {

// The text a token stands for in logprobs: its decoding alone, special tokens included
// (`tokenizer` decodes to valid UTF-8).
std::string token_text(const tokenizer::Tokenizer& tokenizer, int32_t token);

// How logprobs name a token: its token_text, or with as_token_ids (--return-tokens-as-token-ids,
// or a request's return_tokens_as_token_ids) vLLM's placeholder "token_id:<id>", which names
// tokens whose bytes are not UTF-8 on their own. Holds the tokenizer by reference.
struct LogprobTokenNames {
  const tokenizer::Tokenizer& tokenizer;
  bool as_token_ids = false;
  std::string operator()(int32_t token) const;
};

// Completions: {text_offset, token_logprobs, tokens, top_logprobs} for `tokens`, whose first
// token's text starts at `text_offset`; each next offset adds the token texts before it
// (vLLM's: the names', so placeholders count their own length). top_logprobs holds the sampled
// token and the `num_top` most likely ones (a dict, so the sampled one is not repeated),
// logprobs clamped at -9999 as vLLM does. The first `num_unscored` tokens (an echoed prompt's
// first token) have null logprob and top_logprobs; logprobs[i] scores tokens[num_unscored + i].
nlohmann::json completion_logprobs(const LogprobTokenNames& names,
                                   const std::vector<int32_t>& tokens,
                                   const std::vector<engine::SampledLogprobs>& logprobs,
                                   int32_t num_top, int64_t text_offset, size_t num_unscored = 0);

// vLLM's prompt_logprobs field: null for the first prompt token, then per token
// {"<id>": {logprob, rank, decoded_token}} for the prompt token and the most likely ones
// (ranks 1..). scores[i] scores prompt[i + 1].
nlohmann::json prompt_logprobs_json(const tokenizer::Tokenizer& tokenizer,
                                    const std::vector<int32_t>& prompt,
                                    const std::vector<engine::SampledLogprobs>& scores);

// Chat: {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]} with the
// first `num_top` of the sampled token and the most likely ones. bytes are each name's, but
// the sampled token's are its text's even under token ids (vLLM's decoded_token).
nlohmann::json chat_logprobs(const LogprobTokenNames& names, const std::vector<int32_t>& tokens,
                             const std::vector<engine::SampledLogprobs>& logprobs, int32_t num_top);

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// n random lowercase hex digits: the tail of response, permission and tool call ids.
std::string random_hex(size_t n);

// Characters (code points) of valid UTF-8 text, as Python counts a str.
int64_t text_length(std::string_view text);

// A Server-Sent Event: "data: <json>\n\n" (the text in it is valid UTF-8 already).
std::string sse_event(const nlohmann::json& data);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace ctxpar::server
