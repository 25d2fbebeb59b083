// One rank's flight-recorder dump, normalized: the same model for every dump version (pre-1.0 bare
// lists through 2.10 and newer), pickle or JSON. Everything after normalization (indexing,
// matching, reports) works on this compact form, never on the decoded object graph.
//
//   const RankDump& dump = ...;
//   for (const Entry& e : dump.entries) {
//     const ProcessGroup& group = dump.groups[e.group];
//     fmt::print("{} #{} {}\n", dump.strings.view(group.name), e.collective_seq_id,
//                OpKindName(e.op));
//   }
//
// Strings are interned per dump (StringTable); tensor shapes, dtype lists, frames and stacks are
// each stored once per distinct value and referenced by index.
#ifndef FR_MODEL_RANK_DUMP_H_
#define FR_MODEL_RANK_DUMP_H_

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fr/model/op_kind.h"
#include "fr/model/prefaulted_allocator.h"
#include "fr/model/shared_ranks.h"
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

struct PgStatus {
  int64_t last_enqueued_collective = kUnknown;
  int64_t last_started_collective = kUnknown;
  int64_t last_completed_collective = kUnknown;
};

// A process group as this rank knows it. Identity across ranks is name plus rank set: groups made
// by split_group can share a name.
struct ProcessGroup {
  StringId name = 0;
  StringId desc = 0;
  SharedRanks ranks;  // global ranks in group-rank order; empty when unknown
  bool ranks_known = false;
  int64_t pg_id = kUnknown;  // this rank's uid for the group, from its entries
  bool has_status = false;
  PgStatus status;
  // This dump's entries in the group, counted while normalizing (summaries need it, and walking
  // every entry of a large trace again costs a pass over all of its memory).
  int64_t entry_count = 0;
};

struct RankDump {
  int64_t rank = kUnknown;  // global rank, from discovery
  std::string path;         // where it was read from
  // The host its path names (discovery's HostOfDumpPath), "" when it names none.
  std::string host;
  // When the file was last written (ns since the epoch), the best evidence of when the dump was
  // taken; kUnknown for in-memory dumps.
  int64_t file_mtime_ns = kUnknown;
  std::string version;  // "2.10"; "" for the 2023 bare-list format
  int version_major = 0;
  int version_minor = 0;
  std::string comm_lib_version;  // nccl_version / comm_lib_version; "" when absent
  bool has_entries_key = true;   // false: "entries" absent (collectives excluded from the dump)
  bool has_stacks = false;       // at least one entry carried frames

  StringTable strings;
  std::vector<ProcessGroup> groups;
  // Oldest first, as in the ring buffer. Written in full once, then kept: see PrefaultedAllocator.
  std::vector<Entry, PrefaultedAllocator<Entry>> entries;

  // Interned values referenced by entries.
  std::vector<int64_t> shape_dims;  // shape list i: see ShapeList()
  std::vector<uint32_t> shape_list_offsets;
  std::vector<StringId> dtype_names;
  std::vector<uint32_t> dtype_list_offsets;
  std::vector<Frame> frames;
  std::vector<uint32_t> stack_frames;  // frame indices
  std::vector<uint32_t> stack_offsets;

  // Statuses keyed by a pg_id that no entry or group of this dump names.
  std::vector<std::pair<int64_t, PgStatus>> unmatched_pg_status;
  // Raw per-communicator key/value state (nccl_comm_state and vendor forks), flattened as
  // "comm_hash.key" -> value, in file order.
  std::vector<std::pair<std::string, std::string>> comm_state;
  // Counters of oddities that did not stop decoding, e.g. "unknown_top_level_key:foo" -> 1.
  std::vector<std::pair<std::string, int64_t>> oddities;

  // Shape list `id` as a flat list: [n_shapes, rank_0, dims_0..., rank_1, dims_1...].
  std::span<const int64_t> ShapeList(ShapeListId id) const;
  std::span<const StringId> DtypeList(DtypeListId id) const;
  std::span<const uint32_t> Stack(StackId id) const;
  // Decoded shapes of a shape list, e.g. {{3, 4}, {}}.
  std::vector<std::vector<int64_t>> Shapes(ShapeListId id) const;
  int64_t OddityCount(std::string_view name) const;
};

// Compares "major.minor" versions numerically ("2.10" > "2.9").
bool VersionAtLeast(const RankDump& dump, int major, int minor);

}  // namespace fr

#endif  // FR_MODEL_RANK_DUMP_H_
