// The tokenizer files of a Hugging Face model directory, read the way transformers reads them:
// tokenizer.json (HfTokenizer), tokenizer_config.json (named special tokens, LlamaTokenizerFast's
// add_bos_token / add_eos_token, chat templates), chat_template.jinja, and
// generation_config.json (the EOS ids that end generation, sampling defaults).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::tokenizer {

struct NamedChatTemplate {
  std::string name;    // "default", "tool_use", ...
  std::string source;  // the Jinja text
};

// generation_config.json's sampling defaults (vLLM's --generation-config auto): each is
// unset when the file does not give it.
struct GenerationDefaults {
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k, max_new_tokens;
};

// What generation_config.json says about ending and sampling.
struct GenerationConfig {
  std::vector<int32_t> eos_token_ids;  // eos_token_id: an int or a list
  GenerationDefaults defaults;
};

// `dir`/generation_config.json, or an empty GenerationConfig when there is none. Throws
// ctxpar::InputError naming the file and field of anything malformed.
GenerationConfig read_generation_config(const std::string& dir);

// The same read from a parsed JSON object (vLLM's --override-generation-config); `source` names
// it in errors. Keys other than eos_token_id and the sampling defaults are not read.
GenerationConfig parse_generation_config(const nlohmann::json& json, const std::string& source);

struct LoadedTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::optional<int32_t> bos_token_id, eos_token_id, pad_token_id;
  // From tokenizer_config.json "chat_template" (a string is "default") and chat_template.jinja
  // (which replaces "default", as in transformers), in file order.
  std::vector<NamedChatTemplate> chat_templates;
  // The ids that end generation: eos_token_id, then generation_config.json's eos_token_id (an
  // int or a list), without repeats. engine::load_tokenizer adds config.json's.
  std::vector<int32_t> eos_token_ids;
  GenerationDefaults generation;
  // tokenizer_config.json truncation_side: the end a truncated prompt keeps ("right": the
  // first tokens, transformers' default; "left": the last).
  std::string truncation_side = "right";

  // The template called `name`, or nullptr.
  const std::string* chat_template(std::string_view name = "default") const;
};

// Reads `tokenizer_dir`/tokenizer.json (required), tokenizer_config.json and
// chat_template.jinja (when present), and `generation_dir`/generation_config.json (when
// present; vLLM reads it from the model, not the tokenizer, directory). Throws ctxpar::InputError
// naming the file and field of anything malformed or unsupported.
LoadedTokenizer load_hf_tokenizer(const std::string& tokenizer_dir,
                                  const std::string& generation_dir);

// The tokenizer classes whose transformers 4.x fast tokenizer rebuilds the post-processor from
// add_bos_token (default true) and add_eos_token (default false).
bool rewrites_post_processor(std::string_view tokenizer_class);

}  // namespace ctxpar::tokenizer
