// Attribute, item and slice access, iteration and len() with jinja2's sandboxed semantics:
// `x.name` tries the Python attribute first (str and dict methods, loop fields) and then the
// item; `x[key]` tries the item first and then the attribute; a missing attribute, key or
// index gives Undefined, and only using that Undefined raises.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

Value get_attribute(const Value& object, std::string_view name);
Value get_item(const Value& object, const Value& key);
// object[start:stop:step] of a list, tuple or str (code points); absent parts are null.
// Throws TemplateError for a zero step or a non-integer bound.
Value get_slice(const Value& object, const Value* start, const Value* stop, const Value* step);

// The items `for x in value` visits: list and tuple items, dict keys, str code points (as
// one-character strings); nothing for Undefined. Throws TemplateError for anything else.
std::vector<Value> iterate(const Value& value);
// `item in container`: substring for str, key for dict, equal item for list and tuple.
// Throws TemplateError for Undefined or containers without membership.
bool contains(const Value& container, const Value& item);
// len(value); throws TemplateError for values without a length.
int64_t length_of(const Value& value);

}  // namespace ctxpar::chat_template
