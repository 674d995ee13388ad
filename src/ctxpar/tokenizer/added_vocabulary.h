// The added tokens of a tokenizer (tokenizer.json "added_tokens", and special tokens that
// tokenizer_config.json names): matched in the text before the model sees it, longest first
// at the leftmost position, with `tokenizers`' single_word / lstrip / rstrip / normalized
// rules; special ones can be skipped when decoding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ctxpar/tokenizer/bpe_model.h"
#include "ctxpar/tokenizer/normalizers.h"
#include "ctxpar/tokenizer/pretokenized.h"

namespace ctxpar::tokenizer {

struct AddedToken {
  std::string content;
  bool single_word = false;  // only where no word character touches it on either side
  bool lstrip = false;       // takes the whitespace before it
  bool rstrip = false;       // takes the whitespace after it
  bool normalized = true;    // matched in the normalized text (else in the raw text)
  bool special = false;      // skipped by decode(skip_special_tokens = true)
};

class AddedVocabulary {
 public:
  // Adds tokens as `tokenizers`' add_tokens does: a token already known (added or in the
  // model's vocabulary) keeps that id, a new one gets the next free id; an empty content is
  // ignored. `normalizer` (may be null) gives normalized tokens the form they are matched in.
  void add(const std::vector<AddedToken>& tokens, const BpeModel& model,
           const Normalizer* normalizer);

  // Step 1 of encoding: splits the raw pieces at non-normalized tokens.
  void split_raw(PreTokenized& text) const;
  // Step 2: splits the (normalized) pieces at normalized tokens.
  void split_normalized(PreTokenized& text) const;

  std::optional<int32_t> id_of(std::string_view content) const;
  // Whether a token with this content and these flags is present.
  bool contains(const AddedToken& token) const;
  // The token's text for decoding: its normalized form when that differs, else its content.
  const std::string* token_of(int32_t id) const;
  bool is_special_token(std::string_view token) const { return special_.contains(token); }
  int32_t max_id() const { return max_id_; }
  bool empty() const { return by_id_.empty(); }

 private:
  // Byte trie over patterns for leftmost-longest matching.
  class Matcher {
   public:
    void build(const std::vector<std::pair<std::string, int32_t>>& patterns);
    bool empty() const { return nodes_.size() <= 1; }
    // The longest pattern starting at `at`: (length, id) or length 0.
    std::pair<uint32_t, int32_t> longest_at(std::string_view text, size_t at) const;

   private:
    struct Node {
      std::vector<std::pair<unsigned char, uint32_t>> children;  // sorted by byte
      int32_t id = -1;
    };
    std::vector<Node> nodes_;
    std::array<bool, 256> first_byte_{};
  };

  void rebuild();
  void split_with(PreTokenized& text, const Matcher& matcher) const;

  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> by_content_;
  std::unordered_map<int32_t, AddedToken> by_id_;
  std::unordered_map<int32_t, std::string> normalized_form_;
  std::unordered_set<std::string, StringHash, std::equal_to<>> special_;
  Matcher raw_, normalized_;
  int32_t max_id_ = -1;
};

}  // namespace ctxpar::tokenizer
