// tokenizer.json "model" of type BPE: vocabulary, ranked merges, unknown-token and byte
// fallback handling, with the semantics of `tokenizers`' models::bpe (merge the adjacent pair
// of lowest rank, leftmost first, until none applies). Dropout is not supported (it makes
// encoding random): a non-zero dropout is rejected at load.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ctxpar/tokenizer/json_node.h"

namespace ctxpar::tokenizer {

// Heterogeneous lookup by string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // Throws ctxpar::InputError naming the file and field for a malformed model: wrong types,
  // merges in neither form, a merge of tokens that are not in the vocabulary, dropout.
  explicit BpeModel(const JsonNode& model);

  // Appends the ids of one pre-token (non-empty, valid UTF-8; raw bytes after
  // use_raw_bytes()). Safe to call from several threads at once.
  void tokenize(std::string_view pre_token, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary's spelling of `id`, or nullptr.
  const std::string* id_to_token(int32_t id) const;
  // Entries of the vocabulary (`tokenizers`' get_vocab_size) and the largest id.
  size_t vocab_entries() const { return vocab_.size(); }
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

  // Whether pre-tokens may arrive as raw bytes (see use_raw_bytes).
  bool can_use_raw_bytes() const { return prefix_.empty() && suffix_.empty(); }
  // Pre-tokens arrive as raw bytes instead of GPT-2 byte-level characters: the model maps
  // them itself (the same ids, without building the mapped string first).
  void use_raw_bytes();

 private:
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // neighbours in the word (-1: none)
    uint32_t len;        // bytes covered; 0 once merged into the left neighbour
  };
  struct MergeEntry {
    uint64_t key = kEmpty;
    uint32_t rank;
    int32_t new_id;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  const MergeEntry* find_merge(int32_t left, int32_t right) const;
  void insert_merge(int32_t left, int32_t right, uint32_t rank, int32_t new_id);
  // The initial symbols of a word: its characters with unk and byte fallback, or (raw) its
  // bytes, each of which has a token.
  void initial_symbols(std::string_view word, bool raw, std::vector<Symbol>& symbols) const;
  void merge_all(std::vector<Symbol>& symbols) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // encode_word through the per-thread cache.
  void encode_cached(std::string_view word, std::vector<int32_t>& out) const;

  StringIdMap vocab_;
  std::vector<std::string> id_to_token_;  // "" where an id has no token
  std::vector<bool> has_token_;
  std::vector<MergeEntry> merges_;  // open addressing, power-of-two size
  uint64_t merge_mask_ = 0;
  std::optional<int32_t> unk_id_;
  std::string unk_token_;
  std::string prefix_, suffix_;  // continuing_subword_prefix, end_of_word_suffix
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::array<int32_t, 256> byte_fallback_ids_{};  // <0xNN> tokens, -1 if absent
  // SentencePiece-style vocabularies spell "▁" only at the start of a token: no merge can
  // then join a character to a following "▁", and a word is encoded as the independent
  // pieces that start there (same ids; long unsplit texts stay fast and cacheable).
  bool split_before_metaspace_ = false;
  // Raw-bytes mode: the vocabulary keyed by the bytes its byte-level tokens stand for.
  bool raw_bytes_ = false;
  StringIdMap raw_vocab_;
  std::array<int32_t, 256> raw_byte_ids_{};  // -1: the byte's character is not in the vocab
  uint64_t cache_owner_;                     // identifies this model's per-thread cache
};

}  // namespace ctxpar::tokenizer
