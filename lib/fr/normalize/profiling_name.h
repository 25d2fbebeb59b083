// The parts of an entry's profiling_name, "<backend>:<op>[ <args>]": "nccl:send 0->1" is backend
// "nccl", op "send" and, for a send or recv, the group-local peer 1. Both readers of dumps (the
// normalizer and the direct pickle reader) split names here, so that they agree to the byte.
//
//   ProfilingNameParts parts = SplitProfilingName("nccl:recv 1<-0");  // op "recv", peer 0
#ifndef FR_NORMALIZE_PROFILING_NAME_H_
#define FR_NORMALIZE_PROFILING_NAME_H_

#include <cstdint>
#include <string_view>

#include "fr/model/op_kind.h"
#include "fr/model/rank_dump.h"

namespace fr {

struct ProfilingNameParts {
  std::string_view backend;  // before the first ':'; "" when there is none
  std::string_view op;       // after it, up to the first space
  OpKind kind = OpKind::kUnknown;
  // send "src->dst", recv "dst<-src": the number after the arrow; kUnknown when not a send or
  // recv, or when no number follows.
  int64_t peer_local = kUnknown;
};

// Views into `text`.
ProfilingNameParts SplitProfilingName(std::string_view text);

}  // namespace fr

#endif  // FR_NORMALIZE_PROFILING_NAME_H_
