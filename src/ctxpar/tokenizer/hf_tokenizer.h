// HfTokenizer: a Hugging Face tokenizer.json (BPE model), computing exactly what the
// `tokenizers` package computes for encode(text, add_special_tokens) and decode(ids,
// skip_special_tokens). Pipeline: added tokens in the raw text → normalizer → added tokens
// in the normalized text → pre-tokenizer → BPE per pre-token → post-processor.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/tokenizer/added_vocabulary.h"
#include "ctxpar/tokenizer/bpe_model.h"
#include "ctxpar/tokenizer/decoders.h"
#include "ctxpar/tokenizer/normalizers.h"
#include "ctxpar/tokenizer/post_processors.h"
#include "ctxpar/tokenizer/pre_tokenizers.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::tokenizer {

class HfTokenizer final : public Tokenizer {
 public:
  // Reads tokenizer.json at `path`. Throws ctxpar::InputError naming the file for an unreadable or
  // malformed file, and the JSON path of a field of the wrong type or an unsupported
  // component type (with the supported ones). `truncation` and `padding` are ignored, as
  // transformers ignores them for encode.
  static std::unique_ptr<HfTokenizer> from_file(const std::string& path);
  // The same from parsed JSON; `source` names it in error messages.
  HfTokenizer(const nlohmann::json& json, const std::string& source);

  // Text that is not valid UTF-8 is first repaired (each maximal invalid subsequence becomes
  // U+FFFD), which is what Python's bytes.decode("utf-8", "replace") hands `tokenizers`.
  // Thread-safe.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const override;
  // Ids in [0, vocab_size()) that have no token are skipped, as `tokenizers` skips them.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = true) const override;
  int32_t vocab_size() const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  // Exact for byte-level BPE (the ByteLevel decoder's table, bytes of partial characters
  // included) and for byte-fallback tokens "<0xAB>"; other tokens are decoded alone, which a
  // decoder that strips a leading space (Metaspace) gets wrong for a token mid-text.
  std::optional<std::string> token_bytes(int32_t id) const override;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // Whether `id` is an added token marked special (what skip_special_tokens leaves out).
  bool is_special(int32_t id) const;

  // Whether `content` is an added token (with exactly these flags).
  bool is_added_token(std::string_view content) const { return added_.id_of(content).has_value(); }
  bool has_added_token(const AddedToken& token) const { return added_.contains(token); }

  // Loading steps of tokenizer_config.json (see tokenizer_files.h): more added tokens, and a
  // replacement post-processor. Not thread-safe; call before sharing the tokenizer.
  void add_tokens(const std::vector<AddedToken>& tokens);
  void set_post_processor(std::unique_ptr<PostProcessor> post_processor);
  bool has_post_processor() const { return post_processor_ != nullptr; }

 private:
  // The token string decode() starts from (added tokens first), or nullptr.
  const std::string* token_string(int32_t id) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
};

}  // namespace ctxpar::tokenizer
