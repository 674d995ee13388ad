#include "ctxpar/server/named_call_stream.h"

#include <fmt/format.h>

namespace ctxpar::server {

namespace {

bool json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

NamedCallStream::NamedCallStream(std::string_view key) : key_(fmt::format("\"{}\"", key)) {}

// Matches text_ against  ws '{' ws "name" ws ':' ws '"' NAME '"' ws ',' ws KEY ws ':' ws and the
// '{' that opens the arguments. The name is taken once its closing quote came.
void NamedCallStream::read_head() {
  size_t i = 0;
  const auto more = [&] { return i < text_.size(); };
  const auto skip_space = [&] {
    while (more() && json_space(text_[i])) ++i;
  };
  // false: the text differs from `word` (stop); true with !more(): wait for more text.
  const auto expect = [&](std::string_view word) {
    for (const char c : word) {
      if (!more()) return true;
      if (text_[i] != c) return false;
      ++i;
    }
    return true;
  };
  const auto stop = [&] { head_ = Head::kStopped; };
  skip_space();
  if (!expect("{")) return stop();
  skip_space();
  if (!expect("\"name\"")) return stop();
  skip_space();
  if (!expect(":")) return stop();
  skip_space();
  if (!expect("\"")) return stop();
  const size_t name_at = i;
  while (more() && text_[i] != '"') {
    if (text_[i] == '\\' || static_cast<uint8_t>(text_[i]) < 0x20) return stop();
    ++i;
  }
  if (!more()) return;
  if (name_.empty()) {
    if (i == name_at) return stop();
    name_ = text_.substr(name_at, i - name_at);
  }
  ++i;
  skip_space();
  if (!expect(",")) return stop();
  skip_space();
  if (!expect(key_)) return stop();
  skip_space();
  if (!expect(":")) return stop();
  skip_space();
  if (!more()) return;
  if (text_[i] != '{') return stop();
  args_at_ = i;
  head_ = Head::kArguments;
}

NamedCallStream::Piece NamedCallStream::add(std::string_view text) {
  Piece p;
  text_ += text;
  const bool had_name = named();
  if (head_ == Head::kReading) read_head();
  p.named = !had_name && named();
  if (head_ == Head::kArguments) {
    p.arguments = args_.add(std::string_view(text_).substr(args_at_ + args_fed_));
    args_fed_ = text_.size() - args_at_;
    sent_ += p.arguments;
  }
  return p;
}

}  // namespace ctxpar::server
