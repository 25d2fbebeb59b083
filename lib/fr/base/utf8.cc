#include "fr/base/utf8.h"

#include <cstdint>

namespace fr {
namespace {

// Length of the well-formed UTF-8 sequence at the start of `text`, or 0.
size_t SequenceLength(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  auto continuation = [&](size_t i) { return i < text.size() && (byte(i) & 0xc0) == 0x80; };
  uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead < 0xc2) return 0;  // a continuation byte, or an overlong 2-byte form
  if (lead < 0xe0) return continuation(1) ? 2 : 0;
  if (lead < 0xf0) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xe0 && byte(1) < 0xa0) return 0;   // overlong
    if (lead == 0xed && byte(1) >= 0xa0) return 0;  // surrogates
    return 3;
  }
  if (lead < 0xf5) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xf0 && byte(1) < 0x90) return 0;   // overlong
    if (lead == 0xf4 && byte(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t length = SequenceLength(text);
    if (length == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      length = 1;
    } else {
      out.append(text.data(), length);
    }
    text.remove_prefix(length);
  }
  return out;
}

}  // namespace fr
