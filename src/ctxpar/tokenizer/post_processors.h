// tokenizer.json "post_processor": adds the special tokens of a single sequence (BOS, CLS/SEP,
// ...) when encode is asked to add them. Pairs of sequences are not needed by ctxpar.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctxpar/tokenizer/json_node.h"

namespace ctxpar::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites the ids of one encoded sequence.
  virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
};

// TemplateProcessing for one sequence: `prefix` ids, the sequence, `suffix` ids.
class TemplatePostProcessor final : public PostProcessor {
 public:
  TemplatePostProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override;

 private:
  std::vector<int32_t> prefix_, suffix_;
};

// Builds the post-processor of a tokenizer.json "post_processor" value (null: nullptr).
// Supported types: TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing,
// Sequence; anything else throws ctxpar::InputError naming the file, the path and the types.
std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& node);

}  // namespace ctxpar::tokenizer
