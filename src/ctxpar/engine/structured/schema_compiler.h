// JSON schema → Grammar, following what vLLM's default structured-output backend (xgrammar,
// compile_json_schema with strict_mode and any_whitespace, as vLLM calls it) generates:
//   - object properties appear in the schema's order; optional ones may be left out;
//   - additionalProperties: true or a schema allows other keys (after the declared ones, never
//     a declared name again); absent, it means false when `properties` is given (xgrammar's
//     strict mode) and "any" for a plain {"type": "object"};
//   - prefixItems must all be present; items absent after prefixItems means no more items,
//     and a plain {"type": "array"} takes any items;
//   - const and enum values must appear exactly as compact JSON (json.dumps without spaces);
//   - oneOf is matched as anyOf (as xgrammar does when it cannot prove the options disjoint);
//   - a schema without "type" is an object if it has properties / additionalProperties, an
//     array if it has items / prefixItems, else any of the types its keywords allow.
// Supported keywords: type (string or list), properties, required, additionalProperties,
// minProperties, maxProperties,
// items, prefixItems, minItems, maxItems, enum, const, anyOf, oneOf, allOf with one schema,
// $ref to a local JSON pointer ("#", "#/$defs/X", "#/definitions/X", ...), $defs / definitions,
// minLength, maxLength, pattern and format (string_formats.h; an unknown format is ignored, as
// xgrammar ignores it; a known one wins over a pattern; with either, lengths are ignored, as
// xgrammar ignores them), and minimum / maximum / exclusiveMinimum / exclusiveMaximum (on a
// "number" they make it a decimal without exponent of at most 18 digits).
// Annotations (title, description, default, examples, $schema, $id, $comment, deprecated,
// readOnly, writeOnly) are ignored. Any other keyword is refused, never ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/engine/structured/grammar.h"

namespace ctxpar::structured {

// `schema` must keep its keys in the order of the request text (ordered_json): that is the
// order properties are generated in. Throws ctxpar::InputError whose message names the keyword and
// where it is (a JSON pointer) for an unsupported keyword, a malformed schema or one that no value
// satisfies.
// `any_whitespace`: Grammar::any_whitespace.
Grammar compile_json_schema(const nlohmann::ordered_json& schema, bool any_whitespace = true);

// Any JSON object (response_format {"type": "json_object"}).
Grammar json_object_grammar(bool any_whitespace = true);

// Raw text matching `pattern` whole (vLLM's structured_outputs {"regex": ...}; regex_parser.h).
// Throws ctxpar::InputError for a pattern regex_parser or compile_byte_dfa refuses.
Grammar regex_grammar(std::string_view pattern);

// Exactly one of `choices`, as raw text (vLLM's structured_outputs {"choice": [...]}: no quotes,
// no whitespace around). Throws ctxpar::InputError for no choices or an empty one (naming its
// index).
Grammar choice_grammar(const std::vector<std::string>& choices);

}  // namespace ctxpar::structured
