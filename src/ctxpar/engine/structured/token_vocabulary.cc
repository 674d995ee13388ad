#include "ctxpar/engine/structured/token_vocabulary.h"

#include <algorithm>
#include <limits>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/structured/string_scan.h"
#include "ctxpar/engine/structured/token_mask.h"

namespace ctxpar::structured {

namespace {

std::vector<std::optional<std::string>> without_empty(std::vector<std::optional<std::string>> b) {
  for (auto& x : b) {
    if (x && x->empty()) x.reset();
  }
  return b;
}

// The characters `t` adds to a string from a character boundary (one it ends inside counts),
// or -1 when a byte is not plain string content (a quote, an escape, a control character,
// invalid UTF-8).
int plain_string_chars(const std::string& t) {
  StringScan s;
  int chars = 0;
  for (const char c : t) {
    const ScanResult r = scan_string_byte(s, static_cast<uint8_t>(c), false);
    if (r == ScanResult::kReject || r == ScanResult::kClose || s.hex_left > 0 ||
        (r == ScanResult::kMore && s.need == 0)) {
      return -1;  // kMore without a UTF-8 continuation pending: an escape began
    }
    if (r == ScanResult::kChar) ++chars;
  }
  return chars + (s.need > 0 ? 1 : 0);
}

bool plain_string_bytes(const std::string& t) {
  return plain_string_chars(t) >= 0;
}

std::vector<int32_t> ids_where(const std::vector<std::optional<std::string>>& bytes, bool plain,
                               bool all) {
  std::vector<int32_t> ids;
  for (size_t id = 0; id < bytes.size(); ++id) {
    if (bytes[id] && (all || plain_string_bytes(*bytes[id]) == plain)) {
      ids.push_back(static_cast<int32_t>(id));
    }
  }
  return ids;
}

}  // namespace

ByteTrie::ByteTrie(const std::vector<std::optional<std::string>>& bytes, std::vector<int32_t> ids)
    : token_ids_(std::move(ids)) {
  std::sort(token_ids_.begin(), token_ids_.end(), [&](int32_t a, int32_t b) {
    const std::string& x = *bytes[static_cast<size_t>(a)];
    const std::string& y = *bytes[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;
  });
  // In sorted order, each string adds the nodes of its bytes past the common prefix with the
  // previous one, which is exactly a preorder of the trie.
  nodes_.push_back(Node{});
  std::vector<uint32_t> path = {0};  // path[d]: the node at depth d on the current branch
  const std::string* prev = nullptr;
  for (size_t k = 0; k < token_ids_.size(); ++k) {
    const std::string& s = *bytes[static_cast<size_t>(token_ids_[k])];
    CTXPAR_CHECK(s.size() < std::numeric_limits<uint16_t>::max(), "token {} has {} bytes",
                 token_ids_[k], s.size());
    size_t common = 0;
    if (prev != nullptr) {
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    }
    path.resize(common + 1);
    for (size_t d = common + 1; d <= s.size(); ++d) {
      Node n;
      n.byte = static_cast<uint8_t>(s[d - 1]);
      n.depth = static_cast<uint16_t>(d);
      n.tokens_begin = n.tokens_end = static_cast<uint32_t>(k);
      nodes_.push_back(n);
      path.push_back(static_cast<uint32_t>(nodes_.size() - 1));
    }
    Node& end = nodes_[path[s.size()]];
    if (end.tokens_begin == end.tokens_end) end.tokens_begin = static_cast<uint32_t>(k);
    end.tokens_end = static_cast<uint32_t>(k + 1);
    max_depth_ = std::max(max_depth_, static_cast<int32_t>(s.size()));
    prev = &s;
  }
  // subtree_end: the next node at the same or a smaller depth.
  std::vector<uint32_t> open;
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    while (!open.empty() && nodes_[open.back()].depth >= nodes_[i].depth) {
      nodes_[open.back()].subtree_end = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (const uint32_t i : open) nodes_[i].subtree_end = static_cast<uint32_t>(nodes_.size());
}

TokenVocabulary::TokenVocabulary(std::vector<std::optional<std::string>> bytes)
    : bytes_(without_empty(std::move(bytes))),
      plain_(mask_words(size()), 0u),
      all_(bytes_, ids_where(bytes_, false, true)),
      non_plain_(bytes_, ids_where(bytes_, false, false)) {
  for (const int32_t id : ids_where(bytes_, true, false)) {
    plain_[static_cast<size_t>(id) / 32] |= 1u << (id % 32);
    plain_ids_.push_back(id);
    const int chars = plain_string_chars(*bytes_[static_cast<size_t>(id)]);
    plain_chars_.push_back(static_cast<uint16_t>(std::min(chars, 65535)));
  }
}

const std::optional<std::string>& TokenVocabulary::bytes(int32_t id) const {
  static const std::optional<std::string> none;
  if (id < 0 || id >= size()) return none;
  return bytes_[static_cast<size_t>(id)];
}

}  // namespace ctxpar::structured
