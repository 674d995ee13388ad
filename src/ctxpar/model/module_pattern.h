// compressed-tensors' "re:" module patterns (quantization_config.ignore), matched as Python's
// re.match does: from the start of the module name, not necessarily to its end. PCRE2 reads
// the Python regex syntax these patterns use (classes, escapes, anchors, alternation).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ctxpar::model {

class ModulePattern {
 public:
  // `pattern` without the "re:" prefix. Throws InputError naming it and PCRE2's message when it
  // does not compile.
  explicit ModulePattern(std::string_view pattern);

  // Whether the pattern matches at the start of `module` (e.g. "model.layers.3.mlp.gate").
  bool matches(std::string_view module) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<const Code> code_;  // immutable once compiled: copies share it
};

}  // namespace ctxpar::model
