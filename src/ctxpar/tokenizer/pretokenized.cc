#include "ctxpar/tokenizer/pretokenized.h"

#include <algorithm>

namespace ctxpar::tokenizer {

void apply_split_behavior(const std::vector<Segment>& in, SplitBehavior behavior,
                          std::vector<Segment>& out) {
  out.clear();
  switch (behavior) {
    case SplitBehavior::kRemoved:
      out = in;
      return;
    case SplitBehavior::kIsolated:
      for (const Segment& s : in) out.push_back({s.begin, s.end, false});
      return;
    case SplitBehavior::kContiguous: {
      // Runs of segments with the same flag become one piece.
      bool previous = false;
      for (const Segment& s : in) {
        if (s.is_match == previous && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous = s.is_match;
      }
      return;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous = false;
      for (const Segment& s : in) {
        if (s.is_match && !previous && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end, false});
        }
        previous = s.is_match;
      }
      return;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous = false;
      for (auto it = in.rbegin(); it != in.rend(); ++it) {
        if (it->is_match && !previous && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back({it->begin, it->end, false});
        }
        previous = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      return;
    }
  }
}

void TextRewrite::copy(uint32_t begin, uint32_t end) {
  if (begin >= end) return;
  text_.append(source_.substr(begin, end - begin));
  // Origin bytes are a prefix of the old text and stay a prefix of the new one.
  if (begin < origin_) new_origin_ += std::min(end, origin_) - begin;
}

void TextRewrite::insert(std::string_view text, uint32_t anchor) {
  text_.append(text);
  if (anchor < origin_) new_origin_ += static_cast<uint32_t>(text.size());
}

PreTokenized::PreTokenized(std::string_view text) : text_(text) {
  if (text.empty()) return;
  Piece p;
  p.end = static_cast<uint32_t>(text.size());
  p.origin = static_cast<uint32_t>(utf8::char_length(static_cast<unsigned char>(text[0])));
  pieces_.push_back(p);
}

void PreTokenized::assign(Piece& piece, std::string_view text, uint32_t origin) {
  piece.begin = static_cast<uint32_t>(text_.size());
  text_.append(text);
  piece.end = static_cast<uint32_t>(text_.size());
  piece.origin = origin;
}

void PreTokenized::replace_with_ranges(size_t index, const std::vector<Segment>& kept,
                                       const std::vector<int32_t>* tokens,
                                       std::vector<Piece>& out) const {
  const Piece& p = pieces_[index];
  for (size_t k = 0; k < kept.size(); ++k) {
    const Segment& s = kept[k];
    if (s.is_match || s.begin == s.end) continue;
    Piece q;
    q.begin = p.begin + s.begin;
    q.end = p.begin + s.end;
    q.token = tokens ? (*tokens)[k] : -1;
    q.origin = s.begin < p.origin ? std::min(p.origin - s.begin, s.end - s.begin) : 0;
    out.push_back(q);
  }
}

}  // namespace ctxpar::tokenizer
