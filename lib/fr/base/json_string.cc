#include "fr/base/json_string.h"

#include <string>
#include <string_view>

#include "fmt/format.h"
#include "fr/base/utf8.h"

namespace fr {

void AppendJsonString(std::string_view raw, std::string* out) {
  // JSON is UTF-8: whatever a file or a worker's summary put into a string, what is written is
  // valid (a reader such as Python's json fails on the first bad byte otherwise).
  std::string repaired;
  std::string_view text = raw;
  if (!IsValidUtf8(raw)) {
    repaired = ValidUtf8(raw);
    text = repaired;
  }
  *out += '"';
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          *out += ch;
        }
    }
  }
  *out += '"';
}

}  // namespace fr
