// TokenVocabulary: every token's bytes, arranged as a byte trie (preorder) so that the tokens a
// matcher state allows can be found by one walk that shares work between tokens with a common
// prefix and skips a whole subtree at the first byte refused.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ctxpar::structured {

// A byte trie of some of the tokens, in preorder.
class ByteTrie {
 public:
  struct Node {
    uint8_t byte = 0;           // the edge from the parent
    uint16_t depth = 0;         // bytes from the root (the root is node 0, depth 0)
    uint32_t subtree_end = 0;   // one past the last node of this node's subtree
    uint32_t tokens_begin = 0;  // tokens whose bytes end here: token_ids()[begin, end)
    uint32_t tokens_end = 0;
  };
  // The tries of the tokens `ids` (each with bytes) spelled by `bytes`.
  ByteTrie(const std::vector<std::optional<std::string>>& bytes, std::vector<int32_t> ids);

  std::span<const Node> nodes() const { return nodes_; }
  std::span<const int32_t> token_ids() const { return token_ids_; }
  int32_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;  // ids sorted by their bytes
  int32_t max_depth_ = 0;
};

class TokenVocabulary {
 public:
  // bytes[id]: what token id adds to the text, or nullopt for a token that may never appear
  // inside a structured output (special tokens; stop tokens are handled apart). Empty byte
  // strings count as nullopt.
  explicit TokenVocabulary(std::vector<std::optional<std::string>> bytes);

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  // nullopt for ids outside [0, size()) too.
  const std::optional<std::string>& bytes(int32_t id) const;

  // Every token with bytes.
  const ByteTrie& trie() const { return all_; }

  // Inside a JSON string that has no length limit, between characters, a token of only plain
  // string bytes (no '"', '\\' or control character; UTF-8 that is valid from a character
  // boundary, possibly ending inside a character) is always allowed, whatever the rest of the
  // state: those ids as a mask [mask_words(size())], and the trie of all the other tokens.
  std::span<const uint32_t> plain_string_tokens() const { return plain_; }
  // The plain tokens, and for each the characters it adds to a string (a character it ends
  // inside counts): [number of plain tokens] each.
  std::span<const int32_t> plain_ids() const { return plain_ids_; }
  std::span<const uint16_t> plain_chars() const { return plain_chars_; }
  const ByteTrie& non_plain_trie() const { return non_plain_; }

 private:
  std::vector<std::optional<std::string>> bytes_;
  std::vector<uint32_t> plain_;
  std::vector<int32_t> plain_ids_;
  std::vector<uint16_t> plain_chars_;
  ByteTrie all_;
  ByteTrie non_plain_;
};

}  // namespace ctxpar::structured
