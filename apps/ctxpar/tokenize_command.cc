// `ctxpar tokenize` and `ctxpar detokenize`: what the model's tokenizer makes of a prompt, so
// users can check prompts before serving (vLLM's /tokenize and /detokenize, offline).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "ctxpar/core/error.h"
#include "ctxpar/engine/tokenizer_loader.h"
#include "ctxpar/model/model_location.h"
#include "output_format.h"

namespace ctxpar::app {
namespace {

struct TokenizeOptions {
  std::string model = "builtin:tiny-llama";
  std::string tokenizer;
  std::vector<std::string> inputs;  // texts (tokenize) or "1,2,3" id lists (detokenize)
  bool no_special_tokens = false;
  bool json = false;
};

void add_common(CLI::App* cmd, TokenizeOptions& o) {
  cmd->add_option("--model", o.model,
                  "builtin:NAME, a Hugging Face model directory, or a repo id in the Hugging "
                  "Face cache")
      ->capture_default_str();
  cmd->add_option("--tokenizer", o.tokenizer,
                  "directory of tokenizer.json, or a repo id in the Hugging Face cache; default: "
                  "the model's");
  cmd->add_flag("--json", o.json, "one JSON object per input (vLLM's response fields)");
}

std::string json_line(const nlohmann::json& j) {
  // Token strings of byte-level pieces can be partial characters: written as U+FFFD.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void tokenize(const TokenizeOptions& o) {
  const tokenizer::LoadedTokenizer t =
      engine::load_tokenizer(model::locate_model(o.model), model::locate_tokenizer(o.tokenizer));
  for (const std::string& text : o.inputs) {
    const std::vector<int32_t> ids = t.tokenizer->encode(text, !o.no_special_tokens);
    std::vector<std::string> strs;
    for (const int32_t id : ids) strs.push_back(t.tokenizer->id_to_token(id).value_or(""));
    if (o.json) {
      std::printf(
          "%s\n",
          json_line({{"count", ids.size()}, {"tokens", ids}, {"token_strs", strs}}).c_str());
      continue;
    }
    std::printf("\"%s\": %zu tokens\n  ids: %s\n  tokens:", printable(text).c_str(), ids.size(),
                fmt::format("{}", fmt::join(ids, ",")).c_str());
    for (const std::string& s : strs) std::printf(" \"%s\"", printable(s).c_str());
    std::printf("\n");
  }
}

std::vector<int32_t> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long v = -1;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    CTXPAR_CHECK_INPUT(
        used == item.size() && used > 0 && v >= 0 && v <= INT32_MAX,
        "'{}' in '{}' is not a token id (give comma-separated non-negative integers)", item, text);
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

void detokenize(const TokenizeOptions& o) {
  const tokenizer::LoadedTokenizer t =
      engine::load_tokenizer(model::locate_model(o.model), model::locate_tokenizer(o.tokenizer));
  for (const std::string& list : o.inputs) {
    const std::string text = t.tokenizer->decode(parse_id_list(list), o.no_special_tokens);
    if (o.json) {
      std::printf("%s\n", json_line({{"prompt", text}}).c_str());
    } else {
      std::printf("\"%s\"\n", printable(text).c_str());
    }
  }
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
  auto t = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "show the token ids and tokens of texts");
  add_common(cmd, *t);
  cmd->add_flag("--no-special-tokens", t->no_special_tokens,
                "do not add the post-processor's special tokens (BOS); vLLM's "
                "add_special_tokens=false");
  cmd->add_option("texts", t->inputs, "texts to tokenize")->required();
  cmd->callback([t] { tokenize(*t); });

  auto d = std::make_shared<TokenizeOptions>();
  CLI::App* dcmd = app.add_subcommand("detokenize", "show the text of token ids");
  add_common(dcmd, *d);
  dcmd->add_flag("--skip-special-tokens", d->no_special_tokens,
                 "leave special tokens out of the text");
  dcmd->add_option("ids", d->inputs, "comma-separated token ids (one list per argument)")
      ->required();
  dcmd->callback([d] { detokenize(*d); });
}

}  // namespace ctxpar::app
