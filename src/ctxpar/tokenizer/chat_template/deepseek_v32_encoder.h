// DeepSeek-V3.2's prompt format. The model ships no Jinja chat template, only a Python
// encoder (encoding/encoding_dsv32.py: DSML tool calls, thinking and chat modes); vLLM
// selects it for DeepseekV32ForCausalLM (tokenizer_mode deepseek_v32). This is that encoder,
// called the way vLLM 0.33 calls it:
// - thinking mode when chat_template_kwargs has a true `thinking` or `enable_thinking`,
//   chat mode otherwise;
// - the request's tools (if any) go into a system message inserted first;
// - earlier assistant reasoning is dropped when the last message is the user's.
// Messages are in vLLM's shape: assistant reasoning in `reasoning` (vLLM's front end copies
// an OpenAI `reasoning_content` there), tool calls as OpenAI `tool_calls` whose `arguments`
// are a JSON object or its JSON text, `prefix: true` on a final assistant message to continue
// it. add_generation_prompt and continue_final_message are not used (as in vLLM): the prompt
// always ends ready for the assistant.
#pragma once

#include <string>

#include "ctxpar/tokenizer/chat_template/chat_template.h"

namespace ctxpar::chat_template {

// The prompt text, starting with <｜begin▁of▁sentence｜>. Throws ctxpar::InputError where the
// reference encoder raises: an unknown role, a tool result without a matching tool call, an
// assistant message after the last user message with neither reasoning nor tool calls in
// thinking mode, an empty developer message, tool call arguments that are not a JSON object,
// no messages.
std::string encode_deepseek_v32(const ChatRequest& request);

}  // namespace ctxpar::chat_template
