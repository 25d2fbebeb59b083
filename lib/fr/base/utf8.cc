#include "fr/base/utf8.h"

#include <cstdint>

#include "fmt/format.h"

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

bool IsValidUtf8(std::string_view text) {
  while (!text.empty()) {
    if (static_cast<uint8_t>(text[0]) < 0x80) {  // ASCII, most of any report
      text.remove_prefix(1);
      continue;
    }
    size_t length = SequenceLength(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

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

std::string TerminalSafe(std::string_view text) {
  std::string valid = ValidUtf8(text);
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(valid[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < valid.size() &&
               static_cast<unsigned char>(valid[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(valid[i + 1]) <= 0x9f) {
      // C1 controls (U+0080..U+009F): CSI (U+009B) starts escape sequences like ESC [ does.
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(valid[i + 1]));
      ++i;
    } else if (c == 0xe2 && i + 2 < valid.size() &&
               ((static_cast<unsigned char>(valid[i + 1]) == 0x80 &&
                 static_cast<unsigned char>(valid[i + 2]) >= 0xaa &&
                 static_cast<unsigned char>(valid[i + 2]) <= 0xae) ||
                (static_cast<unsigned char>(valid[i + 1]) == 0x81 &&
                 static_cast<unsigned char>(valid[i + 2]) >= 0xa6 &&
                 static_cast<unsigned char>(valid[i + 2]) <= 0xa9))) {
      // Bidirectional overrides and isolates reorder what the terminal shows.
      int code = ((c & 0x0f) << 12) | ((static_cast<unsigned char>(valid[i + 1]) & 0x3f) << 6) |
                 (static_cast<unsigned char>(valid[i + 2]) & 0x3f);
      out += fmt::format("\\u{:04x}", code);
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace fr
