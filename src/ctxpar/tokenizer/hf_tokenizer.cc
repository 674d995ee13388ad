#include "ctxpar/tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/json_node.h"
#include "ctxpar/tokenizer/pretokenized.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

std::vector<AddedToken> parse_added_tokens(const JsonNode& root) {
  std::vector<AddedToken> tokens;
  const auto list = root.find("added_tokens");
  if (!list) return tokens;
  for (const JsonNode& t : list->elements()) {
    AddedToken a;
    a.content = t.at("content").string();
    a.single_word = t.bool_or("single_word", false);
    a.lstrip = t.bool_or("lstrip", false);
    a.rstrip = t.bool_or("rstrip", false);
    a.normalized = t.bool_or("normalized", true);
    a.special = t.bool_or("special", false);
    if (const auto id = t.find("id"); id && id->integer() < 0) id->fail("must be non-negative");
    tokens.push_back(std::move(a));
  }
  return tokens;
}

}  // namespace

std::unique_ptr<HfTokenizer> HfTokenizer::from_file(const std::string& path) {
  const nlohmann::json json = read_json_file(path);
  return std::make_unique<HfTokenizer>(json, path);
}

HfTokenizer::HfTokenizer(const nlohmann::json& json, const std::string& source) {
  const JsonNode root(json, source);
  if (!json.is_object()) root.fail("a tokenizer.json must be a JSON object");
  if (const auto version = root.find("version"); version && version->string() != "1.0") {
    version->fail("tokenizer.json version '{}' is not supported; supported: 1.0",
                  version->string());
  }
  const JsonNode model = root.at("model");
  model.type_among("model", {"BPE"});
  model_ = std::make_unique<BpeModel>(model);
  if (const auto n = root.find("normalizer")) normalizer_ = make_normalizer(*n);
  if (const auto p = root.find("pre_tokenizer")) pre_tokenizer_ = make_pre_tokenizer(*p);
  if (const auto p = root.find("post_processor")) post_processor_ = make_post_processor(*p);
  if (const auto d = root.find("decoder")) decoder_ = make_decoder(*d);
  added_.add(parse_added_tokens(root), *model_, normalizer_.get());
  // Byte-level BPE: the last pre-tokenizer leaves pre-tokens as bytes and the model maps them
  // (same ids, no mapped copy of the text).
  if (ByteLevelPreTokenizer* bl = final_byte_level(pre_tokenizer_.get());
      bl != nullptr && model_->can_use_raw_bytes()) {
    bl->leave_bytes_unmapped();
    model_->use_raw_bytes();
  }
}

void HfTokenizer::add_tokens(const std::vector<AddedToken>& tokens) {
  added_.add(tokens, *model_, normalizer_.get());
}

void HfTokenizer::set_post_processor(std::unique_ptr<PostProcessor> post_processor) {
  post_processor_ = std::move(post_processor);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view input, bool add_special_tokens) const {
  const std::string repaired = utf8::is_valid(input) ? std::string() : utf8::repair(input);
  const std::string_view text = repaired.empty() ? input : std::string_view(repaired);
  PreTokenized pt(text);
  added_.split_raw(pt);
  if (normalizer_) {
    std::string buffer;
    for (Piece& p : pt.pieces()) {
      if (p.token >= 0) continue;
      buffer.assign(pt.view(p));
      uint32_t origin = p.origin;
      normalizer_->normalize(buffer, origin);
      pt.assign(p, buffer, origin);
    }
    auto& pieces = pt.pieces();
    pieces.erase(std::remove_if(pieces.begin(), pieces.end(),
                                [](const Piece& p) { return p.token < 0 && p.begin == p.end; }),
                 pieces.end());
  }
  added_.split_normalized(pt);
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pt);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const Piece& p : pt.pieces()) {
    if (p.token >= 0) {
      ids.push_back(p.token);
    } else {
      model_->tokenize(pt.view(p), ids);
    }
  }
  if (post_processor_) post_processor_->process(ids, add_special_tokens);
  return ids;
}

const std::string* HfTokenizer::token_string(int32_t id) const {
  if (const std::string* t = added_.token_of(id)) return t;
  return model_->id_to_token(id);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const int32_t n = vocab_size();
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    CTXPAR_CHECK_INPUT(ids[i] >= 0 && ids[i] < n,
                       "token id {} at index {} is outside the vocabulary [0, {})", ids[i], i, n);
    const std::string* t = token_string(ids[i]);
    if (t == nullptr || (skip_special_tokens && added_.is_special_token(*t))) continue;
    tokens.push_back(*t);
  }
  if (!decoder_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) joined.push_back(' ');
      joined += tokens[i];
    }
    return joined;
  }
  decoder_->decode_chain(tokens);
  std::string text;
  for (const std::string& t : tokens) text += t;
  return text;
}

std::optional<std::string> HfTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::nullopt;
  const std::string* t = token_string(id);
  if (t == nullptr || added_.is_special_token(*t)) return std::nullopt;
  if (decoder_) {
    if (auto raw = decoder_->raw_bytes(*t)) return raw;
  }
  const int32_t one[] = {id};
  return decode(one, false);
}

int32_t HfTokenizer::vocab_size() const {
  return std::max(model_->max_id(), added_.max_id()) + 1;
}

std::optional<std::string> HfTokenizer::id_to_token(int32_t id) const {
  const std::string* t = token_string(id);
  if (t == nullptr) return std::nullopt;
  return *t;
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  if (const auto id = added_.id_of(token)) return id;
  return model_->token_to_id(token);
}

bool HfTokenizer::is_special(int32_t id) const {
  const std::string* t = added_.token_of(id);
  return t != nullptr && added_.is_special_token(*t);
}

}  // namespace ctxpar::tokenizer
