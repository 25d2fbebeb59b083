#include "fr/normalize/profiling_name.h"

#include <charconv>

namespace fr {

ProfilingNameParts SplitProfilingName(std::string_view text) {
  ProfilingNameParts parts;
  std::string_view rest = text;
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    parts.backend = text.substr(0, colon);
    rest = text.substr(colon + 1);
  }
  parts.op = rest;
  std::string_view args;
  if (size_t space = rest.find(' '); space != std::string_view::npos) {
    parts.op = rest.substr(0, space);
    args = rest.substr(space + 1);
  }
  parts.kind = ParseOpKind(parts.op);
  if (IsPointToPoint(parts.kind)) {
    std::string_view arrow = parts.kind == OpKind::kSend ? "->" : "<-";
    if (size_t at = args.find(arrow); at != std::string_view::npos) {
      std::string_view number = args.substr(at + 2);
      int64_t peer = 0;
      auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), peer);
      if (error == std::errc() && end == number.data() + number.size() && !number.empty()) {
        parts.peer_local = peer;
      }
    }
  }
  return parts;
}

}  // namespace fr
