// The tokenizer of an engine's model: where the tokenizer layer meets the model config.
#pragma once

#include <string>

#include "ctxpar/tokenizer/tokenizer_files.h"

namespace ctxpar::engine {

// The tokenizer for --model `model` and --tokenizer `tokenizer_dir` ("" = the model's own):
// the byte tokenizer for the built-in models ("builtin:..."; BOS and EOS from their configs),
// else the Hugging Face files of `tokenizer_dir` or the model directory (tokenizer.json,
// tokenizer_config.json, chat_template.jinja) with the model directory's
// generation_config.json. eos_token_ids then also holds config.json's eos_token_id: the ids
// that end generation (vLLM's EOS plus stop ids from generation_config). Throws ctxpar::InputError
// naming the directory when it has no tokenizer.json, and the file and field of anything
// malformed.
tokenizer::LoadedTokenizer load_tokenizer(const std::string& model,
                                          const std::string& tokenizer_dir = "");

// The directory of a --model that names a directory or its config.json ("" for built-ins).
std::string model_directory(const std::string& model);

}  // namespace ctxpar::engine
