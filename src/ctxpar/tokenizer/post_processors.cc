#include "ctxpar/tokenizer/post_processors.h"

#include <map>

namespace ctxpar::tokenizer {
namespace {

class NoSpecialTokens final : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    for (const auto& s : steps_) s->process(ids, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// ["<s>", 1] as RobertaProcessing and BertProcessing write their tokens.
int32_t token_pair_id(const JsonNode& node) {
  const std::vector<JsonNode> pair = node.elements();
  if (pair.size() != 2 || !pair[0].json().is_string()) node.fail("must be [\"token\", id]");
  const int64_t id = pair[1].integer();
  if (id < 0 || id > INT32_MAX) pair[1].fail("must be a non-negative 32-bit id");
  return static_cast<int32_t>(id);
}

// One template piece: {"Sequence": {"id": "A"}} / {"SpecialToken": {"id": "<s>"}}, or the
// string forms "$A" / "<s>" (":type_id" suffixes allowed and ignored).
struct TemplatePiece {
  bool is_sequence_a = false;  // a piece of the sequence itself
  std::string special;         // otherwise: the special token's name
};

TemplatePiece parse_piece(const JsonNode& node) {
  if (node.json().is_string()) {
    std::string s = node.string();
    if (const size_t colon = s.rfind(':'); colon != std::string::npos && colon > 0) {
      s = s.substr(0, colon);
    }
    if (s == "$" || s == "$A" || s == "$a" ||
        (s.size() > 1 && s[0] == '$' &&
         s.find_first_not_of("0123456789", 1) == std::string::npos)) {
      return {true, ""};
    }
    if (s == "$B" || s == "$b") node.fail("a single-sequence template cannot use $B");
    return {false, s};
  }
  if (const auto seq = node.find("Sequence")) {
    const std::string id = seq->at("id").string();
    if (id != "A") seq->at("id").fail("a single-sequence template uses sequence A, not '{}'", id);
    return {true, ""};
  }
  if (const auto sp = node.find("SpecialToken")) return {false, sp->at("id").string()};
  node.fail("a template piece must be {{\"Sequence\": ...}} or {{\"SpecialToken\": ...}}");
}

std::unique_ptr<PostProcessor> make_template(const JsonNode& node) {
  std::map<std::string, std::vector<int32_t>> specials;
  if (const auto tokens = node.find("special_tokens")) {
    if (!tokens->json().is_object()) tokens->fail("must be an object of name: {{id, ids, tokens}}");
    for (const auto& [name, value] : tokens->json().items()) {
      const JsonNode entry = tokens->at(name);
      std::vector<int32_t> ids;
      for (const JsonNode& id : entry.at("ids").elements()) {
        const int64_t v = id.integer();
        if (v < 0 || v > INT32_MAX) id.fail("must be a non-negative 32-bit id");
        ids.push_back(static_cast<int32_t>(v));
      }
      specials[name] = std::move(ids);
    }
  }
  const JsonNode single = node.at("single");
  nlohmann::json words = nlohmann::json::array();  // the compact form "<s> $A </s>", split
  std::vector<JsonNode> pieces;
  if (single.json().is_string()) {
    const std::string s = single.string();
    for (size_t b = 0, e; b < s.size(); b = e + 1) {
      e = s.find(' ', b);
      if (e == std::string::npos) e = s.size();
      if (e > b) words.push_back(s.substr(b, e - b));
    }
    pieces = JsonNode(words, single.file(), single.path()).elements();
  } else {
    pieces = single.elements();
  }
  std::vector<int32_t> prefix, suffix;
  bool seen_sequence = false;
  for (const JsonNode& p : pieces) {
    const TemplatePiece piece = parse_piece(p);
    if (piece.is_sequence_a) {
      if (seen_sequence) p.fail("the template uses the sequence twice");
      seen_sequence = true;
      continue;
    }
    const auto it = specials.find(piece.special);
    if (it == specials.end()) p.fail("special token '{}' is not in special_tokens", piece.special);
    auto& dst = seen_sequence ? suffix : prefix;
    dst.insert(dst.end(), it->second.begin(), it->second.end());
  }
  if (!seen_sequence) single.fail("the single-sequence template must contain $A");
  return std::make_unique<TemplatePostProcessor>(std::move(prefix), std::move(suffix));
}

}  // namespace

void TemplatePostProcessor::process(std::vector<int32_t>& ids, bool add_special_tokens) const {
  if (!add_special_tokens) return;
  ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
  ids.insert(ids.end(), suffix_.begin(), suffix_.end());
}

std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const std::string type = node.type_among(
      "post-processor",
      {"TemplateProcessing", "ByteLevel", "RobertaProcessing", "BertProcessing", "Sequence"});
  if (type == "TemplateProcessing") return make_template(node);
  if (type == "ByteLevel") return std::make_unique<NoSpecialTokens>();  // offsets only
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // <cls> sequence <sep> for one sequence.
    return std::make_unique<TemplatePostProcessor>(
        std::vector<int32_t>{token_pair_id(node.at("cls"))},
        std::vector<int32_t>{token_pair_id(node.at("sep"))});
  }
  std::vector<std::unique_ptr<PostProcessor>> steps;
  for (const JsonNode& n : node.at("processors").elements()) {
    auto step = make_post_processor(n);
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<Sequence>(std::move(steps));
}

}  // namespace ctxpar::tokenizer
