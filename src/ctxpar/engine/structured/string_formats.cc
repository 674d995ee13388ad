#include "ctxpar/engine/structured/string_formats.h"

#include <array>
#include <utility>

namespace ctxpar::structured {
namespace {

// Pieces shared by several formats (RFC 3339 times, RFC 3986 URIs).
#define CTXPAR_DATE "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
#define CTXPAR_TIME                                                                     \
  "([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):" \
  "[0-5][0-9])"
#define CTXPAR_DURATION_TIME "T([0-9]+S|[0-9]+M([0-9]+S)?|[0-9]+H([0-9]+M([0-9]+S)?)?)"
#define CTXPAR_PCT "%[0-9A-Fa-f]{2}"
#define CTXPAR_PCHAR "([a-zA-Z0-9_.~!$&'()*+,;=:@-]|" CTXPAR_PCT ")"
#define CTXPAR_AUTHORITY                                                                       \
  "//(([a-zA-Z0-9_.~!$&'()*+,;=:-]|" CTXPAR_PCT ")*@)?([a-zA-Z0-9_.~!$&'()*+,;=-]|" CTXPAR_PCT \
  ")*(:[0-9]*)?(/" CTXPAR_PCHAR "*)*"
#define CTXPAR_QUERY_FRAGMENT                       \
  "(\\?([a-zA-Z0-9_.~!$&'()*+,;=:@/?-]|" CTXPAR_PCT \
  ")*)?(#([a-zA-Z0-9_.~!$&'()*+,;=:@/?-]|" CTXPAR_PCT ")*)?"
#define CTXPAR_OCTET "(25[0-5]|(2[0-4]|1?[0-9])?[0-9])"
#define CTXPAR_H "[0-9a-fA-F]{1,4}"
#define CTXPAR_POINTER "(/([^/~]|~[01])*)*"
#define CTXPAR_VARIABLE "([a-zA-Z0-9_]|" CTXPAR_PCT ")(\\.?([a-zA-Z0-9_]|" CTXPAR_PCT "))*"
#define CTXPAR_MODIFIER "(:[1-9][0-9]{0,3}|\\*)?"

constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kFormats{{
    {"date", CTXPAR_DATE},
    {"time", CTXPAR_TIME},
    {"date-time", CTXPAR_DATE "T" CTXPAR_TIME},
    {"duration", "P(([0-9]+D|[0-9]+M([0-9]+D)?|[0-9]+Y([0-9]+M([0-9]+D)?)?)(" CTXPAR_DURATION_TIME
                 ")?|" CTXPAR_DURATION_TIME "|[0-9]+W)"},
    {"email",
     "([a-zA-Z0-9_!#$%&'*+/=?^`{|}~-]+(\\.[a-zA-Z0-9_!#$%&'*+/=?^`{|}~-]+)*|\"([ !#-\\[\\]-~]|"
     "\\\\[ -~])*\")@[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9][-A-Za-z0-9]*"
     "[A-Za-z0-9])*"},
    {"hostname", "[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*"},
    {"ipv4", "(" CTXPAR_OCTET "\\.){3}" CTXPAR_OCTET},
    {"ipv6",
     "(" CTXPAR_H ":){7}" CTXPAR_H "|(" CTXPAR_H ":){1,7}:|(" CTXPAR_H ":){1,6}:" CTXPAR_H
     "|(" CTXPAR_H ":){1,5}(:" CTXPAR_H "){1,2}|(" CTXPAR_H ":){1,4}(:" CTXPAR_H "){1,3}|(" CTXPAR_H
     ":){1,3}(:" CTXPAR_H "){1,4}|(" CTXPAR_H ":){1,2}(:" CTXPAR_H "){1,5}|" CTXPAR_H ":(:" CTXPAR_H
     "){1,6}|:((:" CTXPAR_H "){1,7}|:)|::(ffff(:0{1,4})?:)?(" CTXPAR_OCTET "\\.){3}" CTXPAR_OCTET
     "|(" CTXPAR_H ":){1,4}:(" CTXPAR_OCTET "\\.){3}" CTXPAR_OCTET},
    {"uuid", "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"},
    {"uri", "[a-zA-Z][a-zA-Z+.-]*:(" CTXPAR_AUTHORITY "|/?(" CTXPAR_PCHAR "+(/" CTXPAR_PCHAR
            "*)*)?)" CTXPAR_QUERY_FRAGMENT},
    {"uri-reference", "(" CTXPAR_AUTHORITY "|/(" CTXPAR_PCHAR "+(/" CTXPAR_PCHAR
                      "*)*)?|([a-zA-Z0-9_.~!$&'()*+,;=@-]|" CTXPAR_PCT ")+(/" CTXPAR_PCHAR
                      "*)*)?" CTXPAR_QUERY_FRAGMENT},
    {"uri-template",
     "([!#$&(-;=?-\\[\\]_a-z~]|" CTXPAR_PCT "|\\{[+#./;?&=,!@|]?" CTXPAR_VARIABLE CTXPAR_MODIFIER
     "(," CTXPAR_VARIABLE CTXPAR_MODIFIER ")*\\})*"},
    {"json-pointer", CTXPAR_POINTER},
    {"relative-json-pointer", "(0|[1-9][0-9]*)(#|" CTXPAR_POINTER ")"},
}};

#undef CTXPAR_DATE
#undef CTXPAR_TIME
#undef CTXPAR_DURATION_TIME
#undef CTXPAR_PCT
#undef CTXPAR_PCHAR
#undef CTXPAR_AUTHORITY
#undef CTXPAR_QUERY_FRAGMENT
#undef CTXPAR_OCTET
#undef CTXPAR_H
#undef CTXPAR_POINTER
#undef CTXPAR_VARIABLE
#undef CTXPAR_MODIFIER

}  // namespace

std::optional<std::string_view> format_regex(std::string_view format) {
  for (const auto& [name, regex] : kFormats) {
    if (name == format) return regex;
  }
  return std::nullopt;
}

}  // namespace ctxpar::structured
