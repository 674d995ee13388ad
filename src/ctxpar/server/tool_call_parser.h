// vLLM's --tool-call-parser (with --enable-auto-tool-choice): tool calls parsed out of a chat
// output's text. Each format puts calls between an opening and a closing tag:
//   hermes  (Qwen2.5, Qwen3, Hermes): <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//   glm45   (GLM-4.5, GLM-4.6), glm47 (GLM-4.7, GLM-5):
//           <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>
//   deepseek_v32 (DeepSeek-V3.2): a DSML block of invokes,
//           <｜DSML｜function_calls><｜DSML｜invoke name="NAME"><｜DSML｜parameter name="K"
//           string="true|false">V</｜DSML｜parameter>...</｜DSML｜invoke>...</｜DSML｜function_calls>
//   qwen3_coder (Qwen3-Coder): <tool_call><function=NAME><parameter=K>V</parameter>...
//           </function></tool_call>, values typed by the tools' schemas
//   deepseek_v3 (DeepSeek-V3, R1), deepseek_v31 (DeepSeek-V3.1): a block of calls,
//           <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>...<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
// (the calls' text in hermes_tool_calls.h, glm_tool_calls.h, dsml_tool_calls.h,
// qwen3_coder_tool_calls.h and deepseek_tool_calls.h). llama3_json (Llama 3.x) has no tags: JSON
// objects anywhere in the output are the calls (llama_tool_calls.h says how it splits an output);
// nor has pythonic (Llama 3.2, Llama 4): the output is a Python list of calls
// (pythonic_tool_calls.h).
//
// A whole output, as vLLM splits it: the calls of every closed block (hermes, qwen3_coder,
// deepseek_v3 and deepseek_v31: a block left open at the end counts too), each with its
// arguments as JSON text in Python's json.dumps form (", " and ": ", keys in the model's order),
// and the text before the first opening tag as content (null when empty; glm and qwen3_coder:
// also when only whitespace). A DSML, DeepSeek or qwen3_coder block holds any number of calls,
// the others one. Text after the first call is dropped. A block that is no call is skipped (glm,
// qwen3_coder), or makes the output no calls (hermes, glm when json.dumps refuses a value,
// qwen3_coder when vLLM's parser raises); without calls the whole output is content. qwen3_coder
// also reads calls without any <tool_call> (see its header).
// Streamed, text outside blocks goes out as content. A hermes call goes out as vLLM streams it:
// its id and name as soon as the name is whole, then its arguments piece by piece as the model
// writes them, in the json.dumps form of the whole response (vLLM streams the model's own
// spacing), the rest when the block closes; a block whose text turns out to be no call after its
// name went out ends there. Other formats send each block as whole calls once its closing tag
// arrives (vLLM streams arguments piece by piece; the client's accumulated message is the same);
// a block that gives no call goes out as content, tags and all, and so does a block still open
// when the output ends (hermes, qwen3_coder, deepseek_v3, deepseek_v31: parsed, as whole).
// qwen3_coder holds a <function= that comes before any <tool_call>, and all after it, until the
// output ends, and then sends that part's split: vLLM reads such a call only if no <tool_call>
// follows anywhere. llama3_json streams the text before the first `{` as content and holds the
// rest: one `{` that is not a call turns the whole output into content, so no call is certain
// before the output ends (a `;` and the next call's start do not make the one before it final). The
// calls go out when the output ends; as soon as a `{` is known not to start a call, the held text
// and all that follows go out as content. The accumulated message is then the whole output's split,
// except that text before the first `{` of an output with calls was already sent as content
// (vLLM's own stream sends all of such an output as content, calls included).
// pythonic sends an output that does not start with '[' as content as it comes, and holds one
// that does until it ends, then sends its split.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/server/block_call_stream.h"
#include "ctxpar/server/named_call_stream.h"
#include "ctxpar/server/tool_call.h"

namespace ctxpar::server {

enum class ToolCallParser {
  kNone,
  kHermes,
  kGlm45,
  kGlm47,
  kDeepSeekV32,
  kDeepSeekV31,
  kDeepSeekV3,
  kLlama3Json,
  kQwen3Coder,
  kPythonic
};

// "" → kNone; "hermes", "glm45", "glm47", "deepseek_v32", "deepseek_v31", "deepseek_v3",
// "llama3_json", "qwen3_coder", "pythonic". Throws InputError naming the value and the valid ones.
ToolCallParser parse_tool_call_parser(std::string_view name);

// The names parse_tool_call_parser takes, for messages ("hermes, glm45, ... or pythonic").
std::string_view tool_call_parser_names();

// Whether chat outputs keep special tokens in their text for this parser, as vLLM's parser asks
// (hermes sets skip_special_tokens false, its tags may be special tokens; llama3_json,
// qwen3_coder and pythonic leave it, so Llama's <|python_tag|> is skipped as in vLLM).
bool tool_call_parser_keeps_special_tokens(ToolCallParser parser);

struct ToolCallSplit {
  std::optional<std::string> content;  // null: none
  std::vector<ToolCall> calls;
};

// The whole output's calls and content. `tools`: the request's tools (glm and deepseek_v32 type
// arguments by their schemas).
ToolCallSplit split_tool_calls(ToolCallParser parser, std::string_view text,
                               const nlohmann::json& tools);

// One choice's streamed output.
class ToolCallStream {
 public:
  // `tools` (the request's) outlives the stream; null: none.
  explicit ToolCallStream(ToolCallParser parser = ToolCallParser::kNone,
                          const nlohmann::json* tools = nullptr)
      : parser_(parser), tools_(tools) {}

  struct Delta {
    std::string content;
    std::vector<ToolCallPiece> calls;
  };
  // The next text (after any reasoning split); `finished` releases what is held back, and an
  // open block is handled as the header says.
  Delta add(std::string_view text, bool finished);
  int calls_sent() const { return calls_sent_; }

 private:
  ToolCallParser parser_;
  const nlohmann::json* tools_;
  Delta add_tagged(std::string_view text, bool finished);
  // qwen3_coder after a <function= outside any block: `text` waits for the end of the output.
  Delta add_held_to_end(std::string text, bool finished);
  Delta add_llama3_json(std::string_view text, bool finished);
  Delta add_pythonic(std::string_view text, bool finished);

  std::string held_;          // a tail that may begin the opening tag, or an open block's text
  bool in_block_ = false;     // held_ is the text of a block after its opening tag (llama3_json:
                              // from the first `{`; pythonic: the output, begun with '[')
  bool all_content_ = false;  // llama3_json, pythonic: the output was found to hold no calls
  size_t scanned_size_ = 0;   // llama3_json: held_'s size at its last scan
  bool block_seen_ = false;   // an opening tag has come
  bool held_to_end_ = false;  // qwen3_coder: held_ waits for the end (add_held_to_end)
  // hermes: the open block's call as it streams, and the block bytes given to it.
  void stream_hermes(const std::string& block, Delta& d);
  void close_hermes(std::string_view body, bool closed, Delta& d);
  void send(std::vector<ToolCall> calls, Delta& d);
  std::optional<NamedCallStream> hermes_;
  size_t hermes_fed_ = 0;
  // qwen3_coder, glm45, glm47 and the DeepSeek formats: the open block's calls as they stream.
  std::optional<BlockCallStream> block_stream_;
  BlockCallStream new_block_stream() const;
  // The request's tools, or none (an empty JSON).
  const nlohmann::json& tools() const;
  int calls_sent_ = 0;
};

}  // namespace ctxpar::server
