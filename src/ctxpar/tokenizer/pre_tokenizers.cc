#include "ctxpar/tokenizer/pre_tokenizers.h"

#include <array>
#include <vector>

#include "ctxpar/tokenizer/regex.h"
#include "ctxpar/tokenizer/string_pattern.h"
#include "ctxpar/tokenizer/unicode.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

// GPT-2's table: printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100
// upwards in byte order.
struct ByteLevelTable {
  static constexpr char32_t kEnd = 256 + 68;  // characters are below this
  std::array<char32_t, 256> to_char{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, kEnd> to_byte{};
  ByteLevelTable() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
      utf8::append(to_utf8[b], to_char[b]);
    }
  }
};

const ByteLevelTable& table() {
  static const ByteLevelTable t;
  return t;
}

const Regex& gpt2_regex() {
  static const Regex re(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  return re;
}

SplitBehavior parse_behavior(const JsonNode& node) {
  const std::string b = node.string();
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  node.fail(
      "split behavior '{}' is not supported; supported: Removed, Isolated, "
      "MergedWithPrevious, MergedWithNext, Contiguous",
      b);
}

// Prepends `prefix` (standing for the first character) to a piece.
void prepend(PreTokenized& text, Piece& piece, std::string_view prefix) {
  TextRewrite out(text.view(piece), piece.origin);
  out.insert(prefix, 0);
  out.copy(0, piece.end - piece.begin);
  text.assign(piece, out.text(), out.origin());
}

template <typename Predicate>
auto by_char(Predicate is_match) {
  return [is_match](std::string_view s, std::vector<Segment>& out) {
    char_segments(s, is_match, out);
  };
}

class ByteLevelImpl {
 public:
  static void map_bytes(PreTokenized& text, Piece& piece) {
    const std::string_view s = text.view(piece);
    TextRewrite out(s, piece.origin);
    for (uint32_t i = 0; i < s.size(); ++i) {
      out.insert(table().to_utf8[static_cast<unsigned char>(s[i])], i);
    }
    text.assign(piece, out.text(), out.origin());
  }
};

class Split final : public PreTokenizer {
 public:
  Split(StringPattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(PreTokenized& text) const override {
    text.split(
        [&](std::string_view s, std::vector<Segment>& out) {
          pattern_.segments(s, out);
          if (invert_) {
            for (Segment& seg : out) seg.is_match = !seg.is_match;
          }
        },
        behavior_);
  }

 private:
  StringPattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}
  void pre_tokenize(PreTokenized& text) const override {
    text.split(by_char(unicode::is_numeric),
               individual_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }

 private:
  bool individual_;
};

class Punctuation final : public PreTokenizer {
 public:
  explicit Punctuation(SplitBehavior behavior) : behavior_(behavior) {}
  void pre_tokenize(PreTokenized& text) const override {
    text.split(by_char(unicode::is_punctuation), behavior_);
  }

 private:
  SplitBehavior behavior_;
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenized& text) const override {
    text.split(by_char(unicode::is_whitespace), SplitBehavior::kRemoved);
  }
};

class BertPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenized& text) const override {
    text.split(by_char(unicode::is_whitespace), SplitBehavior::kRemoved);
    text.split(by_char(unicode::is_punctuation), SplitBehavior::kIsolated);
  }
};

// `\w+|[^\w\s]+` (Rust regex classes), keeping the matches and dropping what lies between.
class Whitespace final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenized& text) const override {
    text.split(
        [](std::string_view s, std::vector<Segment>& out) {
          out.clear();
          if (s.empty()) {
            out.push_back({0, 0, false});
            return;
          }
          // Runs of word characters and runs of other non-space characters are kept (the
          // inverted matches are the whitespace between them, removed).
          enum Kind { kWord, kSpace, kOther };
          auto kind_of = [](char32_t c) {
            return unicode::is_word(c) ? kWord : unicode::is_whitespace(c) ? kSpace : kOther;
          };
          size_t i = 0;
          while (i < s.size()) {
            const auto begin = static_cast<uint32_t>(i);
            const Kind kind = kind_of(utf8::decode(s, i));
            size_t end = i;
            while (end < s.size()) {
              size_t next = end;
              if (kind_of(utf8::decode(s, next)) != kind) break;
              end = next;
            }
            out.push_back({begin, static_cast<uint32_t>(end), kind == kSpace});
            i = end;
          }
        },
        SplitBehavior::kRemoved);
  }
};

class Metaspace final : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  Metaspace(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}

  void pre_tokenize(PreTokenized& text) const override {
    for (Piece& p : text.pieces()) {
      if (p.token >= 0) continue;
      const bool at_input_start = p.origin > 0;
      const std::string_view s = text.view(p);
      TextRewrite out(s, p.origin);
      for (uint32_t i = 0, last = 0; i <= s.size(); ++i) {
        if (i == s.size() || s[i] == ' ') {
          out.copy(last, i);
          if (i < s.size()) out.insert(replacement_, i);
          last = i + 1;
        }
      }
      text.assign(p, out.text(), out.origin());
      const bool starts = text.view(p).starts_with(replacement_);
      if (!starts &&
          (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && at_input_start))) {
        prepend(text, p, replacement_);
      }
    }
    if (!split_) return;
    const char32_t mark = utf8::decode_single(replacement_);
    text.split(by_char([mark](char32_t c) { return c == mark; }), SplitBehavior::kMergedWithNext);
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(PreTokenized& text) const override {
    for (const auto& s : steps_) s->pre_tokenize(text);
  }
  PreTokenizer* last() const { return steps_.empty() ? nullptr : steps_.back().get(); }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::string single_char(const JsonNode& node) {
  const std::string s = node.string();
  if (s.empty() || utf8::char_length(static_cast<unsigned char>(s[0])) != s.size()) {
    node.fail("must be exactly one character, not '{}'", s);
  }
  return s;
}

}  // namespace

void ByteLevelPreTokenizer::pre_tokenize(PreTokenized& text) const {
  if (add_prefix_space_) {
    for (Piece& p : text.pieces()) {
      if (p.token < 0 && !text.view(p).starts_with(' ')) prepend(text, p, " ");
    }
  }
  if (use_regex_) {
    text.split(
        [](std::string_view s, std::vector<Segment>& out) {
          thread_local std::vector<Span> spans;
          spans.clear();
          gpt2_regex().find_all(s, spans);
          span_segments(s, spans, out);
        },
        SplitBehavior::kIsolated);
  }
  if (!map_bytes_) return;
  for (Piece& p : text.pieces()) {
    if (p.token < 0) ByteLevelImpl::map_bytes(text, p);
  }
}

char32_t byte_level_char(unsigned char b) {
  return table().to_char[b];
}

int byte_level_byte(char32_t c) {
  return c < ByteLevelTable::kEnd ? table().to_byte[c] : -1;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const std::string type = node.type_among(
      "pre-tokenizer", {"ByteLevel", "Split", "Digits", "Metaspace", "Whitespace",
                        "WhitespaceSplit", "Punctuation", "BertPreTokenizer", "Sequence"});
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(node.bool_or("add_prefix_space", true),
                                                   node.bool_or("use_regex", true));
  }
  if (type == "Split") {
    return std::make_unique<Split>(StringPattern(node.at("pattern")),
                                   parse_behavior(node.at("behavior")),
                                   node.at("invert").boolean());
  }
  if (type == "Digits") return std::make_unique<Digits>(node.bool_or("individual_digits", false));
  if (type == "Punctuation") {
    const auto b = node.find("behavior");
    return std::make_unique<Punctuation>(b ? parse_behavior(*b) : SplitBehavior::kIsolated);
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>();
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Metaspace") {
    Metaspace::Prepend prepend = Metaspace::Prepend::kAlways;
    if (const auto scheme = node.find("prepend_scheme")) {
      const std::string s = scheme->string();
      if (s == "always") {
        prepend = Metaspace::Prepend::kAlways;
      } else if (s == "first") {
        prepend = Metaspace::Prepend::kFirst;
      } else if (s == "never") {
        prepend = Metaspace::Prepend::kNever;
      } else {
        scheme->fail("prepend_scheme '{}' is not supported; supported: always, first, never", s);
      }
    }
    // Files older than prepend_scheme say add_prefix_space; false means "never".
    if (const auto legacy = node.find("add_prefix_space"); legacy && !legacy->boolean()) {
      if (node.has("prepend_scheme") && prepend != Metaspace::Prepend::kNever) {
        legacy->fail("add_prefix_space false contradicts prepend_scheme");
      }
      prepend = Metaspace::Prepend::kNever;
    }
    return std::make_unique<Metaspace>(single_char(node.at("replacement")), prepend,
                                       node.bool_or("split", true));
  }
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  for (const JsonNode& n : node.at("pretokenizers").elements()) {
    auto step = make_pre_tokenizer(n);
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<Sequence>(std::move(steps));
}

ByteLevelPreTokenizer* final_byte_level(PreTokenizer* pre_tokenizer) {
  while (auto* seq = dynamic_cast<Sequence*>(pre_tokenizer)) pre_tokenizer = seq->last();
  return dynamic_cast<ByteLevelPreTokenizer*>(pre_tokenizer);
}

}  // namespace ctxpar::tokenizer
