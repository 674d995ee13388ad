// vLLM's --reasoning-parser for chat completions: a thinking model's output between <think> and
// </think> goes to the message's `reasoning`, the rest to its `content` (vllm/reasoning:
// deepseek_r1, qwen3, deepseek_v3, glm45; the field was `reasoning_content` before vLLM 0.11).
//
// The rules, as vLLM's parsers apply them to a whole output:
//   deepseek_r1: everything up to </think> is reasoning (the template put <think> in the
//                prompt), a <think> the model wrote and the text before it are dropped; without
//                </think> all of it is reasoning and content is null;
//   qwen3:       the same when the output has </think>, else all of it is content;
//   deepseek_v3: deepseek_r1 when chat_template_kwargs' thinking or enable_thinking is truthy
//                (Python's bool(), as vLLM reads them), else no split;
//   glm45:       (GLM-4.5, GLM-4.7, GLM-5) deepseek_r1 unless chat_template_kwargs turns the
//                thinking off: GLM models think by default, so without either key it splits,
//                and with one it splits when thinking or enable_thinking is truthy (Python's
//                bool(); null counts as absent) -- vLLM's rule for glm45 (holo2's delegate to
//                deepseek_r1 / identity, and vllm/parser/glm47_moe.py's thinking_enabled).
// Streamed, every parser sends reasoning until </think> and content after it (so does vLLM, for
// qwen3 too). All is content when the prompt ends in </think> (and whitespace): the template
// closed the thinking, as Qwen3's does for enable_thinking false and DeepSeek-V3.1's without
// thinking. vLLM's test is the prompt's last tag, which a </think> in an earlier assistant turn
// also passes; ending the prompt is the narrower test. The tags are matched in the text (held
// back while a delta ends in a part of one), so they may span tokens.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ctxpar::server {

enum class ReasoningParser { kNone, kDeepSeekR1, kQwen3, kDeepSeekV3, kGlm45 };

// "" → kNone; "deepseek_r1", "qwen3", "deepseek_v3", "glm45". Throws InputError naming the value
// and the valid ones.
ReasoningParser parse_reasoning_parser(std::string_view name);

// The thinking switch of `parser` for a request's chat_template_kwargs (null or an object), as
// vLLM reads it: deepseek_v3 thinks when thinking or enable_thinking is truthy; glm45 thinks
// unless they turn it off (see above); the other parsers ignore it (false).
bool thinking_requested(ReasoningParser parser, const nlohmann::json& chat_template_kwargs);

// One chat choice's split into reasoning and content.
class ReasoningSplit {
 public:
  struct Part {
    std::optional<std::string> reasoning;  // null: none
    std::optional<std::string> content;    // null: none
  };

  // thinking: thinking_requested() (the deepseek_v3 and glm45 switch);
  // prompt_text: the prompt's text, or its end (only whether it ends in </think> is read).
  ReasoningSplit(ReasoningParser parser, bool thinking, std::string_view prompt_text);

  // Whether the choice's message gets a `reasoning` field at all (a parser was chosen).
  bool enabled() const { return parser_ != ReasoningParser::kNone; }
  // Whether the output begins with reasoning that </think> ends (structured outputs then apply
  // only after it, as vLLM's reasoning_ended).
  bool reasoning_first() const { return splits_ && !prompt_closed_; }

  // The whole output's split (non-streaming responses).
  Part whole(std::string_view text) const;

  // The next streamed text; `finished` releases what is held back. Both parts empty: nothing
  // to send for this delta.
  struct Delta {
    std::string reasoning, content;
  };
  Delta add(std::string_view text, bool finished);

 private:
  ReasoningParser parser_;
  bool splits_;           // a parser that splits this request's output
  bool prompt_closed_;    // the prompt ends in </think>: everything is content
  bool ended_ = false;    // streaming: </think> seen
  bool started_ = false;  // streaming: the first <think> was taken out
  std::string held_;      // streaming: a tail that may begin a tag
};

}  // namespace ctxpar::server
