// The chat prompt of a model that brings no chat template (the built-in byte-tokenizer
// models): each message as "<|role|>\n" + content + "\n", then "<|assistant|>\n" when a
// generation prompt is asked for. With continue_final_message the last message is left open
// (no newline after it), as vLLM leaves it for the model to continue.
//
// Interim: models with a tokenizer_config.json chat template are rendered by the tokenizer
// layer's Jinja renderer once it lands; this stays the built-in models' template.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ctxpar::server {

std::string builtin_chat_prompt(const nlohmann::json& messages, bool add_generation_prompt,
                                bool continue_final_message);

}  // namespace ctxpar::server
