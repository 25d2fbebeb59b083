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

}  // namespace fr

#endif  // FR_BASE_UTF8_H_
