// File paths come from the filesystem as bytes, while JSON and protobuf strings must be UTF-8.
//
//   report.set_path(ValidUtf8(dump.path));  // "rank_2\xff" -> "rank_2\uFFFD"
#ifndef FR_BASE_UTF8_H_
#define FR_BASE_UTF8_H_

#include <string>
#include <string_view>

namespace fr {

// `text` with each byte that does not belong to a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, surrogates or code points above U+10FFFF) replaced by U+FFFD. Valid text comes
// back unchanged.
std::string ValidUtf8(std::string_view text);

// Whether `text` is well-formed UTF-8 as ValidUtf8 defines it (ValidUtf8 would return it as is).
bool IsValidUtf8(std::string_view text);

// `text` made safe to print on a terminal as one line: ValidUtf8, then every control character
// (C0 including newline and tab, DEL, C1) and every bidirectional override or isolate
// (U+202A..U+202E, U+2066..U+2069) written as an escape ("\x1b", "\n", "\u202e"). A hostile
// dump's frame names or group descs can then neither clear the screen nor print a line of
// their own (a fake verdict).
std::string TerminalSafe(std::string_view text);

}  // namespace fr

#endif  // FR_BASE_UTF8_H_
