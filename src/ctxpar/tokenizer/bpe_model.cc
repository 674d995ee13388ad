#include "ctxpar/tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <queue>

#include "ctxpar/tokenizer/pre_tokenizers.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

// Pre-tokens repeat (words, spaces, punctuation): their ids are cached per thread, like
// `tokenizers` does, for words shorter than kMaxCachedBytes and up to kCacheEntries words.
constexpr size_t kMaxCachedBytes = 256;
constexpr size_t kCacheEntries = size_t{1} << 16;

struct WordCache {
  uint64_t owner = 0;
  std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
};

std::atomic<uint64_t> next_cache_owner{1};

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 ▁

// Whether "▁" occurs in `token` only in a leading run ("▁▁the" yes, "a▁b" no).
bool metaspace_only_leading(std::string_view token) {
  size_t i = 0;
  while (token.substr(i, kMetaspace.size()) == kMetaspace) i += kMetaspace.size();
  return token.find(kMetaspace, i) == std::string_view::npos;
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

BpeModel::BpeModel(const JsonNode& model) : cache_owner_(next_cache_owner++) {
  if (const auto dropout = model.find("dropout"); dropout && dropout->number() != 0.0) {
    dropout->fail("BPE dropout {} is not supported (it makes encoding random); use null",
                  dropout->number());
  }
  if (const auto unk = model.find("unk_token")) unk_token_ = unk->string();
  if (const auto p = model.find("continuing_subword_prefix")) prefix_ = p->string();
  if (const auto s = model.find("end_of_word_suffix")) suffix_ = s->string();
  fuse_unk_ = model.bool_or("fuse_unk", false);
  byte_fallback_ = model.bool_or("byte_fallback", false);
  ignore_merges_ = model.bool_or("ignore_merges", false);

  const JsonNode vocab = model.at("vocab");
  if (!vocab.json().is_object()) vocab.fail("must be an object of token: id");
  vocab_.reserve(vocab.json().size());
  int64_t max_id = -1;
  for (const auto& [token, id] : vocab.json().items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      vocab.fail("the id of '{}' must be a non-negative 32-bit integer, not {}", token, id.dump());
    }
    vocab_[token] = static_cast<int32_t>(id.get<int64_t>());
    max_id = std::max(max_id, id.get<int64_t>());
  }
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  has_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : vocab_) {
    id_to_token_[id] = token;
    has_token_[id] = true;
  }
  if (!unk_token_.empty()) {
    if (const auto it = vocab_.find(unk_token_); it != vocab_.end()) unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
    byte_fallback_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
  // "▁" itself must be a token too, or fuse_unk could join unknown characters across it.
  split_before_metaspace_ = prefix_.empty() && suffix_.empty() && vocab_.contains(kMetaspace) &&
                            std::all_of(vocab_.begin(), vocab_.end(), [](const auto& entry) {
                              return metaspace_only_leading(entry.first);
                            });

  const std::vector<JsonNode> merges = model.at("merges").elements();
  size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity <<= 1;
  merges_.assign(capacity, MergeEntry{});
  merge_mask_ = capacity - 1;
  uint32_t rank = 0;
  for (const JsonNode& m : merges) {
    std::string a, b;
    if (m.json().is_string()) {
      const std::string line = m.string();
      if (line.starts_with("#version")) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        m.fail("a merge written as a string must be two tokens and one space (\"a b\"), not '{}'",
               line);
      }
      a = line.substr(0, space);
      b = line.substr(space + 1);
    } else if (m.json().is_array() && m.json().size() == 2 && m.json()[0].is_string() &&
               m.json()[1].is_string()) {
      a = m.json()[0].get<std::string>();
      b = m.json()[1].get<std::string>();
    } else {
      m.fail("a merge must be \"a b\" or [\"a\", \"b\"], not {}", m.json().dump());
    }
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end()) m.fail("merge token '{}' is not in the vocabulary", a);
    if (ib == vocab_.end()) m.fail("merge token '{}' is not in the vocabulary", b);
    // The merged token drops the right part's continuing-subword prefix.
    const std::string merged = a + b.substr(std::min(b.size(), prefix_.size()));
    const auto in = vocab_.find(merged);
    if (in == vocab_.end())
      m.fail("the merge of '{}' and '{}', '{}', is not in the vocabulary", a, b, merged);
    insert_merge(ia->second, ib->second, rank++, in->second);
  }
}

const BpeModel::MergeEntry* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    const MergeEntry& e = merges_[i];
    if (e.key == key) return &e;
    if (e.key == kEmpty) return nullptr;
  }
}

void BpeModel::insert_merge(int32_t left, int32_t right, uint32_t rank, int32_t new_id) {
  const uint64_t key = pair_key(left, right);
  for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    MergeEntry& e = merges_[i];
    if (e.key == key || e.key == kEmpty) {
      // A pair listed twice keeps its last rank, as `tokenizers` (a map built in order).
      e = {key, rank, new_id};
      return;
    }
  }
}

void BpeModel::use_raw_bytes() {
  CTXPAR_CHECK(can_use_raw_bytes(), "raw-byte BPE needs a model without subword affixes");
  raw_bytes_ = true;
  raw_vocab_.reserve(vocab_.size());
  for (const auto& [token, id] : vocab_) {
    std::string bytes;
    bool all_mapped = true;
    for (size_t i = 0; i < token.size() && all_mapped;) {
      const int b = byte_level_byte(utf8::decode(token, i));
      all_mapped = b >= 0;
      bytes.push_back(static_cast<char>(b));
    }
    // Tokens spelled outside the byte-level alphabet can never be a pre-token's piece.
    if (all_mapped) raw_vocab_.emplace(std::move(bytes), id);
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = raw_vocab_.find(std::string(1, static_cast<char>(b)));
    raw_byte_ids_[b] = it == raw_vocab_.end() ? -1 : it->second;
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_token_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::initial_symbols(std::string_view word, bool raw,
                               std::vector<Symbol>& symbols) const {
  symbols.clear();
  auto add = [&](int32_t id, uint32_t len) {
    const auto n = static_cast<int32_t>(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, len});
  };
  if (raw) {
    for (const char c : word) add(raw_byte_ids_[static_cast<unsigned char>(c)], 1);
    return;
  }
  // One unknown token pending (fuse_unk grows it over consecutive unknown characters).
  int32_t unk = -1;
  uint32_t unk_len = 0;
  auto flush_unk = [&] {
    if (unk >= 0) add(unk, unk_len);
    unk = -1;
  };
  std::string unit;
  for (size_t i = 0; i < word.size();) {
    const size_t begin = i;
    i += utf8::char_length(static_cast<unsigned char>(word[i]));
    const auto len = static_cast<uint32_t>(i - begin);
    unit.assign(begin > 0 ? prefix_ : std::string_view());
    unit.append(word.substr(begin, len));
    if (i == word.size()) unit.append(suffix_);
    if (const auto it = vocab_.find(unit); it != vocab_.end()) {
      flush_unk();
      add(it->second, len);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (const char c : unit) all = all && byte_fallback_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        // As `tokenizers`: the byte tokens go in before a pending unknown token is flushed.
        for (const char c : unit) add(byte_fallback_ids_[static_cast<unsigned char>(c)], 1);
        continue;
      }
    }
    if (unk_token_.empty()) continue;  // no unknown token: the character is dropped
    CTXPAR_CHECK_INPUT(unk_id_.has_value(), "the BPE unk_token '{}' is not in the vocabulary",
                       unk_token_);
    if (unk >= 0 && fuse_unk_) {
      unk_len += len;
    } else {
      flush_unk();
      unk = *unk_id_;
      unk_len = len;
    }
  }
  flush_unk();
}

void BpeModel::merge_all(std::vector<Symbol>& symbols) const {
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Candidate> storage;
  storage.clear();
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue(std::greater<>{},
                                                                               std::move(storage));
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const MergeEntry* m = find_merge(symbols[i].id, symbols[i + 1].id)) {
      queue.push({m->rank, static_cast<int32_t>(i), m->new_id});
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& s = symbols[top.pos];
    if (s.len == 0 || s.next == -1) continue;
    const Symbol right = symbols[s.next];
    // Stale entry: the pair at this position changed since it was queued.
    const MergeEntry* m = find_merge(s.id, right.id);
    if (m == nullptr || m->new_id != top.new_id) continue;
    s.id = top.new_id;
    s.len += right.len;
    symbols[s.next].len = 0;
    s.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (s.prev >= 0) {
      if (const MergeEntry* p = find_merge(symbols[s.prev].id, s.id)) {
        queue.push({p->rank, s.prev, p->new_id});
      }
    }
    if (s.next >= 0) {
      if (const MergeEntry* n = find_merge(s.id, symbols[s.next].id)) {
        queue.push({n->rank, top.pos, n->new_id});
      }
    }
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> symbols;
  if (raw_bytes_ && std::any_of(word.begin(), word.end(), [&](char c) {
        return raw_byte_ids_[static_cast<unsigned char>(c)] < 0;
      })) {
    // A byte whose character is missing from the vocabulary: take the general path (unk /
    // byte fallback on the byte-level characters), as `tokenizers` sees them.
    std::string mapped;
    for (const char c : word) utf8::append(mapped, byte_level_char(static_cast<unsigned char>(c)));
    initial_symbols(mapped, /*raw=*/false, symbols);
  } else {
    initial_symbols(word, raw_bytes_, symbols);
  }
  merge_all(symbols);
  for (const Symbol& s : symbols) {
    if (s.len != 0) out.push_back(s.id);
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const StringIdMap& v = raw_bytes_ ? raw_vocab_ : vocab_;
    if (const auto it = v.find(word); it != v.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (split_before_metaspace_ && !raw_bytes_) {
    size_t begin = 0;
    for (size_t at = word.find(kMetaspace, 1); at != std::string_view::npos;
         at = word.find(kMetaspace, at + kMetaspace.size())) {
      // A piece starts at a "▁" that follows something else.
      if (at >= kMetaspace.size() &&
          word.substr(at - kMetaspace.size(), kMetaspace.size()) == kMetaspace) {
        continue;
      }
      encode_cached(word.substr(begin, at - begin), out);
      begin = at;
    }
    encode_cached(word.substr(begin), out);
    return;
  }
  encode_cached(word, out);
}

void BpeModel::encode_cached(std::string_view word, std::vector<int32_t>& out) const {
  thread_local WordCache cache;
  if (cache.owner != cache_owner_) {
    cache.words.clear();
    cache.owner = cache_owner_;
  }
  if (const auto it = cache.words.find(word); it != cache.words.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  const size_t first = out.size();
  encode_word(word, out);
  if (word.size() < kMaxCachedBytes && cache.words.size() < kCacheEntries) {
    cache.words.emplace(std::string(word), std::vector<int32_t>(out.begin() + first, out.end()));
  }
}

}  // namespace ctxpar::tokenizer
