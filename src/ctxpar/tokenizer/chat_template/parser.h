// Parser: tokens -> statements and expressions, following jinja2's grammar and operator
// precedence (conditional < or < and < not < comparisons < + - < ~ < * / // % < ** < unary
// < filters, tests and calls < postfix). Unsupported features fail here, at parse time: an
// unknown or unsupported tag, filter or test, `recursive` loops, *args / **kwargs calls,
// unterminated blocks, stray end tags, break/continue outside a loop.
#pragma once

#include <vector>

#include "ctxpar/tokenizer/chat_template/ast.h"
#include "ctxpar/tokenizer/chat_template/lexer.h"
#include "ctxpar/tokenizer/chat_template/source_map.h"

namespace ctxpar::chat_template {

// The statements of a whole template. Throws ctxpar::InputError naming map.where() of the offending
// token and what was expected or what is supported.
Body parse_template(const std::vector<Token>& tokens, const SourceMap& map);

}  // namespace ctxpar::chat_template
