#include "ctxpar/tokenizer/normalizers.h"

#include <utf8proc.h>

#include <vector>

#include "ctxpar/tokenizer/pretokenized.h"
#include "ctxpar/tokenizer/string_pattern.h"
#include "ctxpar/tokenizer/unicode.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

// For transforms that rewrite characters in place (normal forms, lowercase): the origin
// becomes the new form of the old origin bytes.
template <typename Transform>
void transform_keeping_origin(std::string& text, uint32_t& origin, Transform&& transform) {
  std::string out = transform(std::string_view(text));
  if (origin > 0) {
    const std::string head = transform(std::string_view(text).substr(0, origin));
    origin = out.compare(0, head.size(), head) == 0 && !head.empty()
                 ? static_cast<uint32_t>(head.size())
                 : static_cast<uint32_t>(out.empty() ? 0 : utf8::char_length(out[0]));
  }
  text = std::move(out);
}

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
  void normalize(std::string& text, uint32_t& origin) const override {
    transform_keeping_origin(text, origin,
                             [&](std::string_view s) { return unicode::normalize(s, form_); });
  }

 private:
  unicode::NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(std::string& text, uint32_t& origin) const override {
    transform_keeping_origin(text, origin, [](std::string_view s) { return unicode::to_lower(s); });
  }
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text, uint32_t& origin) const override {
    if (text.empty()) return;
    text.insert(0, prefix_);
    if (origin > 0) origin += static_cast<uint32_t>(prefix_.size());
  }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(StringPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text, uint32_t& origin) const override {
    std::vector<Segment> segments;
    pattern_.segments(text, segments);
    TextRewrite out(text, origin);
    for (const Segment& s : segments) {
      if (s.is_match) {
        out.insert(content_, s.begin);
      } else {
        out.copy(s.begin, s.end);
      }
    }
    origin = out.origin();
    text = std::move(out.text());
  }

 private:
  StringPattern pattern_;
  std::string content_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text, uint32_t& origin) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t next = begin;
        if (!unicode::is_whitespace(utf8::decode(text, next))) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t next = start;
        if (!unicode::is_whitespace(utf8::decode(text, next))) break;
        end = start;
      }
    }
    TextRewrite out(text, origin);
    out.copy(static_cast<uint32_t>(begin), static_cast<uint32_t>(end));
    origin = out.origin();
    text = std::move(out.text());
  }

 private:
  bool left_, right_;
};

class StripAccents final : public Normalizer {
 public:
  void normalize(std::string& text, uint32_t& origin) const override {
    TextRewrite out(text, origin);
    for (size_t i = 0; i < text.size();) {
      const auto b = static_cast<uint32_t>(i);
      const char32_t c = utf8::decode(text, i);
      const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
      const bool mark =
          cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
      if (!mark) out.copy(b, static_cast<uint32_t>(i));
    }
    origin = out.origin();
    text = std::move(out.text());
  }
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text, uint32_t& origin) const override {
    for (const auto& s : steps_) s->normalize(text, origin);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const std::string type =
      node.type_among("normalizer", {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Prepend",
                                     "Replace", "Strip", "StripAccents", "Sequence"});
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Prepend") return std::make_unique<Prepend>(node.at("prepend").string());
  if (type == "Replace") {
    return std::make_unique<Replace>(StringPattern(node.at("pattern")),
                                     node.at("content").string());
  }
  if (type == "Strip") {
    return std::make_unique<Strip>(node.bool_or("strip_left", true),
                                   node.bool_or("strip_right", true));
  }
  std::vector<std::unique_ptr<Normalizer>> steps;
  for (const JsonNode& n : node.at("normalizers").elements()) {
    auto step = make_normalizer(n);
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<Sequence>(std::move(steps));
}

}  // namespace ctxpar::tokenizer
