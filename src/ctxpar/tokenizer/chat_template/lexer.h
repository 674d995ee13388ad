// Lexer: template text -> tokens, with jinja2's whitespace rules as Hugging Face configures
// them (trim_blocks and lstrip_blocks on, keep_trailing_newline off):
// - newlines are normalized to "\n" and one trailing line break is dropped (jinja2 joins
//   str.splitlines());
// - `{%-`, `{{-`, `{#-` strip all whitespace before the tag, `-%}`, `-}}`, `-#}` all after;
// - trim_blocks removes the first newline after `%}` and `#}` (not after `}}`); `+%}` keeps it;
// - lstrip_blocks removes spaces and tabs from the start of a line up to `{%` or `{#`;
//   `{%+` keeps them;
// - `{# ... #}` comments vanish and `{% raw %}...{% endraw %}` is data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/tokenizer/chat_template/source_map.h"

namespace ctxpar::chat_template {

enum class TokenType {
  kData,           // text outside tags (text)
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,           // identifier (text)
  kString,         // string literal, escapes decoded (text)
  kInteger,        // int_value
  kFloat,          // float_value
  kOperator,       // + - * / // % ** ~ == != < <= > >= = . : | , ; ( ) [ ] { } (text)
  kEnd,            // end of the template
};

struct Token {
  TokenType type = TokenType::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0.0;
  size_t offset = 0;  // into normalize_template_source(source)
};

// jinja2's "\n".join(source.splitlines()).
std::string normalize_template_source(std::string_view source);

// Tokens of a normalized source, ending with kEnd. Throws ctxpar::InputError naming map.where() for
// an unterminated tag, comment, string or raw block, an unexpected character, or unbalanced
// brackets.
std::vector<Token> tokenize_template(std::string_view normalized, const SourceMap& map);

}  // namespace ctxpar::chat_template
