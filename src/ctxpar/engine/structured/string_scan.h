// The bytes of a JSON string after its opening quote: UTF-8 validation, escapes and the code
// point count (Python's len(): an escaped surrogate pair is one character). Used for string
// values and object keys.
#pragma once

#include <cstdint>

#include "ctxpar/engine/structured/json_automaton.h"

namespace ctxpar::structured {

enum class ScanResult : uint8_t {
  kReject,  // the byte cannot come here
  kMore,    // accepted inside a character (a UTF-8 sequence or an escape)
  kChar,    // accepted; a character ends with it (counts one)
  kPair,    // accepted; a low surrogate escape ends that pairs with the previous one (counts 0)
  kClose,   // the closing quote
};

// `full`: the string already has its maximum number of characters, so only the closing quote
// or the low half of an escaped surrogate pair may come.
ScanResult scan_string_byte(StringScan& s, uint8_t b, bool full);

}  // namespace ctxpar::structured
