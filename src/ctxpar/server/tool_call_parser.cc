#include "ctxpar/server/tool_call_parser.h"

#include "ctxpar/core/error.h"
#include "ctxpar/server/deepseek_tool_calls.h"
#include "ctxpar/server/dsml_tool_calls.h"
#include "ctxpar/server/glm_tool_calls.h"
#include "ctxpar/server/hermes_tool_calls.h"
#include "ctxpar/server/llama_tool_calls.h"
#include "ctxpar/server/openai_responses.h"  // random_hex
#include "ctxpar/server/python_space.h"
#include "ctxpar/server/pythonic_tool_calls.h"
#include "ctxpar/server/qwen3_coder_tool_calls.h"
#include "ctxpar/server/text_tags.h"

namespace ctxpar::server {
namespace {

constexpr std::string_view kQwen3Function = "<function=";

// How one format marks its calls and splits a whole output.
struct Format {
  std::string_view open, close;
  bool open_block_counts;  // a block left open at the end of the output is parsed too
  bool block_stream;       // an open block's calls stream through BlockCallStream (stable_block)
};

Format format_of(ToolCallParser parser) {
  switch (parser) {
    case ToolCallParser::kHermes:
      return {"<tool_call>", "</tool_call>", true, false};  // streams through NamedCallStream
    case ToolCallParser::kGlm45:
    case ToolCallParser::kGlm47:
      return {"<tool_call>", "</tool_call>", false, true};
    case ToolCallParser::kDeepSeekV32:
      return {"<｜DSML｜function_calls>", "</｜DSML｜function_calls>", false, true};
    case ToolCallParser::kDeepSeekV3:
    case ToolCallParser::kDeepSeekV31:
      // vLLM finds the complete calls of a block the output ends in, too.
      return {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", true, true};
    case ToolCallParser::kQwen3Coder:
      // vLLM reads a block left open at the end.
      return {"<tool_call>", "</tool_call>", true, true};
    case ToolCallParser::kLlama3Json:
    case ToolCallParser::kPythonic:
    case ToolCallParser::kNone:
      break;
  }
  CTXPAR_FAIL("not a tagged tool call format");
}

// The calls of one block's text: empty when it holds none, nullopt when the whole output must
// be content.
std::optional<std::vector<ToolCall>> block_calls(ToolCallParser parser, std::string_view body,
                                                 bool closed, const nlohmann::json& tools) {
  switch (parser) {
    case ToolCallParser::kHermes:
      return hermes_tool_call(body);
    case ToolCallParser::kGlm45:
    case ToolCallParser::kGlm47:
      return glm_tool_call(body, parser == ToolCallParser::kGlm47, tools);
    case ToolCallParser::kDeepSeekV32:
      return dsml_tool_calls(body, tools);
    case ToolCallParser::kDeepSeekV3:
      return deepseek_v3_tool_calls(body);
    case ToolCallParser::kDeepSeekV31:
      return deepseek_v31_tool_calls(body);
    case ToolCallParser::kQwen3Coder:
      return qwen3_coder_tool_calls(body, closed, tools);
    case ToolCallParser::kLlama3Json:
    case ToolCallParser::kPythonic:
    case ToolCallParser::kNone:
      break;
  }
  CTXPAR_FAIL("not a tagged tool call format");
}

// What of an open block's `body` is final (block_call_stream.h), for the formats whose Format
// has block_stream.
std::optional<StableBlock> stable_block(ToolCallParser parser, std::string_view body,
                                        const nlohmann::json& tools) {
  switch (parser) {
    case ToolCallParser::kGlm45:
    case ToolCallParser::kGlm47:
      return glm_stable_block(body, parser == ToolCallParser::kGlm47, tools);
    case ToolCallParser::kDeepSeekV32:
      return dsml_stable_block(body);
    case ToolCallParser::kDeepSeekV3:
    case ToolCallParser::kDeepSeekV31:
      return deepseek_stable_block(body, parser == ToolCallParser::kDeepSeekV3);
    case ToolCallParser::kQwen3Coder:
      return qwen3_coder_stable_block(body, tools);
    case ToolCallParser::kHermes:
    case ToolCallParser::kLlama3Json:
    case ToolCallParser::kPythonic:
    case ToolCallParser::kNone:
      break;
  }
  CTXPAR_FAIL("not a block-streamed tool call format");
}

const nlohmann::json kNoTools;

}  // namespace

ToolCallParser parse_tool_call_parser(std::string_view name) {
  if (name.empty()) return ToolCallParser::kNone;
  if (name == "hermes") return ToolCallParser::kHermes;
  if (name == "glm45") return ToolCallParser::kGlm45;
  if (name == "glm47") return ToolCallParser::kGlm47;
  if (name == "deepseek_v32") return ToolCallParser::kDeepSeekV32;
  if (name == "deepseek_v31") return ToolCallParser::kDeepSeekV31;
  if (name == "deepseek_v3") return ToolCallParser::kDeepSeekV3;
  if (name == "llama3_json") return ToolCallParser::kLlama3Json;
  if (name == "qwen3_coder") return ToolCallParser::kQwen3Coder;
  if (name == "pythonic") return ToolCallParser::kPythonic;
  CTXPAR_INPUT_FAIL("--tool-call-parser '{}' is not supported; use {}", name,
                    tool_call_parser_names());
}

std::string_view tool_call_parser_names() {
  return "hermes, glm45, glm47, deepseek_v32, deepseek_v31, deepseek_v3, llama3_json, "
         "qwen3_coder or pythonic";
}

bool tool_call_parser_keeps_special_tokens(ToolCallParser parser) {
  return parser != ToolCallParser::kNone && parser != ToolCallParser::kLlama3Json &&
         parser != ToolCallParser::kQwen3Coder && parser != ToolCallParser::kPythonic;
}

ToolCallSplit split_tool_calls(ToolCallParser parser, std::string_view text,
                               const nlohmann::json& tools) {
  if (parser == ToolCallParser::kLlama3Json) return split_llama3_json(text);
  if (parser == ToolCallParser::kQwen3Coder) return split_qwen3_coder(text, tools);
  if (parser == ToolCallParser::kPythonic) return split_pythonic(text);
  const Format f = format_of(parser);
  const size_t first = text.find(f.open);
  ToolCallSplit all_content{std::string(text), {}};
  if (first == std::string_view::npos) return all_content;
  ToolCallSplit out;
  for (size_t at = first; at != std::string_view::npos; at = text.find(f.open, at)) {
    const size_t body = at + f.open.size();
    const size_t close = text.find(f.close, body);
    if (close == std::string_view::npos && !f.open_block_counts) break;
    const std::string_view block =
        close == std::string_view::npos ? text.substr(body) : text.substr(body, close - body);
    std::optional<std::vector<ToolCall>> calls =
        block_calls(parser, block, close != std::string_view::npos, tools);
    if (!calls) return all_content;
    for (ToolCall& call : *calls) out.calls.push_back(std::move(call));
    if (close == std::string_view::npos) break;
    at = close + f.close.size();
  }
  if (out.calls.empty()) return all_content;
  // vLLM's chat serving: content that is only whitespace (Python's str.strip) beside calls is
  // null.
  const std::string_view before = text.substr(0, first);
  if (!python_strip_space(before).empty()) out.content = std::string(before);
  return out;
}

ToolCallStream::Delta ToolCallStream::add(std::string_view text, bool finished) {
  if (parser_ == ToolCallParser::kLlama3Json) return add_llama3_json(text, finished);
  if (parser_ == ToolCallParser::kPythonic) return add_pythonic(text, finished);
  return add_tagged(text, finished);
}

ToolCallStream::Delta ToolCallStream::add_llama3_json(std::string_view text, bool finished) {
  Delta d;
  if (all_content_) {
    d.content = text;
    return d;
  }
  if (!in_block_) {
    const size_t brace = text.find('{');
    d.content = text.substr(0, brace);
    if (brace == std::string_view::npos) return d;
    in_block_ = true;
    text.remove_prefix(brace);
  }
  held_ += text;
  // Each scan reads all of held_: past a small size, scan again only when it has grown by an
  // eighth, so that a long call costs linear time (a non-call is then found a little later).
  if (!finished && held_.size() > 1024 && held_.size() < scanned_size_ + held_.size() / 8) {
    return d;
  }
  scanned_size_ = held_.size();
  LlamaJsonScan scan = scan_llama3_json(held_, finished);
  switch (scan.outcome) {
    case LlamaJsonScan::Outcome::kUndecided:
      break;
    case LlamaJsonScan::Outcome::kContent:
      d.content += held_;
      held_.clear();
      all_content_ = true;
      break;
    case LlamaJsonScan::Outcome::kCalls:
      send(std::move(scan.calls), d);
      held_.clear();  // the text around the calls, which vLLM drops
      break;
  }
  return d;
}

ToolCallStream::Delta ToolCallStream::add_pythonic(std::string_view text, bool finished) {
  Delta d;
  if (!all_content_ && !in_block_ && !text.empty()) {
    all_content_ = text[0] != '[';  // vLLM's pattern wants the output to start with '['
    in_block_ = !all_content_;
  }
  if (all_content_) {
    d.content = text;
    return d;
  }
  held_ += text;
  if (!finished) return d;
  ToolCallSplit split = split_pythonic(held_);
  if (split.calls.empty()) d.content = std::move(held_);
  send(std::move(split.calls), d);
  held_.clear();
  return d;
}

void ToolCallStream::send(std::vector<ToolCall> calls, Delta& d) {
  for (ToolCall& call : calls) {
    d.calls.push_back(
        {calls_sent_++, std::move(call.id), std::move(call.name), std::move(call.arguments)});
  }
}

void ToolCallStream::stream_hermes(const std::string& block, Delta& d) {
  if (!hermes_) {
    hermes_.emplace("arguments");
    hermes_fed_ = 0;
  }
  // Never a piece of the closing tag.
  const size_t ready = block.size() - partial_tag_tail(block, "</tool_call>");
  if (ready <= hermes_fed_) return;
  NamedCallStream::Piece p =
      hermes_->add(std::string_view(block).substr(hermes_fed_, ready - hermes_fed_));
  hermes_fed_ = ready;
  if (p.named) {
    d.calls.push_back({calls_sent_++, "chatcmpl-tool-" + random_hex(32), hermes_->name(),
                       std::move(p.arguments)});
  } else if (!p.arguments.empty()) {
    d.calls.push_back({calls_sent_ - 1, "", "", std::move(p.arguments)});
  }
}

void ToolCallStream::close_hermes(std::string_view body, bool closed, Delta& d) {
  std::optional<std::vector<ToolCall>> calls = block_calls(parser_, body, closed, nlohmann::json());
  // The rest of the arguments, when the whole call continues what went out; else (the text
  // was no call after all, or json.loads reads it otherwise) nothing more.
  if (calls && calls->size() == 1 && (*calls)[0].name == hermes_->name()) {
    const std::string& whole = (*calls)[0].arguments;
    const std::string& sent = hermes_->arguments_sent();
    if (whole.size() > sent.size() && whole.compare(0, sent.size(), sent) == 0) {
      d.calls.push_back({calls_sent_ - 1, "", "", whole.substr(sent.size())});
    }
  }
  hermes_.reset();
}

const nlohmann::json& ToolCallStream::tools() const {
  return tools_ != nullptr ? *tools_ : kNoTools;
}

BlockCallStream ToolCallStream::new_block_stream() const {
  const ToolCallParser parser = parser_;
  const nlohmann::json& tools = this->tools();  // the request's: outlives the stream
  return BlockCallStream(
      [parser, &tools](std::string_view body) { return stable_block(parser, body, tools); },
      [parser, &tools](std::string_view text) {
        return block_calls(parser, text, /*closed=*/true, tools);
      });
}

ToolCallStream::Delta ToolCallStream::add_tagged(std::string_view text, bool finished) {
  const Format f = format_of(parser_);
  const nlohmann::json& tools = this->tools();
  Delta d;
  std::string buf = held_ + std::string(text);
  held_.clear();
  if (held_to_end_) return add_held_to_end(std::move(buf), finished);
  for (;;) {
    if (!in_block_) {
      // qwen3_coder: a <function= before any <tool_call> is a call without its tags, unless a
      // <tool_call> follows anywhere (vLLM then reads only the blocks): it waits for the end.
      const std::string_view bare =
          parser_ == ToolCallParser::kQwen3Coder && !block_seen_ ? kQwen3Function : "";
      const size_t open = buf.find(f.open);
      const size_t bare_at = bare.empty() ? std::string::npos : buf.find(bare);
      if (bare_at < open) {
        d.content += buf.substr(0, bare_at);
        held_to_end_ = true;
        Delta rest = add_held_to_end(buf.substr(bare_at), finished);
        d.content += rest.content;
        d.calls = std::move(rest.calls);
        return d;
      }
      if (open == std::string::npos) {
        const size_t keep =
            finished ? 0 : std::max(partial_tag_tail(buf, f.open), partial_tag_tail(buf, bare));
        d.content += buf.substr(0, buf.size() - keep);
        held_ = buf.substr(buf.size() - keep);
        return d;
      }
      d.content += buf.substr(0, open);
      buf.erase(0, open + f.open.size());
      in_block_ = true;
      block_seen_ = true;
    }
    const size_t close = buf.find(f.close);
    const bool hermes = parser_ == ToolCallParser::kHermes;
    if (close == std::string::npos && !finished) {
      if (hermes) stream_hermes(buf, d);
      if (f.block_stream) {
        if (!block_stream_) block_stream_.emplace(new_block_stream());
        block_stream_->add(buf, calls_sent_, d.calls);
      }
      held_ = std::move(buf);
      return d;
    }
    const std::string body = buf.substr(0, close);
    if (hermes) stream_hermes(body, d);
    if (block_stream_) block_stream_->add(body, calls_sent_, d.calls);  // what the delta added
    if (block_stream_ && block_stream_->started()) {
      const bool counts = close != std::string::npos || f.open_block_counts;
      block_stream_->close(
          counts ? block_calls(parser_, body, close != std::string::npos, tools) : std::nullopt,
          calls_sent_, d.calls);
      block_stream_.reset();
      in_block_ = false;
      if (close == std::string::npos) return d;
      buf.erase(0, close + f.close.size());
      continue;
    }
    block_stream_.reset();
    if (hermes_ && hermes_->named()) {
      close_hermes(body, close != std::string::npos, d);
      in_block_ = false;
      if (close == std::string::npos) return d;
      buf.erase(0, close + f.close.size());
      continue;
    }
    hermes_.reset();
    std::optional<std::vector<ToolCall>> calls;
    if (close != std::string::npos || f.open_block_counts) {
      calls = block_calls(parser_, body, close != std::string::npos, tools);
    }
    if (calls && !calls->empty()) {
      send(std::move(*calls), d);
    } else {  // no call after all: its text goes out as it came
      d.content += std::string(f.open) + body;
      if (close != std::string::npos) d.content += f.close;
    }
    in_block_ = false;
    if (close == std::string::npos) return d;
    buf.erase(0, close + f.close.size());
  }
}

ToolCallStream::Delta ToolCallStream::add_held_to_end(std::string text, bool finished) {
  Delta d;
  held_ = std::move(text);
  if (!finished) return d;
  // Everything before held_ went out as content and holds no tag, so the split of held_ alone
  // has the output's calls, and its content is the rest of the output's.
  ToolCallSplit split = split_qwen3_coder(held_, tools());
  d.content = split.calls.empty() ? held_ : held_.substr(0, qwen3_coder_content_end(held_));
  send(std::move(split.calls), d);
  held_.clear();
  return d;
}

}  // namespace ctxpar::server
