// One flight-recorder entry, normalized: the fields every dump version records (or kUnknown where
// a version did not), with strings, shapes, dtypes and stacks as ids into its RankDump's tables.
//
//   const Entry entry = dump.entries[i];
//   if (!EntryFinished(entry)) fmt::print("{} is pending\n", dump.strings.view(entry.op_name));
//
// RankDump::entries holds them (entry_store.h); this header is the value type alone.
#ifndef FR_MODEL_ENTRY_H_
#define FR_MODEL_ENTRY_H_

#include <cstdint>
#include <limits>
#include <string_view>

#include "fr/model/op_kind.h"
#include "fr/model/string_table.h"

namespace fr {

inline constexpr int64_t kUnknown = -1;  // for ids, seqs and times that a dump did not record

enum class EntryState : uint8_t { kScheduled, kStarted, kCompleted, kUnknown };
std::string_view EntryStateName(EntryState state);  // "scheduled", "started", ...

struct Frame {
  StringId name = 0;
  StringId filename = 0;
  int64_t line = 0;
};

// A list of tensor shapes ([[3, 4], []]) stored once per distinct value.
using ShapeListId = uint32_t;
// A list of dtype names (["Float", "BFloat16"]) stored once per distinct value.
using DtypeListId = uint32_t;
// A stack (frames innermost first) stored once per distinct stack.
using StackId = uint32_t;
inline constexpr StackId kNoStack = std::numeric_limits<StackId>::max();

struct Entry {
  int64_t record_id = kUnknown;
  int64_t pg_id = kUnknown;              // process-local group uid
  int64_t collective_seq_id = kUnknown;  // 1.x seq_id
  int64_t p2p_seq_id = kUnknown;
  int64_t op_id = kUnknown;
  int64_t time_created_ns = kUnknown;
  int64_t time_discovered_started_ns = kUnknown;
  int64_t time_discovered_completed_ns = kUnknown;
  int64_t timeout_ms = kUnknown;
  double duration_ms = std::numeric_limits<double>::quiet_NaN();  // NaN: not recorded
  // Global rank of the other side of a send/recv, mapped through the group's ranks; kUnknown for
  // collectives or when the group's ranks are unknown.
  int64_t peer_rank = kUnknown;
  uint32_t group = 0;           // index into RankDump::groups
  StringId profiling_name = 0;  // verbatim, e.g. "nccl:send 0->1"
  StringId backend = 0;         // "nccl", "gloo", ...
  StringId op_name = 0;         // "all_reduce", "_all_gather_base", "send", ...
  StringId thread_name = 0;
  StringId thread_id = 0;
  ShapeListId input_sizes = 0;
  ShapeListId output_sizes = 0;
  DtypeListId input_dtypes = 0;
  DtypeListId output_dtypes = 0;
  StackId stack = kNoStack;
  OpKind op = OpKind::kUnknown;
  EntryState state = EntryState::kUnknown;
  bool retired = false;
  bool is_p2p = false;
  // State and retirement copied from the entry that closed this op's coalesced group or p2p
  // batch: PyTorch records no events for the members themselves.
  bool state_from_batch = false;
};

// Finished: completed, or retired by the watchdog. Retirement also ends ops that failed (Gloo
// retires an op that timed out), which only the group as a whole can tell (see the index).
inline bool EntryFinished(const Entry& entry) {
  return entry.state == EntryState::kCompleted || entry.retired;
}

}  // namespace fr

#endif  // FR_MODEL_ENTRY_H_
