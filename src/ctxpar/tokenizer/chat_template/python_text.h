// Python's text semantics over UTF-8 std::string: what jinja2 (running on Python str) does with
// code points, whitespace, repr() and float formatting. Chat templates index, slice, strip and
// print strings, and the rendered prompt must equal Python's byte for byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::chat_template {

// Code points of UTF-8 text. An invalid byte b decodes to U+DC00 + b (Python's
// "surrogateescape"), so encode_utf8(decode_utf8(s)) == s for every byte string.
std::u32string decode_utf8(std::string_view text);
std::string encode_utf8(std::u32string_view code_points);
void append_utf8(std::string& out, char32_t code_point);
size_t count_code_points(std::string_view text);

// str.isspace(): the Unicode White_Space characters Python treats as whitespace (also the
// characters str.split() and str.strip() remove by default).
bool is_python_space(char32_t c);
// str.splitlines() line boundaries (\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029).
bool is_python_line_break(char32_t c);

// Python's str.strip/lstrip/rstrip: `chars` null means whitespace, else the set of code points.
enum class StripSide { kBoth, kLeft, kRight };
std::string python_strip(std::string_view text, const std::string* chars, StripSide side);

// str.split(sep, maxsplit) / str.rsplit: sep null splits on whitespace runs and drops empty
// parts. maxsplit < 0 means no limit. Throws TemplateError for an empty separator.
std::vector<std::string> python_split(std::string_view text, const std::string* sep,
                                      long long maxsplit, bool from_right);

// ASCII case mapping (non-ASCII letters are left as they are: the templates this renderer
// serves only change the case of ASCII role names and keywords).
std::string ascii_upper(std::string_view text);
std::string ascii_lower(std::string_view text);
std::string python_str_title(std::string_view text);       // str.title()
std::string python_str_capitalize(std::string_view text);  // str.capitalize()

// repr(str): single quotes unless the text has ' and no ", escapes for \\ \n \r \t, the quote,
// and non-printable code points (\xNN, \uNNNN, \UNNNNNNNN).
std::string python_repr_string(std::string_view text);

// repr(float) / str(float): the shortest text that round-trips, fixed notation for decimal
// exponents in [-4, 16), else d.ddde+XX; "inf", "-inf", "nan".
std::string python_float_repr(double value);

}  // namespace ctxpar::chat_template
