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

#include "fr/model/entry.h"
#include "fr/model/entry_store.h"
#include "fr/model/op_kind.h"
#include "fr/model/shared_ranks.h"
#include "fr/model/string_table.h"

namespace fr {

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
  // Oldest first, as in the ring buffer. A vector while the dump is built; the loader packs it
  // (entry_store.h) when it keeps the dump.
  EntryStore entries;

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
}  // namespace fr

#endif  // FR_MODEL_RANK_DUMP_H_
