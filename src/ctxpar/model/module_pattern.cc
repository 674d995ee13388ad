#include "ctxpar/model/module_pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "ctxpar/core/error.h"

namespace ctxpar::model {

struct ModulePattern::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

ModulePattern::ModulePattern(std::string_view pattern) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto code = std::make_shared<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                             PCRE2_ANCHORED, &error, &offset, nullptr);
  if (code->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    CTXPAR_INPUT_FAIL("the module pattern 're:{}' is not a valid regex: {} at offset {}", pattern_,
                      reinterpret_cast<const char*>(message), offset);
  }
  code_ = std::move(code);
}

bool ModulePattern::matches(std::string_view module) const {
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  CTXPAR_CHECK(data != nullptr, "PCRE2 could not allocate match data for 're:{}'", pattern_);
  const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(module.data()),
                             module.size(), 0, 0, data, nullptr);
  pcre2_match_data_free(data);
  CTXPAR_CHECK(rc >= 0 || rc == PCRE2_ERROR_NOMATCH,
               "PCRE2 failed (error {}) matching 're:{}' against '{}'", rc, pattern_, module);
  return rc >= 0;
}

}  // namespace ctxpar::model
