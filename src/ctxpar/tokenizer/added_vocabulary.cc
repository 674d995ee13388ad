#include "ctxpar/tokenizer/added_vocabulary.h"

#include <algorithm>

#include "ctxpar/tokenizer/unicode.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

bool same_flags(const AddedToken& a, const AddedToken& b) {
  return a.content == b.content && a.single_word == b.single_word && a.lstrip == b.lstrip &&
         a.rstrip == b.rstrip && a.normalized == b.normalized && a.special == b.special;
}

// The last character of text[0, end) is a word character (Rust regex `\w$`).
bool word_before(std::string_view text, size_t end) {
  if (end == 0) return false;
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return unicode::is_word(utf8::decode_single(text.substr(start, end - start)));
}

bool word_after(std::string_view text, size_t begin) {
  if (begin >= text.size()) return false;
  size_t i = begin;
  return unicode::is_word(utf8::decode(text, i));
}

// Start of the whitespace run that ends at `end`.
size_t whitespace_start_before(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    if (!unicode::is_whitespace(utf8::decode_single(text.substr(start, end - start)))) break;
    end = start;
  }
  return end;
}

size_t whitespace_end_after(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    size_t next = begin;
    if (!unicode::is_whitespace(utf8::decode(text, next))) break;
    begin = next;
  }
  return begin;
}

}  // namespace

void AddedVocabulary::Matcher::build(const std::vector<std::pair<std::string, int32_t>>& patterns) {
  nodes_.assign(1, Node{});
  first_byte_.fill(false);
  for (const auto& [pattern, id] : patterns) {
    uint32_t node = 0;
    for (const char ch : pattern) {
      const auto b = static_cast<unsigned char>(ch);
      auto& children = nodes_[node].children;
      auto it = std::lower_bound(children.begin(), children.end(), b,
                                 [](const auto& c, unsigned char v) { return c.first < v; });
      if (it == children.end() || it->first != b) {
        const auto next = static_cast<uint32_t>(nodes_.size());
        children.insert(it, {b, next});
        nodes_.emplace_back();
        node = next;
      } else {
        node = it->second;
      }
    }
    nodes_[node].id = id;
    if (!pattern.empty()) first_byte_[static_cast<unsigned char>(pattern[0])] = true;
  }
}

std::pair<uint32_t, int32_t> AddedVocabulary::Matcher::longest_at(std::string_view text,
                                                                  size_t at) const {
  if (!first_byte_[static_cast<unsigned char>(text[at])]) return {0, -1};
  std::pair<uint32_t, int32_t> best{0, -1};
  uint32_t node = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto& children = nodes_[node].children;
    const auto it = std::lower_bound(children.begin(), children.end(), b,
                                     [](const auto& c, unsigned char v) { return c.first < v; });
    if (it == children.end() || it->first != b) break;
    node = it->second;
    if (nodes_[node].id >= 0) best = {static_cast<uint32_t>(i + 1 - at), nodes_[node].id};
  }
  return best;
}

void AddedVocabulary::add(const std::vector<AddedToken>& tokens, const BpeModel& model,
                          const Normalizer* normalizer) {
  // As `tokenizers`: new ids continue after the model's vocabulary (counted in entries) or
  // after the largest added id, whichever applies.
  const auto model_size = static_cast<int32_t>(model.vocab_entries());
  int32_t next_id = model_size;
  if (!by_id_.empty()) {
    next_id = (max_id_ >= model_size || model_size == 0) ? max_id_ + 1 : model_size;
  }
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    if (const auto it = by_content_.find(t.content); it != by_content_.end()) {
      if (const auto e = by_id_.find(it->second); e != by_id_.end() && same_flags(e->second, t)) {
        continue;
      }
    }
    int32_t id;
    if (const auto known = id_of(t.content)) {
      id = *known;
    } else if (const auto in_model = model.token_to_id(t.content)) {
      id = *in_model;
    } else {
      id = next_id++;
    }
    if (t.normalized && normalizer != nullptr) {
      std::string form = t.content;
      uint32_t origin = 0;
      normalizer->normalize(form, origin);
      if (form != t.content) normalized_form_[id] = std::move(form);
    }
    by_content_[t.content] = id;
    if (t.special) special_.insert(t.content);
    by_id_[id] = t;
    max_id_ = std::max(max_id_, id);
  }
  rebuild();
}

void AddedVocabulary::rebuild() {
  std::vector<std::pair<std::string, int32_t>> raw, normalized;
  for (const auto& [id, t] : by_id_) {
    if (t.normalized) {
      const auto f = normalized_form_.find(id);
      normalized.emplace_back(f == normalized_form_.end() ? t.content : f->second, id);
    } else {
      raw.emplace_back(t.content, id);
    }
  }
  raw_.build(raw);
  normalized_.build(normalized);
}

std::optional<int32_t> AddedVocabulary::id_of(std::string_view content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

bool AddedVocabulary::contains(const AddedToken& token) const {
  const auto id = id_of(token.content);
  if (!id) return false;
  const auto it = by_id_.find(*id);
  return it != by_id_.end() && same_flags(it->second, token);
}

const std::string* AddedVocabulary::token_of(int32_t id) const {
  if (const auto f = normalized_form_.find(id); f != normalized_form_.end()) return &f->second;
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second.content;
}

void AddedVocabulary::split_raw(PreTokenized& text) const {
  split_with(text, raw_);
}

void AddedVocabulary::split_normalized(PreTokenized& text) const {
  split_with(text, normalized_);
}

void AddedVocabulary::split_with(PreTokenized& text, const Matcher& matcher) const {
  if (matcher.empty()) return;
  std::vector<Piece> out;
  std::vector<Segment> kept;
  std::vector<int32_t> ids;
  for (size_t p = 0; p < text.pieces().size(); ++p) {
    if (text.pieces()[p].token >= 0) {
      out.push_back(text.pieces()[p]);
      continue;
    }
    const std::string_view s = text.view(text.pieces()[p]);
    kept.clear();
    ids.clear();
    size_t done = 0;  // end of the last emitted range
    for (size_t at = 0; at < s.size();) {
      const auto [len, id] = matcher.longest_at(s, at);
      if (len == 0) {
        ++at;
        continue;
      }
      size_t begin = at, end = at + len;
      at = end;  // the next search starts after this match, kept or not
      const AddedToken& t = by_id_.at(id);
      if (t.single_word && (word_before(s, begin) || word_after(s, end))) continue;
      if (t.lstrip) begin = std::max(whitespace_start_before(s, begin), done);
      if (t.rstrip) end = whitespace_end_after(s, end);
      at = end;
      if (done < begin) {
        kept.push_back({static_cast<uint32_t>(done), static_cast<uint32_t>(begin), false});
        ids.push_back(-1);
      }
      kept.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(end), false});
      ids.push_back(id);
      done = end;
    }
    if (done < s.size()) {
      kept.push_back({static_cast<uint32_t>(done), static_cast<uint32_t>(s.size()), false});
      ids.push_back(-1);
    }
    text.replace_with_ranges(p, kept, &ids, out);
  }
  text.pieces().swap(out);
}

}  // namespace ctxpar::tokenizer
