// A JSON string literal: quoted, escaped, and valid UTF-8 whatever the bytes were (a dump's frame
// names and group descs, a log's lines, a path), so that every reader accepts the document.
//
//   AppendJsonString("rank \"2\"\n", &out);   // out += "\"rank \\\"2\\\"\\n\""
#ifndef FR_BASE_JSON_STRING_H_
#define FR_BASE_JSON_STRING_H_

#include <string>
#include <string_view>

namespace fr {

// Appends `text` as a JSON string: bytes that are not well-formed UTF-8 become U+FFFD
// (ValidUtf8), quotes, backslashes and control characters are escaped.
void AppendJsonString(std::string_view text, std::string* out);

}  // namespace fr

#endif  // FR_BASE_JSON_STRING_H_
