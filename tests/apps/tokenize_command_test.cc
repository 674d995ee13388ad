// `ctxpar tokenize`, `ctxpar detokenize` and `ctxpar generate` with a model's Hugging Face
// tokenizer (--tokenizer, or the model directory's files), run as a user runs them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "run_command.h"

namespace ctxpar::app {
using test::CommandResult;
using test::run_command;
namespace {

namespace fs = std::filesystem;

const std::string kTokenizers = std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers";

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The golden encode case of `fixture` for `text`.
nlohmann::json golden_case(const std::string& fixture, const std::string& text) {
  const nlohmann::json golden = read_json(kTokenizers + "/" + fixture + "/golden.json");
  for (const auto& c : golden["encode"]) {
    if (c.contains("text") && c["text"] == text) return c;
  }
  ADD_FAILURE() << "no golden case '" << text << "'";
  return {};
}

std::string join(const std::vector<int>& ids) {
  std::string s;
  for (const int id : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(id);
  }
  return s;
}

TEST(TokenizeCommand, IdsAndTokenStringsAsTokenizers) {
  for (const std::string fixture : {"llama3", "qwen2", "mistral"}) {
    const std::string text =
        "The quick brown fox jumps over the lazy dog. It's 12:45 — isn't it? "
        "I'm sure they'll've done it.";
    const CommandResult r =
        run_command(CTXPAR_BINARY, {"tokenize", "--model", "builtin:tiny-llama", "--tokenizer",
                                    kTokenizers + "/" + fixture, "--json", text, "hello"});
    ASSERT_EQ(r.exit_status, 0) << r.err;
    std::istringstream lines(r.out);
    std::string first, second;
    std::getline(lines, first);
    std::getline(lines, second);
    const auto j = nlohmann::json::parse(first);
    EXPECT_EQ(j["tokens"], golden_case(fixture, text)["ids"]) << fixture;
    EXPECT_EQ(j["count"], j["tokens"].size());
    EXPECT_EQ(j["token_strs"].size(), j["tokens"].size());
    EXPECT_EQ(nlohmann::json::parse(second)["tokens"], golden_case(fixture, "hello")["ids"]);

    const CommandResult plain = run_command(
        CTXPAR_BINARY, {"tokenize", "--model", "builtin:tiny-llama", "--tokenizer",
                        kTokenizers + "/" + fixture, "--json", "--no-special-tokens", text});
    ASSERT_EQ(plain.exit_status, 0) << plain.err;
    EXPECT_EQ(nlohmann::json::parse(plain.out)["tokens"],
              golden_case(fixture, text)["ids_no_special"]);
  }
}

TEST(TokenizeCommand, DetokenizeWithAndWithoutSpecialTokens) {
  const nlohmann::json c = golden_case("llama3", "hello  <|eot_id|>  world<|eot_id|>");
  const std::string ids = join(c["ids"].get<std::vector<int>>());
  const std::vector<std::string> base = {
      "detokenize", "--model", "builtin:tiny-llama", "--tokenizer", kTokenizers + "/llama3",
      "--json"};
  auto args = base;
  args.push_back(ids);
  CommandResult r = run_command(CTXPAR_BINARY, args);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["prompt"], c["decoded_with_special"]);
  args.insert(args.end() - 1, "--skip-special-tokens");
  r = run_command(CTXPAR_BINARY, args);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["prompt"], c["decoded"]);
}

TEST(TokenizeCommand, BuiltinModelsUseTheByteTokenizer) {
  const CommandResult r =
      run_command(CTXPAR_BINARY, {"tokenize", "--model", "builtin:tiny-llama", "--json", "hé"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"], nlohmann::json({256, 'h', 0xC3, 0xA9}));
  const CommandResult d =
      run_command(CTXPAR_BINARY, {"detokenize", "--model", "builtin:tiny-llama", "104,105"});
  ASSERT_EQ(d.exit_status, 0) << d.err;
  EXPECT_EQ(d.out, "\"hi\"\n");
}

TEST(TokenizeCommand, BadInputsExitWithOneLine) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"tokenize", "--tokenizer", "/nonexistent-dir", "x"},
       "/nonexistent-dir has no tokenizer.json"},
      {{"detokenize", "--model", "builtin:tiny-llama", "1,x"}, "'x' in '1,x' is not a token id"},
      {{"detokenize", "--model", "builtin:tiny-llama", "1,99999"}, "outside the vocabulary"},
      {{"tokenize", "--model", "/nonexistent-model", "x"}, "/nonexistent-model"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_command(CTXPAR_BINARY, c.args);
    EXPECT_EQ(r.exit_status, 2) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// A Llama model directory with the llama3 fixture's tokenizer files, run with dummy weights:
// text prompts are encoded as transformers does and the output shows decoded text.
TEST(GenerateWithTokenizer, ModelDirectoryTokenizer) {
  const fs::path dir =
      fs::temp_directory_path() / ("ctxpar-generate-tok-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kTokenizers + "/llama3")) {
    fs::copy_file(e.path(), dir / e.path().filename());
  }
  nlohmann::json config =
      read_json(std::string(CTXPAR_FIXTURES_DIR) + "/tiny-llama-fixture/config.json");
  const std::string text = "Hello world";
  auto generate = [&](int vocab_size) {
    config["vocab_size"] = vocab_size;
    std::ofstream(dir / "config.json") << config.dump();
    const CommandResult r = run_command(
        CTXPAR_BINARY, {"generate", "--model", dir.string(), "--load-format", "dummy", "--prompt",
                        text, "--max-tokens", "6", "--ignore-eos", "--max-model-len", "64",
                        "--kv-cache-memory", "8MiB", "--json"});
    EXPECT_EQ(r.exit_status, 0) << r.err;
    return nlohmann::json::parse(r.out)["requests"][0];
  };
  // A model vocabulary padded beyond the tokenizer's: ids without a token print as nothing.
  const auto padded = generate(4096);
  EXPECT_EQ(padded["prompt_token_ids"], golden_case("llama3", text)["ids"]);
  EXPECT_TRUE(padded.contains("text"));

  const int vocab = read_json(kTokenizers + "/llama3/golden.json")["vocab_size"];
  const auto out = generate(vocab);
  EXPECT_EQ(out["prompt_token_ids"], golden_case("llama3", text)["ids"]);
  EXPECT_EQ(out["output_token_ids"].size(), 6u);
  ASSERT_TRUE(out.contains("text"));
  // The printed text is the detokenized output.
  const std::string ids = join(out["output_token_ids"].get<std::vector<int>>());
  const CommandResult d = run_command(CTXPAR_BINARY, {"detokenize", "--model", dir.string(),
                                                      "--skip-special-tokens", "--json", ids});
  ASSERT_EQ(d.exit_status, 0) << d.err;
  EXPECT_EQ(out["text"], nlohmann::json::parse(d.out)["prompt"]);

  // Without tokenizer.json a text prompt is refused with the reason; token ids still run.
  fs::remove(dir / "tokenizer.json");
  const CommandResult refused =
      run_command(CTXPAR_BINARY, {"generate", "--model", dir.string(), "--load-format", "dummy",
                                  "--prompt", text, "--max-model-len", "64"});
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_NE(refused.err.find("text prompts need the model's tokenizer"), std::string::npos)
      << refused.err;
  const CommandResult ids_only =
      run_command(CTXPAR_BINARY, {"generate", "--model", dir.string(), "--load-format", "dummy",
                                  "--prompt-token-ids", "1,2,3", "--max-tokens", "2",
                                  "--max-model-len", "64", "--kv-cache-memory", "8MiB"});
  EXPECT_EQ(ids_only.exit_status, 0) << ids_only.err;
  fs::remove_all(dir);
}

// --tokenizer OWNER/NAME, as vLLM takes it: the llama3 fixture's files laid out in a Hugging
// Face hub cache (refs naming snapshots of symlinks), found through HF_HUB_CACHE or
// --download-dir, at --tokenizer-revision, encode as the directory does; a repo id that is not
// cached, or a snapshot without tokenizer.json, exits 2 saying so.
TEST(GenerateWithTokenizer, RepoIdTokenizerFromTheHuggingFaceCache) {
  const fs::path cache =
      fs::temp_directory_path() / ("ctxpar-tok-cache-" + std::to_string(std::random_device{}()));
  const fs::path repo = cache / "models--meta-llama--Llama-3.2-1B";
  const std::string commit = "0f9e8d7c6b5a49382716a5b4c3d2e1f0a9b8c7d6";
  const std::string old_commit = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << commit;
  std::ofstream(repo / "refs" / "v2") << commit;
  std::ofstream(repo / "refs" / "broken") << old_commit;
  fs::create_directories(repo / "snapshots" / commit);
  fs::create_directories(repo / "snapshots" / old_commit);  // no tokenizer.json
  for (const auto& e : fs::directory_iterator(kTokenizers + "/llama3")) {
    fs::create_symlink(e.path(), repo / "snapshots" / commit / e.path().filename());
  }
  // A dummy-weight model whose vocabulary covers the tokenizer's ids.
  nlohmann::json config =
      read_json(std::string(CTXPAR_FIXTURES_DIR) + "/tiny-llama-fixture/config.json");
  config["vocab_size"] = 4096;
  fs::create_directories(cache / "model");
  std::ofstream(cache / "model" / "config.json") << config.dump();
  const std::string model = (cache / "model").string();
  const std::string text = "Hello world";
  const auto prompt_ids = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"generate",    "--model",
                                     model,         "--load-format",
                                     "dummy",       "--prompt",
                                     text,          "--max-tokens",
                                     "1",           "--max-model-len",
                                     "64",          "--json",
                                     "--tokenizer", "meta-llama/Llama-3.2-1B"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult r = run_command(CTXPAR_BINARY, args);
    EXPECT_EQ(r.exit_status, 0) << r.err;
    return r.exit_status == 0 ? nlohmann::json::parse(r.out)["requests"][0]["prompt_token_ids"]
                              : nlohmann::json();
  };
  const nlohmann::json want = golden_case("llama3", text)["ids"];
  EXPECT_EQ(prompt_ids({"--download-dir", cache.string()}), want);
  ::setenv("HF_HUB_CACHE", cache.c_str(), 1);
  EXPECT_EQ(prompt_ids({"--tokenizer-revision", "v2"}), want);
  const CommandResult tokenized =
      run_command(CTXPAR_BINARY, {"tokenize", "--model", "builtin:tiny-llama", "--tokenizer",
                                  "meta-llama/Llama-3.2-1B", "--json", text});
  ASSERT_EQ(tokenized.exit_status, 0) << tokenized.err;
  EXPECT_EQ(nlohmann::json::parse(tokenized.out)["tokens"], want);
  const auto refused = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"generate", "--model",  model, "--load-format",
                                     "dummy",    "--prompt", text,  "--max-model-len",
                                     "64"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult r = run_command(CTXPAR_BINARY, args);
    EXPECT_EQ(r.exit_status, 2) << r.out;
    return r.err;
  };
  const std::string missing = refused({"--tokenizer", "meta-llama/Llama-3.3-70B"});
  EXPECT_NE(missing.find("tokenizer 'meta-llama/Llama-3.3-70B' is not a local path"),
            std::string::npos)
      << missing;
  EXPECT_NE(missing.find("hf download meta-llama/Llama-3.3-70B"), std::string::npos) << missing;
  const std::string no_revision =
      refused({"--tokenizer", "meta-llama/Llama-3.2-1B", "--tokenizer-revision", "v9"});
  EXPECT_NE(no_revision.find("at revision 'v9' (--tokenizer-revision)"), std::string::npos)
      << no_revision;
  const std::string incomplete =
      refused({"--tokenizer", "meta-llama/Llama-3.2-1B", "--tokenizer-revision", "broken"});
  EXPECT_NE(incomplete.find("has no tokenizer.json"), std::string::npos) << incomplete;
  ::unsetenv("HF_HUB_CACHE");
  fs::remove_all(cache);
}

// --apply-chat-template renders a text prompt as one user message with the model directory's
// chat template (here Qwen2.5's real one) and encodes it without special tokens, as vLLM's chat
// endpoint does: the prompt ids are the tokenization of jinja2's render of that conversation.
// A prompts-file "messages" line is the same conversation; --chat-template overrides the
// template; a model without one is refused naming --chat-template.
TEST(GenerateWithTokenizer, ChatTemplatePrompts) {
  const fs::path dir = fs::temp_directory_path() /
                       ("ctxpar-generate-chat-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kTokenizers + "/qwen2")) {
    fs::copy_file(e.path(), dir / e.path().filename());
  }
  const std::string templates = std::string(CTXPAR_FIXTURES_DIR) + "/chat_templates";
  fs::copy_file(templates + "/templates/Qwen-Qwen2.5-7B-Instruct.jinja",
                dir / "chat_template.jinja");
  nlohmann::json config =
      read_json(std::string(CTXPAR_FIXTURES_DIR) + "/tiny-llama-fixture/config.json");
  config["vocab_size"] = read_json(kTokenizers + "/qwen2/golden.json")["vocab_size"];
  std::ofstream(dir / "config.json") << config.dump();
  std::string expected;
  const nlohmann::json goldens = read_json(templates + "/goldens.json");
  for (const auto& c : goldens["cases"]) {
    if (c["template"] == "Qwen-Qwen2.5-7B-Instruct.jinja" && c["conversation"] == "single_user" &&
        c["add_generation_prompt"] == true && c["chat_template_kwargs"].empty())
      expected = c["expected"];
  }
  ASSERT_FALSE(expected.empty());
  const std::vector<std::string> common = {
      "--model",         dir.string(), "--load-format",     "dummy", "--max-tokens", "2",
      "--max-model-len", "256",        "--kv-cache-memory", "8MiB",  "--json"};
  auto prompt_ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "generate");
    args.insert(args.end(), common.begin(), common.end());
    const CommandResult r = run_command(CTXPAR_BINARY, args);
    EXPECT_EQ(r.exit_status, 0) << r.err;
    return r.exit_status == 0 ? nlohmann::json::parse(r.out)["requests"][0]["prompt_token_ids"]
                              : nlohmann::json();
  };
  const CommandResult want =
      run_command(CTXPAR_BINARY,
                  {"tokenize", "--model", dir.string(), "--no-special-tokens", "--json", expected});
  ASSERT_EQ(want.exit_status, 0) << want.err;
  const nlohmann::json want_ids = nlohmann::json::parse(want.out)["tokens"];
  EXPECT_EQ(prompt_ids({"--apply-chat-template", "--prompt", "Hello!"}), want_ids);

  const fs::path file = dir / "prompts.jsonl";
  std::ofstream(file) << R"({"messages": [{"role": "user", "content": "Hello!"}]})"
                      << "\n";
  EXPECT_EQ(prompt_ids({"--prompts-file", file.string()}), want_ids);

  // --chat-template (a file) replaces the model's template.
  const fs::path other = dir / "other.jinja";
  std::ofstream(other) << "{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}";
  const CommandResult plain = run_command(
      CTXPAR_BINARY,
      {"tokenize", "--model", dir.string(), "--no-special-tokens", "--json", "[user] Hello!"});
  ASSERT_EQ(plain.exit_status, 0) << plain.err;
  EXPECT_EQ(prompt_ids(
                {"--apply-chat-template", "--chat-template", other.string(), "--prompt", "Hello!"}),
            nlohmann::json::parse(plain.out)["tokens"]);

  // No template at all: refused, naming the flag that would give one.
  fs::remove(dir / "chat_template.jinja");
  nlohmann::json tc = read_json(dir / "tokenizer_config.json");
  tc.erase("chat_template");
  std::ofstream(dir / "tokenizer_config.json") << tc.dump();
  std::vector<std::string> args = {"generate", "--apply-chat-template", "--prompt", "Hello!"};
  args.insert(args.end(), common.begin(), common.end());
  const CommandResult refused = run_command(CTXPAR_BINARY, args);
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_NE(refused.err.find("--chat-template"), std::string::npos) << refused.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ctxpar::app
