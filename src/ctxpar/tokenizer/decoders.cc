#include "ctxpar/tokenizer/decoders.h"

#include "ctxpar/tokenizer/pre_tokenizers.h"
#include "ctxpar/tokenizer/string_pattern.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

// Byte-level characters back to bytes; a token with any other character is kept as its own
// UTF-8. The bytes of all tokens are then read as UTF-8, invalid sequences as U+FFFD.
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      const size_t mark = bytes.size();
      bool all = true;
      for (size_t i = 0; i < t.size() && all;) {
        const int b = byte_level_byte(utf8::decode(t, i));
        all = b >= 0;
        if (all) bytes.push_back(static_cast<char>(b));
      }
      if (!all) {
        bytes.resize(mark);
        bytes.append(t);
      }
    }
    tokens.assign(1, utf8::repair(bytes));
  }
  std::optional<std::string> raw_bytes(const std::string& token) const override {
    std::string bytes;
    for (size_t i = 0; i < token.size();) {
      const int b = byte_level_byte(utf8::decode(token, i));
      if (b < 0) return token;  // not byte-level text (an added token): kept as written
      bytes.push_back(static_cast<char>(b));
    }
    return bytes;
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::string out;
      const std::string& s = tokens[t];
      for (size_t at = 0; at < s.size();) {
        if (s.compare(at, replacement_.size(), replacement_) == 0) {
          // Every replacement character of the first token goes (the prefix space).
          if (!(t == 0 && strip_first_)) out.push_back(' ');
          at += replacement_.size();
        } else {
          const size_t n = utf8::char_length(static_cast<unsigned char>(s[at]));
          out.append(s, at, n);
          at += n;
        }
      }
      tokens[t] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

// <0xNN> tokens to bytes; a run of them that is not valid UTF-8 becomes one U+FFFD per byte.
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    size_t pending_count = 0;
    auto flush = [&] {
      if (pending_count == 0) return;
      if (utf8::is_valid(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending_count; ++i) out.emplace_back(utf8::kReplacementUtf8);
      }
      pending.clear();
      pending_count = 0;
    };
    for (std::string& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') byte = parse_hex(t[3], t[4]);
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
        ++pending_count;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
  std::optional<std::string> raw_bytes(const std::string& t) const override {
    if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>') return std::nullopt;
    const int byte = parse_hex(t[3], t[4]);
    if (byte < 0) return std::nullopt;
    return std::string(1, static_cast<char>(byte));
  }

 private:
  // Two hex digits (either case), as Rust's u8::from_str_radix accepts them here.
  static int parse_hex(char hi, char lo) {
    auto digit = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (hi == '+') return digit(lo);  // "+A" parses as a one-digit number
    const int h = digit(hi), l = digit(lo);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing `content` characters of every token.
class Strip final : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      size_t begin = 0;
      for (size_t i = 0; i < start_ && t.compare(begin, content_.size(), content_) == 0; ++i) {
        begin += content_.size();
      }
      size_t end = t.size();
      for (size_t i = 0; i < stop_ && end >= begin + content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i) {
        end -= content_.size();
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(StringPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<Segment> segments;
    for (std::string& t : tokens) {
      pattern_.segments(t, segments);
      std::string out;
      for (const Segment& s : segments) {
        if (s.is_match) {
          out += content_;
        } else {
          out.append(t, s.begin, s.end - s.begin);
        }
      }
      t = std::move(out);
    }
  }

 private:
  StringPattern pattern_;
  std::string content_;
};

// BPEDecoder: the end-of-word suffix becomes a space (none after the last token).
class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      const std::string with = i + 1 == tokens.size() ? "" : " ";
      for (size_t at = 0; at < t.size();) {
        const size_t hit = suffix_.empty() ? std::string::npos : t.find(suffix_, at);
        if (hit == std::string::npos) {
          out.append(t, at, std::string::npos);
          break;
        }
        out.append(t, at, hit - at).append(with);
        at = hit + suffix_.size();
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string suffix_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& s : steps_) s->decode_chain(tokens);
  }
  // The first step that knows (a byte-fallback token's byte); the chain's other rewrites do
  // not apply to it.
  std::optional<std::string> raw_bytes(const std::string& token) const override {
    for (const auto& s : steps_) {
      if (auto raw = s->raw_bytes(token)) return raw;
    }
    return std::nullopt;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

size_t count_field(const JsonNode& node, std::string_view key) {
  const auto v = node.find(key);
  if (!v) return 0;
  const int64_t n = v->integer();
  if (n < 0) v->fail("must be a non-negative count");
  return static_cast<size_t>(n);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const std::string type =
      node.type_among("decoder", {"ByteLevel", "Metaspace", "ByteFallback", "Fuse", "Strip",
                                  "Replace", "BPEDecoder", "Sequence"});
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Metaspace") {
    const std::string replacement = node.at("replacement").string();
    if (replacement.empty() ||
        utf8::char_length(static_cast<unsigned char>(replacement[0])) != replacement.size()) {
      node.at("replacement").fail("must be exactly one character, not '{}'", replacement);
    }
    bool strip_first = true;  // prepend_scheme always (the default) or first
    if (const auto scheme = node.find("prepend_scheme")) {
      const std::string s = scheme->string();
      if (s != "always" && s != "first" && s != "never") {
        scheme->fail("prepend_scheme '{}' is not supported; supported: always, first, never", s);
      }
      strip_first = s != "never";
    }
    if (const auto legacy = node.find("add_prefix_space"); legacy && !legacy->boolean()) {
      strip_first = false;
    }
    return std::make_unique<MetaspaceDecoder>(replacement, strip_first);
  }
  if (type == "Strip") {
    const std::string content = node.at("content").string();
    if (content.empty() ||
        utf8::char_length(static_cast<unsigned char>(content[0])) != content.size()) {
      node.at("content").fail("must be exactly one character, not '{}'", content);
    }
    return std::make_unique<Strip>(content, count_field(node, "start"), count_field(node, "stop"));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(StringPattern(node.at("pattern")),
                                            node.at("content").string());
  }
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(node.string_or("suffix", "</w>"));
  std::vector<std::unique_ptr<Decoder>> steps;
  for (const JsonNode& n : node.at("decoders").elements()) {
    auto step = make_decoder(n);
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<Sequence>(std::move(steps));
}

}  // namespace ctxpar::tokenizer
