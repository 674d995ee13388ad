#include "ctxpar/tokenizer/tokenizer_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/hf_tokenizer.h"
#include "ctxpar/tokenizer/json_node.h"

namespace ctxpar::tokenizer {
namespace {

namespace fs = std::filesystem;

// transformers' named special tokens, in the order it adds the missing ones.
constexpr std::string_view kSpecialNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                              "pad_token", "cls_token", "mask_token"};

// A special token written as a string or as an AddedToken object.
AddedToken parse_token(const JsonNode& node, bool string_is_normalized) {
  AddedToken t;
  t.special = true;
  if (node.json().is_string()) {
    t.content = node.string();
    t.normalized = string_is_normalized;
    return t;
  }
  if (!node.json().is_object()) node.fail("must be a token string or an AddedToken object");
  t.content = node.at("content").string();
  t.single_word = node.bool_or("single_word", false);
  t.lstrip = node.bool_or("lstrip", false);
  t.rstrip = node.bool_or("rstrip", false);
  t.normalized = node.bool_or("normalized", !t.special);
  t.special = node.bool_or("special", true);
  return t;
}

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  CTXPAR_CHECK_INPUT(in.good(), "{} cannot be opened", path.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void add_unique(std::vector<int32_t>& ids, int32_t id) {
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

GenerationConfig read_generation_config(const std::string& dir) {
  GenerationConfig out;
  const fs::path path = fs::path(dir) / "generation_config.json";
  if (dir.empty() || !fs::exists(path)) return out;
  return parse_generation_config(read_json_file(path.string()), path.string());
}

GenerationConfig parse_generation_config(const nlohmann::json& json, const std::string& source) {
  GenerationConfig out;
  const JsonNode root(json, source);
  if (!json.is_object()) root.fail("must be a JSON object");
  if (const auto eos = root.find("eos_token_id")) {
    std::vector<JsonNode> ids = eos->json().is_array() ? eos->elements() : std::vector{*eos};
    for (const JsonNode& id : ids) {
      const int64_t v = id.integer();
      if (v < 0 || v > INT32_MAX) id.fail("must be a non-negative 32-bit token id");
      add_unique(out.eos_token_ids, static_cast<int32_t>(v));
    }
  }
  GenerationDefaults& g = out.defaults;
  auto number = [&](std::string_view key, std::optional<double>& dst) {
    if (const auto v = root.find(key)) dst = v->number();
  };
  auto integer = [&](std::string_view key, std::optional<int64_t>& dst) {
    if (const auto v = root.find(key)) dst = v->integer();
  };
  number("temperature", g.temperature);
  number("top_p", g.top_p);
  number("min_p", g.min_p);
  number("repetition_penalty", g.repetition_penalty);
  integer("top_k", g.top_k);
  integer("max_new_tokens", g.max_new_tokens);
  return out;
}

bool rewrites_post_processor(std::string_view c) {
  return c == "LlamaTokenizer" || c == "LlamaTokenizerFast" || c == "CodeLlamaTokenizer" ||
         c == "CodeLlamaTokenizerFast" || c == "GemmaTokenizer" || c == "GemmaTokenizerFast";
}

const std::string* LoadedTokenizer::chat_template(std::string_view name) const {
  for (const NamedChatTemplate& t : chat_templates) {
    if (t.name == name) return &t.source;
  }
  return nullptr;
}

LoadedTokenizer load_hf_tokenizer(const std::string& tokenizer_dir,
                                  const std::string& generation_dir) {
  const fs::path dir(tokenizer_dir);
  const fs::path json_path = dir / "tokenizer.json";
  CTXPAR_CHECK_INPUT(fs::exists(json_path),
                     "{} has no tokenizer.json (ctxpar reads Hugging Face tokenizer.json files{})",
                     tokenizer_dir,
                     fs::exists(dir / "tokenizer.model")
                         ? "; this directory has only a SentencePiece tokenizer.model: save it as "
                           "tokenizer.json with transformers' AutoTokenizer.save_pretrained"
                         : "");
  std::unique_ptr<HfTokenizer> tok = HfTokenizer::from_file(json_path.string());
  LoadedTokenizer out;

  const fs::path config_path = dir / "tokenizer_config.json";
  nlohmann::json config_json = nlohmann::json::object();
  if (fs::exists(config_path)) config_json = read_json_file(config_path.string());
  const JsonNode config(config_json, config_path.string());
  if (!config_json.is_object()) config.fail("tokenizer_config.json must be a JSON object");

  // Tokens transformers adds to the backend: added_tokens_decoder entries tokenizer.json does
  // not have (by id), then named special tokens that are not added tokens yet.
  std::vector<AddedToken> extra;
  if (const auto decoder = config.find("added_tokens_decoder")) {
    if (!decoder->json().is_object()) decoder->fail("must be an object of id: AddedToken");
    std::map<int64_t, AddedToken> by_id;
    for (const auto& [key, value] : decoder->json().items()) {
      int64_t id = -1;
      try {
        id = std::stoll(key);
      } catch (const std::exception&) {
        decoder->fail("key '{}' is not a token id", key);
      }
      AddedToken t = parse_token(decoder->at(key), false);
      t.special = decoder->at(key).bool_or("special", false);
      by_id[id] = std::move(t);
    }
    for (auto& [id, t] : by_id) {
      if (!tok->has_added_token(t)) extra.push_back(std::move(t));
    }
  }
  std::map<std::string, std::string> named;  // name → content
  for (const std::string_view name : kSpecialNames) {
    const auto node = config.find(name);
    if (!node) continue;
    AddedToken t = parse_token(*node, false);
    named[std::string(name)] = t.content;
    const bool queued = std::any_of(extra.begin(), extra.end(),
                                    [&](const auto& e) { return e.content == t.content; });
    if (!queued && !tok->is_added_token(t.content)) extra.push_back(std::move(t));
  }
  for (const std::string_view list : {"additional_special_tokens", "extra_special_tokens"}) {
    const auto node = config.find(list);
    if (!node) continue;
    std::vector<JsonNode> items;
    if (node->json().is_object()) {
      for (const auto& [key, value] : node->json().items()) items.push_back(node->at(key));
    } else {
      items = node->elements();
    }
    for (const JsonNode& item : items) {
      AddedToken t = parse_token(item, false);
      if (!tok->is_added_token(t.content)) extra.push_back(std::move(t));
    }
  }
  if (!extra.empty()) tok->add_tokens(extra);

  auto id_of = [&](const std::string& name) -> std::optional<int32_t> {
    const auto it = named.find(name);
    if (it == named.end()) return std::nullopt;
    return tok->token_to_id(it->second);
  };
  if (named.contains("bos_token")) out.bos_token = named["bos_token"];
  if (named.contains("eos_token")) out.eos_token = named["eos_token"];
  if (named.contains("pad_token")) out.pad_token = named["pad_token"];
  if (named.contains("unk_token")) out.unk_token = named["unk_token"];
  out.bos_token_id = id_of("bos_token");
  out.eos_token_id = id_of("eos_token");
  out.pad_token_id = id_of("pad_token");

  // LlamaTokenizerFast (transformers 4.x) rebuilds the post-processor from the flags.
  out.truncation_side = config.string_or("truncation_side", "right");
  if (out.truncation_side != "left" && out.truncation_side != "right") {
    config.fail("truncation_side {} must be \"left\" or \"right\"", out.truncation_side);
  }
  const std::string tokenizer_class = config.string_or("tokenizer_class", "");
  if (rewrites_post_processor(tokenizer_class)) {
    const bool add_bos = config.bool_or("add_bos_token", true);
    const bool add_eos = config.bool_or("add_eos_token", false);
    std::vector<int32_t> prefix, suffix;
    if (add_bos) {
      if (!out.bos_token_id) {
        config.fail("add_bos_token is true but bos_token {} is not a token of {}",
                    out.bos_token ? "'" + *out.bos_token + "'" : "is not set", json_path.string());
      }
      prefix.push_back(*out.bos_token_id);
    }
    if (add_eos) {
      if (!out.eos_token_id) {
        config.fail("add_eos_token is true but eos_token {} is not a token of {}",
                    out.eos_token ? "'" + *out.eos_token + "'" : "is not set", json_path.string());
      }
      suffix.push_back(*out.eos_token_id);
    }
    tok->set_post_processor(
        std::make_unique<TemplatePostProcessor>(std::move(prefix), std::move(suffix)));
  }

  if (const auto templates = config.find("chat_template")) {
    if (templates->json().is_string()) {
      out.chat_templates.push_back({"default", templates->string()});
    } else {
      for (const JsonNode& t : templates->elements()) {
        out.chat_templates.push_back({t.at("name").string(), t.at("template").string()});
      }
    }
  }
  if (const fs::path jinja = dir / "chat_template.jinja"; fs::exists(jinja)) {
    std::string source = read_text_file(jinja);
    auto it = std::find_if(out.chat_templates.begin(), out.chat_templates.end(),
                           [](const auto& t) { return t.name == "default"; });
    if (it != out.chat_templates.end()) {
      it->source = std::move(source);
    } else {
      out.chat_templates.insert(out.chat_templates.begin(), {"default", std::move(source)});
    }
  }

  if (out.eos_token_id) out.eos_token_ids.push_back(*out.eos_token_id);
  GenerationConfig generation = read_generation_config(generation_dir);
  for (const int32_t id : generation.eos_token_ids) add_unique(out.eos_token_ids, id);
  out.generation = generation.defaults;
  out.tokenizer = std::move(tok);
  return out;
}

}  // namespace ctxpar::tokenizer
