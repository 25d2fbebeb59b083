// Every string of a report message rewritten in place: the report quotes log lines, frame names,
// group descs and paths from files anyone could have written, and each output has its rule
// (ValidUtf8 where readers require UTF-8, TerminalSafe for a terminal).
//
//   RewriteStrings(report.mutable_verdict(), ValidUtf8);
#ifndef FR_VERDICT_MESSAGE_STRINGS_H_
#define FR_VERDICT_MESSAGE_STRINGS_H_

#include <string>
#include <string_view>

#include "google/protobuf/message.h"

namespace fr {

// Each string field of `message` and of its submessages (repeated ones and map entries too)
// replaced by `rewrite` of it.
void RewriteStrings(google::protobuf::Message* message, std::string (*rewrite)(std::string_view));

}  // namespace fr

#endif  // FR_VERDICT_MESSAGE_STRINGS_H_
