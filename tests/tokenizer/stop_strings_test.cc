// Stop strings over streamed text: held back while they could still match, matched across
// pieces and tokens, cut before (or after, with include_stop_str_in_output) the stop string.
#include "ctxpar/tokenizer/stop_strings.h"

#include <gtest/gtest.h>

#include <random>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/incremental_detokenizer.h"
#include "ctxpar/tokenizer/tokenizer_files.h"

namespace ctxpar::tokenizer {
namespace {

TEST(StopStrings, HeldBackWhileTheyCouldStillMatch) {
  StopStringMatcher m({"STOP", "<end>"});
  EXPECT_EQ(m.push("Hello S"), "Hello ");  // "S" may start "STOP"
  EXPECT_EQ(m.push("T"), "");
  EXPECT_EQ(m.push("ay"), "STay");  // "STa" cannot: released
  EXPECT_EQ(m.push(" <e"), " ");
  EXPECT_EQ(m.push("nd"), "");
  EXPECT_FALSE(m.matched());
  EXPECT_EQ(m.push("> more"), "");
  EXPECT_EQ(m.matched(), "<end>");
  EXPECT_EQ(m.text(), "Hello STay ");
  EXPECT_EQ(m.push("ignored"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, IncludeKeepsTheStopStringAndHoldsNothing) {
  StopStringMatcher m({"STOP"}, /*include_stop_str_in_output=*/true);
  EXPECT_EQ(m.push("go S"), "go S");
  EXPECT_EQ(m.push("TOP and"), "TOP");
  EXPECT_EQ(m.matched(), "STOP");
  EXPECT_EQ(m.text(), "go STOP");
}

TEST(StopStrings, FlushReleasesAPartialMatch) {
  StopStringMatcher m({"STOP"});
  EXPECT_EQ(m.push("end ST"), "end ");
  EXPECT_EQ(m.flush(), "ST");
  EXPECT_EQ(m.text(), "end ST");
  EXPECT_THROW(StopStringMatcher({"a", ""}), Error);
}

TEST(StopStrings, MultiByteStopStrings) {
  StopStringMatcher m({"。\n", "👍"});
  EXPECT_EQ(m.push("你好"), "你好");
  EXPECT_EQ(m.push("。"), "");
  EXPECT_EQ(m.push("x\xF0\x9F"), "。x");  // held: the start of 👍's bytes
  EXPECT_EQ(m.push("\x91\x8D!"), "");
  EXPECT_EQ(m.matched(), "👍");
  EXPECT_EQ(m.text(), "你好。x");
}

// Pushed one character at a time, the first stop string to complete wins (earliest end; at
// the same end, the first listed) and everything before it is released exactly once.
TEST(StopStrings, RandomTextCharByChar) {
  std::mt19937_64 rng(std::random_device{}());
  for (int iter = 0; iter < 500; ++iter) {
    std::vector<std::string> stops(1 + rng() % 3);
    for (auto& s : stops) {
      s.resize(1 + rng() % 4);
      for (char& c : s) c = static_cast<char>('a' + rng() % 3);
    }
    std::string text(rng() % 40, ' ');
    for (char& c : text) c = static_cast<char>('a' + rng() % 3);
    const bool include = rng() % 2 == 0;
    // Reference: the earliest end at which some stop string completes.
    std::optional<std::string> want_stop;
    std::string want_text = text;
    for (size_t end = 1; end <= text.size() && !want_stop; ++end) {
      for (const auto& s : stops) {
        if (end >= s.size() && text.compare(end - s.size(), s.size(), s) == 0) {
          want_stop = s;
          want_text = text.substr(0, include ? end : end - s.size());
          break;
        }
      }
    }
    StopStringMatcher m(stops, include);
    std::string released;
    for (const char c : text) {
      released += m.push(std::string(1, c));
      // What is held back is exactly the longest end that could still grow into a stop.
      if (!m.matched() && !include) {
        const std::string held = m.text().substr(released.size());
        size_t longest = 0;
        for (const auto& s : stops) {
          for (size_t k = std::min(s.size() - 1, m.text().size()); k > longest; --k) {
            if (m.text().compare(m.text().size() - k, k, s, 0, k) == 0) longest = k;
          }
        }
        EXPECT_EQ(held.size(), longest) << m.text();
      }
    }
    released += m.flush();
    EXPECT_EQ(m.matched(), want_stop) << text;
    EXPECT_EQ(m.text(), want_text) << text;
    EXPECT_EQ(released, want_text) << text;
  }
}

// Stop strings that span tokens of a real tokenizer, streamed through the detokenizer.
TEST(StopStrings, AcrossTokenBoundaries) {
  const std::string dir = std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/llama3";
  const LoadedTokenizer t = load_hf_tokenizer(dir, "");
  const std::string text = "The quick brown fox jumps over the lazy dog. It's 12:45 now.";
  const std::vector<int32_t> ids = t.tokenizer->encode(text, false);
  for (const std::string stop : {"fox jum", "lazy", "g. I", "12:4", "now.", "absent"}) {
    for (const bool include : {false, true}) {
      IncrementalDetokenizer detok(*t.tokenizer, {});
      StopStringMatcher m({stop}, include);
      std::string released;
      size_t used = 0;
      for (const int32_t id : ids) {
        ++used;
        released += m.push(detok.add(id));
        if (m.matched()) break;
      }
      if (!m.matched()) released += m.push(detok.finish()) + m.flush();
      const size_t at = text.find(stop);
      if (at == std::string::npos) {
        EXPECT_FALSE(m.matched());
        EXPECT_EQ(released, text);
        continue;
      }
      EXPECT_EQ(m.matched(), stop);
      EXPECT_EQ(released, text.substr(0, include ? at + stop.size() : at)) << stop;
      // Generation stopped at the token that completed the stop string.
      const std::string upto = t.tokenizer->decode(std::span(ids).first(used), false);
      EXPECT_GE(upto.size(), at + stop.size());
      EXPECT_LT(t.tokenizer->decode(std::span(ids).first(used - 1), false).size(),
                at + stop.size());
    }
  }
}

}  // namespace
}  // namespace ctxpar::tokenizer
