// The parts of an entry's profiling_name, "<backend>:<op>[ <args>]": "nccl:send 0->1" is backend
// "nccl", op "send" and, for a send or recv, the group-local peer 1. Both readers of dumps (the
// normalizer and the direct pickle reader) split names here, so that they agree to the byte.
//
//   ProfilingNameParts parts = SplitProfilingName("nccl:recv 1<-0");  // op "recv", peer 0
#ifndef FR_NORMALIZE_PROFILING_NAME_H_
#define FR_NORMALIZE_PROFILING_NAME_H_

#include <cstdint>
#include <string_view>
#include <vector>

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

// A dump's profiling names, each split once: a dump repeats a few dozen names over thousands of
// entries. Both readers keep one per dump, so that they intern the parts in the same order.
class ProfilingNameCache {
 public:
  struct Parsed {
    StringId backend = 0;
    StringId op_name = 0;
    OpKind op = OpKind::kUnknown;
    int64_t peer_local = kUnknown;  // group-local peer of a send/recv
  };

  // The parts of `name`, an id of `strings`, whose backend and op are interned there (backend
  // first). Views into the table stay valid while it grows (its blocks never move).
  const Parsed& Get(StringId name, StringTable& strings) {
    if (name < parsed_.size() && done_[name]) return parsed_[name];
    ProfilingNameParts parts = SplitProfilingName(strings.view(name));
    Parsed parsed;
    parsed.backend = strings.Intern(parts.backend);
    parsed.op_name = strings.Intern(parts.op);
    parsed.op = parts.kind;
    parsed.peer_local = parts.peer_local;
    if (name >= parsed_.size()) {
      parsed_.resize(name + 1);
      done_.resize(name + 1, 0);
    }
    done_[name] = 1;
    parsed_[name] = parsed;
    return parsed_[name];
  }

 private:
  std::vector<Parsed> parsed_;
  std::vector<uint8_t> done_;
};

}  // namespace fr

#endif  // FR_NORMALIZE_PROFILING_NAME_H_
