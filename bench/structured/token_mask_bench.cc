// Structured outputs: the cost of one decode step's token mask (TokenMasker::fill) at a 128K
// vocabulary, for a tool-call-like JSON schema, at the grammar states a generation passes
// through (the sampler of each constrained request pays this once per step, on rank 0).
//
// The vocabulary: a Hugging Face tokenizer directory's (--tokenizer=DIR, e.g. a Llama-3 model;
// its token_bytes) or, without one, a synthetic byte-level vocabulary of 128,256 ids shaped like
// Llama-3's (the 256 bytes, words with and without a leading space, digit runs, punctuation and
// code pieces, whitespace runs, accented / CJK / emoji pieces; 256 special ids at the end).
// Reports time per mask and the allowed-token count per state; "walk" averages the masks of
// every step of a whole document generated token by token with the vocabulary's longest tokens;
// "regex/*" masks structured_outputs {"regex": ...} (free text, an ISO date).
//
// Run: build/bench/structured/token_mask_bench [--tokenizer=DIR] [benchmark flags]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ctxpar/engine/structured/json_matcher.h"
#include "ctxpar/engine/structured/schema_compiler.h"
#include "ctxpar/engine/structured/token_mask.h"
#include "ctxpar/tokenizer/tokenizer_files.h"

namespace ctxpar::structured {
namespace {

std::string g_tokenizer_dir;

std::vector<std::optional<std::string>> synthetic_vocabulary(size_t size) {
  std::mt19937_64 rng(128256);
  std::set<std::string> seen;
  std::vector<std::optional<std::string>> v;
  const auto add = [&](const std::string& t) {
    if (!t.empty() && seen.insert(t).second) v.emplace_back(t);
  };
  for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
  const std::vector<std::string> syllables = {
      "the", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te", "of", "ed",
      "is",  "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou", "io", "le", "ve",
      "co",  "me", "de", "hi", "ri", "ro", "ic", "ne", "ea", "ra", "ce", "li", "ch", "ll", "be",
      "ma",  "si", "om", "ur", "ca", "el", "ta", "la", "ns", "di", "fo", "ho", "pe", "ec", "pr",
      "no",  "ct", "us", "ac", "ot", "il", "tr", "ly", "nc", "et", "ut", "ss", "so", "rs", "un"};
  const std::vector<std::string> punct = {"{", "}", "[", "]", "(", ")", ":", ",",  ".",  ";", "\"",
                                          "'", "-", "_", "=", "+", "*", "/", "\\", "<",  ">", "!",
                                          "?", "#", "@", "&", "|", "%", "$", "\n", "\t", " "};
  const std::vector<std::string> wide = {"é",  "ü",  "ß", "ñ", "中", "文", "日", "本",
                                         "語", "한", "😀", "—", "“",  "”",  "•",  "…"};
  while (v.size() < size - 256) {
    const int kind = static_cast<int>(rng() % 100);
    std::string t;
    if (kind < 70) {  // a word piece, usually with a leading space
      if (rng() % 3 != 0) t = " ";
      const int n = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) t += syllables[rng() % syllables.size()];
      if (rng() % 8 == 0) t[t.size() > 1 && t[0] == ' ' ? 1 : 0] -= 32;  // Capitalized
    } else if (kind < 76) {  // digits, 1-3 of them (Llama-3 splits numbers so)
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) t += static_cast<char>('0' + rng() % 10);
      if (rng() % 4 == 0) t.insert(0, " ");
    } else if (kind < 90) {  // punctuation and code pieces
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) t += punct[rng() % punct.size()];
      if (rng() % 3 == 0) t.insert(0, " ");
    } else if (kind < 94) {  // whitespace runs
      t = std::string(1 + rng() % 12, rng() % 2 ? ' ' : '\n');
    } else {  // wider characters, sometimes a piece of one
      const int n = 1 + static_cast<int>(rng() % 2);
      for (int i = 0; i < n; ++i) t += wide[rng() % wide.size()];
      if (rng() % 5 == 0) t = t.substr(0, t.size() - 1);
    }
    add(t);
  }
  for (int i = 0; i < 256; ++i) v.emplace_back(std::nullopt);  // special ids
  return v;
}

const TokenVocabulary& vocabulary() {
  static const TokenVocabulary vocab = [] {
    if (g_tokenizer_dir.empty()) return TokenVocabulary(synthetic_vocabulary(128256));
    const tokenizer::LoadedTokenizer t =
        tokenizer::load_hf_tokenizer(g_tokenizer_dir, g_tokenizer_dir);
    std::vector<std::optional<std::string>> bytes;
    for (int32_t id = 0; id < t.tokenizer->vocab_size(); ++id) {
      bytes.push_back(t.tokenizer->token_bytes(id));
    }
    return TokenVocabulary(std::move(bytes));
  }();
  return vocab;
}

std::shared_ptr<const JsonAutomaton> automaton() {
  static const auto a = std::make_shared<JsonAutomaton>(
      std::make_shared<Grammar>(compile_json_schema(nlohmann::ordered_json::parse(R"({
        "type": "object",
        "properties": {
          "name": {"type": "string"},
          "city": {"type": "string", "maxLength": 40},
          "age": {"type": "integer", "minimum": 0, "maximum": 150},
          "unit": {"enum": ["celsius", "fahrenheit"]},
          "tags": {"type": "array", "items": {"type": "string"}},
          "scores": {"type": "array", "items": {"type": "number"}},
          "address": {"type": "object", "properties": {"street": {"type": "string"},
                      "zip": {"type": "string"}}, "required": ["street"]}
        },
        "required": ["name", "age", "unit"]})"))));
  return a;
}

// structured_outputs {"regex": ...}: a sentence of free words (most tokens allowed: the walk over
// the token trie's every branch is the worst case), and an ISO date (few allowed).
std::shared_ptr<const JsonAutomaton> regex_automaton(const char* pattern) {
  return std::make_shared<JsonAutomaton>(std::make_shared<Grammar>(regex_grammar(pattern)));
}
constexpr const char* kSentence = "[^\\n]{1,400}";
constexpr const char* kDate = "\\d{4}-\\d{2}-\\d{2}";

constexpr const char* kDocument =
    R"({"name": "Ada Lovelace, the first programmer", "city": "London", "age": 36, )"
    R"("unit": "celsius", "tags": ["math", "engines"], "scores": [1.5, -2e3, 42], )"
    R"("address": {"street": "12 St James's Square", "zip": "SW1Y 4JH"}})";

// The state after the first `prefix` bytes of the document.
StateSet state_after(size_t prefix) {
  JsonMatcher m(automaton());
  if (prefix > 0 && !m.accept(std::string_view(kDocument, prefix))) std::abort();
  return m.state();
}

void BM_RegexMask(benchmark::State& state, const char* pattern, const char* prefix) {
  const TokenVocabulary& vocab = vocabulary();
  TokenMasker masker(vocab);
  const auto a = regex_automaton(pattern);
  JsonMatcher m(a);
  if (*prefix != 0 && !m.accept(prefix)) std::abort();
  std::vector<uint32_t> mask(mask_words(vocab.size()));
  const std::vector<int32_t> stops = {vocab.size() - 1};
  int64_t allowed = 0;
  for (auto _ : state) {
    allowed = masker.fill(*a, m.state(), stops, mask);
    benchmark::DoNotOptimize(mask.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed);
  state.SetLabel(pattern);
}

void BM_Mask(benchmark::State& state, size_t prefix, const char* where) {
  const TokenVocabulary& vocab = vocabulary();
  TokenMasker masker(vocab);
  const StateSet s = state_after(prefix);
  std::vector<uint32_t> mask(mask_words(vocab.size()));
  const std::vector<int32_t> stops = {vocab.size() - 1};
  int64_t allowed = 0;
  for (auto _ : state) {
    allowed = masker.fill(*automaton(), s, stops, mask);
    benchmark::DoNotOptimize(mask.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed);
  state.counters["vocab"] = vocab.size();
  state.SetLabel(where);
}

// A whole document token by token: the tokens are chosen once (greedy longest allowed match
// of the text), then each iteration replays them with a mask per step, as a decode would.
void BM_Walk(benchmark::State& state) {
  const TokenVocabulary& vocab = vocabulary();
  TokenMasker masker(vocab);
  std::vector<uint32_t> mask(mask_words(vocab.size()));
  const std::vector<int32_t> stops = {vocab.size() - 1};
  const std::string text = kDocument;
  std::vector<std::string> tokens;
  {
    JsonMatcher m(automaton());
    for (size_t at = 0; at < text.size();) {
      masker.fill(*automaton(), m.state(), stops, mask);
      size_t best = 0;
      for (int32_t t = 0; t < vocab.size(); ++t) {
        const auto& b = vocab.bytes(t);
        if (b && b->size() > best && mask_allows(mask, t) && text.compare(at, b->size(), *b) == 0) {
          best = b->size();
        }
      }
      if (best == 0 || !m.accept(text.substr(at, best))) std::abort();
      tokens.push_back(text.substr(at, best));
      at += best;
    }
  }
  for (auto _ : state) {
    JsonMatcher m(automaton());
    for (const std::string& t : tokens) {
      masker.fill(*automaton(), m.state(), stops, mask);
      benchmark::DoNotOptimize(mask.data());
      m.accept(t);
    }
  }
  state.counters["steps"] = static_cast<double>(tokens.size());
  // Seconds per step (Google Benchmark prints it with a unit: "56.1u" is 56.1 microseconds).
  state.counters["per_step"] = benchmark::Counter(
      static_cast<double>(tokens.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace
}  // namespace ctxpar::structured

int main(int argc, char** argv) {
  using namespace ctxpar::structured;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--tokenizer=", 0) == 0) {
      g_tokenizer_dir = a.substr(12);
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::string doc = kDocument;
  const auto at = [&](const char* s, size_t extra) { return doc.find(s) + extra; };
  benchmark::RegisterBenchmark("mask/start", BM_Mask, 0, "before the top-level '{'")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("mask/key", BM_Mask, 1, "after '{': a key or whitespace")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("mask/string", BM_Mask, at("Ada", 4), "inside a free string")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("mask/integer", BM_Mask, at("36", 1), "inside a bounded integer")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("mask/enum", BM_Mask, at("celsius", 1), "inside an enum value")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("mask/after_value", BM_Mask, at("36", 2),
                               "after a value: ',', '}' or whitespace")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("walk", BM_Walk)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("regex/sentence", BM_RegexMask, kSentence, "Once upon")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("regex/date", BM_RegexMask, kDate, "2024-0")
      ->Unit(benchmark::kMicrosecond);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
