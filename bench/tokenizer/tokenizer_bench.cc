// Encode throughput of HfTokenizer on a 1 MiB mixed text (English prose, code, CJK, Arabic,
// Cyrillic, emoji, digits, whitespace runs), one thread, for the fixture tokenizers
// (tests/fixtures/tokenizers). Reports MB/s. The ceiling is the Rust `tokenizers` crate on the
// same text and tokenizer, measured in the same run by bench/tokenizer/compare_tokenizers.py,
// which also checks that both give the same ids.
//
// Run: build/bench/tokenizer/tokenizer_bench [--text=FILE] [--save_text=FILE]
//        [--ids_out=DIR] [--tokenizers=llama3,qwen2] [benchmark flags]
//   --text       encode this file instead of the built-in 1 MiB text
//   --save_text  write the built-in text to FILE (so another program encodes the same bytes)
//   --ids_out    write each tokenizer's ids of the text to DIR/<name>.ids, one per line
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ctxpar/tokenizer/hf_tokenizer.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

constexpr size_t kTextBytes = size_t{1} << 20;

// 1 MiB of text drawn from word pools of several scripts with a fixed seed: many distinct
// words (so the pre-token cache does not make every word free) in realistic proportions.
std::string mixed_text() {
  const std::vector<std::string> english = {
      "the",       "model",   "shards",  "its",     "cache",   "along",  "sequence",
      "so",        "no",      "rank",    "stores",  "a",       "token",  "twice",
      "attention", "merges",  "partial", "results", "exactly", "with",   "log-sum-exp",
      "It's",      "they'll", "we've",   "THE",     "Decode",  "Context"};
  const std::vector<std::string> code = {
      "def",  "return", "for",   "(int", "i",     "=",    "0;",
      "i",    "<",      "n;",    "++i)", "{",     "}",    "std::vector<int32_t>",
      "ids;", "if",     "(a[i]", "!=",   "b[i])", "x**2", "#",
      "->",   "::"};
  const std::vector<std::string> cjk = {"你好",     "世界",     "今天",   "天气",      "很好",
                                        "我们",     "测试",     "分词器", "日本語",    "テキスト",
                                        "ひらがな", "カタカナ", "한국어", "문장입니다"};
  const std::vector<std::string> other = {
      "مرحبا", "بالعالم", "كيف",  "حالك",  "Привет", "мир",      "проверка",
      "Γειά",  "κόσμε",   "café", "naïve", "Straße", "👍🏽", "👨‍👩‍👧‍👦",
      "🙂",  "❤️"};
  const std::vector<std::string> separators = {" ",    " ",    " ",  " ",  ", ", ". ", "\n",
                                               "\n\n", "    ", "\t", "! ", "? ", ": "};
  std::mt19937_64 rng(20261201);
  const char syllables[][4] = {"ka",  "ri",  "to",  "ne", "shi", "la", "mo", "vu", "de",
                               "str", "pre", "ing", "er", "ed",  "ly", "un", "re", "qu"};
  std::string text;
  while (text.size() < kTextBytes) {
    const unsigned pick = rng() % 100;
    if (pick < 45) {
      text += english[rng() % english.size()];
    } else if (pick < 60) {
      // An invented word: keeps the number of distinct pre-tokens high.
      for (unsigned k = 1 + rng() % 4; k > 0; --k) text += syllables[rng() % 18];
    } else if (pick < 72) {
      text += code[rng() % code.size()];
    } else if (pick < 82) {
      text += cjk[rng() % cjk.size()];
    } else if (pick < 90) {
      text += other[rng() % other.size()];
    } else {
      text += std::to_string(rng() % 100000);
    }
    text += separators[rng() % separators.size()];
  }
  text.resize(kTextBytes);
  while (!utf8::is_valid(text)) text.pop_back();  // end at a character boundary
  return text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "tokenizer_bench: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void encode_benchmark(benchmark::State& state, const HfTokenizer* tok, const std::string* text) {
  size_t tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = tok->encode(*text, false);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text->size()));
  state.counters["MB_per_s"] = benchmark::Counter(static_cast<double>(text->size()) / 1e6,
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["text_bytes"] = static_cast<double>(text->size());
}

}  // namespace
}  // namespace ctxpar::tokenizer

int main(int argc, char** argv) {
  using namespace ctxpar::tokenizer;
  std::string text_path, save_path, ids_dir;
  std::vector<std::string> names = {"gpt2", "llama3", "qwen2", "deepseek_v3", "llama2", "mistral"};
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.starts_with("--text=")) {
      text_path = a.substr(7);
    } else if (a.starts_with("--save_text=")) {
      save_path = a.substr(12);
    } else if (a.starts_with("--ids_out=")) {
      ids_dir = a.substr(10);
    } else if (a.starts_with("--tokenizers=")) {
      names = split_list(a.substr(13));
    } else {
      rest.push_back(argv[i]);
    }
  }
  static const std::string text = text_path.empty() ? mixed_text() : read_file(text_path);
  if (!save_path.empty()) std::ofstream(save_path, std::ios::binary) << text;
  static std::vector<std::unique_ptr<HfTokenizer>> tokenizers;
  for (const std::string& name : names) {
    tokenizers.push_back(HfTokenizer::from_file(std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/" +
                                                name + "/tokenizer.json"));
    if (!ids_dir.empty()) {
      std::ofstream out(ids_dir + "/" + name + ".ids");
      for (const int32_t id : tokenizers.back()->encode(text, false)) out << id << '\n';
    }
    benchmark::RegisterBenchmark(("encode/" + name).c_str(), encode_benchmark,
                                 tokenizers.back().get(), &text)
        ->Unit(benchmark::kMillisecond);
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
