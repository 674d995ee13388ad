// The text of one encode call as it moves through the pipeline: pieces of text (ranges of one
// growing buffer), some already resolved to an added token. Mirrors `tokenizers`'
// PreTokenizedString without the offset bookkeeping ctxpar does not need, except one number
// per piece: how many of its leading bytes stand for offset 0 of the input (what Metaspace's
// prepend_scheme "first" asks).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {

struct Piece {
  uint32_t begin = 0, end = 0;  // bytes of PreTokenized::text()
  int32_t token = -1;           // >= 0: an added token; later stages leave the piece alone
  // Leading bytes aligned with the first character of the input; > 0 exactly when the piece
  // starts at input offset 0.
  uint32_t origin = 0;
};

// A contiguous range of a text and whether it matched a split pattern. A list of segments
// covers its text in order.
struct Segment {
  uint32_t begin, end;
  bool is_match;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// What `tokenizers` keeps of a segment list under `behavior`: the ranges of the pieces (the
// flag now means "drop this range"). Empty ranges may remain; callers skip them.
void apply_split_behavior(const std::vector<Segment>& segments, SplitBehavior behavior,
                          std::vector<Segment>& out);

// Segments of `text` for the matches of a predicate on characters: every matching character
// is a match of its own (tokenizers' `Pattern for Fn(char) -> bool`).
template <typename Predicate>
void char_segments(std::string_view text, Predicate&& is_match, std::vector<Segment>& out);

// Segments of `text` from non-overlapping match spans (ascending): the gaps are non-matches.
// An empty text gives one empty non-match.
template <typename SpanList>
void span_segments(std::string_view text, const SpanList& spans, std::vector<Segment>& out);

// Builds the new text of a piece from its old text, keeping track of its origin bytes.
class TextRewrite {
 public:
  TextRewrite(std::string_view source, uint32_t origin) : source_(source), origin_(origin) {}
  // Old bytes [begin, end), unchanged.
  void copy(uint32_t begin, uint32_t end);
  // New text standing for the old character at `anchor` (a replacement, a prefix).
  void insert(std::string_view text, uint32_t anchor);
  std::string& text() { return text_; }
  uint32_t origin() const { return new_origin_; }

 private:
  std::string_view source_;
  uint32_t origin_;
  std::string text_;
  uint32_t new_origin_ = 0;
};

class PreTokenized {
 public:
  // One piece holding all of `text` (valid UTF-8).
  explicit PreTokenized(std::string_view text);

  std::vector<Piece>& pieces() { return pieces_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  std::string_view view(const Piece& p) const {
    return std::string_view(text_).substr(p.begin, p.end - p.begin);
  }

  // Gives `piece` new text (which must not point into this object's buffer).
  void assign(Piece& piece, std::string_view text, uint32_t origin);

  // Replaces every piece without a token by the pieces `split(text, segments)` marks, under
  // `behavior`. Empty pieces are dropped, as `tokenizers` drops them.
  template <typename SegmentFn>
  void split(SegmentFn&& find_segments, SplitBehavior behavior);

  // Replaces one piece (at `index`, without a token) by sub-ranges of it; kept ranges carry
  // token ids when `tokens` is given (one per range, -1: plain text).
  void replace_with_ranges(size_t index, const std::vector<Segment>& kept,
                           const std::vector<int32_t>* tokens, std::vector<Piece>& out) const;

 private:
  std::string text_;
  std::vector<Piece> pieces_;
  std::vector<Piece> scratch_pieces_;
  std::vector<Segment> segments_, kept_;
};

// ---- template definitions ----

template <typename SpanList>
void span_segments(std::string_view text, const SpanList& spans, std::vector<Segment>& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  uint32_t prev = 0;
  for (const auto& s : spans) {
    if (prev != s.begin) out.push_back({prev, s.begin, false});
    out.push_back({s.begin, s.end, true});
    prev = s.end;
  }
  if (prev != text.size()) out.push_back({prev, static_cast<uint32_t>(text.size()), false});
}

template <typename SegmentFn>
void PreTokenized::split(SegmentFn&& find_segments, SplitBehavior behavior) {
  scratch_pieces_.clear();
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (pieces_[i].token >= 0) {
      scratch_pieces_.push_back(pieces_[i]);
      continue;
    }
    segments_.clear();
    find_segments(view(pieces_[i]), segments_);
    apply_split_behavior(segments_, behavior, kept_);
    replace_with_ranges(i, kept_, nullptr, scratch_pieces_);
  }
  pieces_.swap(scratch_pieces_);
}

template <typename Predicate>
void char_segments(std::string_view text, Predicate&& is_match, std::vector<Segment>& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  uint32_t last = 0;
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<uint32_t>(i);
    const char32_t c = utf8::decode(text, i);
    if (is_match(c)) {
      if (last < b) out.push_back({last, b, false});
      out.push_back({b, static_cast<uint32_t>(i), true});
      last = static_cast<uint32_t>(i);
    }
  }
  if (last < text.size()) out.push_back({last, static_cast<uint32_t>(text.size()), false});
}

}  // namespace ctxpar::tokenizer
