// The JSON schema string formats vLLM's default backend (xgrammar) enforces, as regexes over the
// decoded string (regex_parser.h syntax, matched with RegexText::kJsonString). Each accepts what
// xgrammar's grammar for the format accepts, written canonically (no escapes beyond json.dumps's).
#pragma once

#include <optional>
#include <string_view>

namespace ctxpar::structured {

// The regex of `format`, or nullopt for a format xgrammar does not know: it ignores those, and so
// does ctxpar (the string is then any string). Known: date, time, date-time, duration, email,
// hostname, ipv4, ipv6, uuid, uri, uri-reference, uri-template, json-pointer,
// relative-json-pointer.
std::optional<std::string_view> format_regex(std::string_view format);

}  // namespace ctxpar::structured
