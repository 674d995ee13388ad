#include "ctxpar/engine/structured/string_scan.h"

namespace ctxpar::structured {
namespace {

enum State : uint8_t { kNormal = 0, kEscape = 1, kHex = 2, kUtf8 = 3 };

int hex_value(uint8_t b) {
  if (b >= '0' && b <= '9') return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}

// A UTF-8 lead byte: how many continuation bytes follow and the range of the first one (the
// narrow ranges exclude overlong forms, UTF-16 surrogates and code points above U+10FFFF).
bool lead(StringScan& s, uint8_t b) {
  s.lo = 0x80;
  s.hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    s.need = 1;
  } else if (b == 0xE0) {
    s.need = 2;
    s.lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    s.need = 2;
  } else if (b == 0xED) {
    s.need = 2;
    s.hi = 0x9F;
  } else if (b == 0xF0) {
    s.need = 3;
    s.lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    s.need = 3;
  } else if (b == 0xF4) {
    s.need = 3;
    s.hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

}  // namespace

ScanResult scan_string_byte(StringScan& s, uint8_t b, bool full) {
  switch (s.state) {
    case kNormal:
      if (b == '"') return ScanResult::kClose;
      if (b == '\\') {
        if (full && !s.high) return ScanResult::kReject;
        s.state = kEscape;
        return ScanResult::kMore;
      }
      if (b < 0x20 || full) return ScanResult::kReject;
      if (b < 0x80) {
        s.high = false;
        return ScanResult::kChar;
      }
      if (!lead(s, b)) return ScanResult::kReject;
      s.state = kUtf8;
      return ScanResult::kMore;
    case kUtf8:
      if (b < s.lo || b > s.hi) return ScanResult::kReject;
      s.lo = 0x80;
      s.hi = 0xBF;
      if (--s.need > 0) return ScanResult::kMore;
      s.state = kNormal;
      s.high = false;
      return ScanResult::kChar;
    case kEscape:
      if (b == 'u') {
        s.state = kHex;
        s.hex_left = 4;
        s.hex = 0;
        return ScanResult::kMore;
      }
      if (full) return ScanResult::kReject;  // only a low surrogate fits
      if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' ||
          b == 't') {
        s.state = kNormal;
        s.high = false;
        return ScanResult::kChar;
      }
      return ScanResult::kReject;
    case kHex: {
      const int v = hex_value(b);
      if (v < 0) return ScanResult::kReject;
      // Full: the escape must be a low surrogate, DC00-DFFF.
      if (full && ((s.hex_left == 4 && v != 0xD) || (s.hex_left == 3 && v < 0xC))) {
        return ScanResult::kReject;
      }
      s.hex = static_cast<uint16_t>(s.hex * 16 + v);
      if (--s.hex_left > 0) return ScanResult::kMore;
      s.state = kNormal;
      const bool pair = s.high && s.hex >= 0xDC00 && s.hex <= 0xDFFF;
      s.high = s.hex >= 0xD800 && s.hex <= 0xDBFF;
      return pair ? ScanResult::kPair : ScanResult::kChar;
    }
    default:
      return ScanResult::kReject;
  }
}

}  // namespace ctxpar::structured
