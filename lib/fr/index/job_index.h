// The cross-rank index: every process group of the job (identity = name + rank set) with, per
// member, that member's collectives in the group as seq-ordered units and its p2p ops, plus how
// far it got (from its entries and from pg_status, which survives ring-buffer wrap).
//
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, LoadTrace(dir));
//   JobIndex index = BuildJobIndex(trace);
//   for (const JobGroup& group : index.groups) {
//     for (const GroupMember& member : group.members) { ... member.units ... }
//   }
//
// Built in one pass over all entries; everything later (matching, the wait-for graph) reads these
// compact per-group timelines instead of rescanning ranks.
#ifndef FR_INDEX_JOB_INDEX_H_
#define FR_INDEX_JOB_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/load/load.h"
#include "fr/model/rank_dump.h"

namespace fr {

// One collective as a rank issued it: a single entry, or the ops of a coalesced group sharing one
// collective_seq_id (>= 2.7 records each op, then an end entry).
struct CollectiveUnit {
  int64_t seq = kUnknown;
  uint32_t first_entry = 0;  // index into the member's RankDump::entries (its time, stack...)
  // Consecutive entries of this rank and group with this seq (saturates; coalesced groups hold a
  // few dozen ops). 16 bytes in all: a 4096-rank job has millions of units.
  uint16_t entry_count = 0;
  // The least advanced state among the unit's entries: a coalesced group is done when all are.
  EntryState state = EntryState::kUnknown;
};

struct GroupMember {
  int64_t rank = kUnknown;
  // Index into LoadedTrace::ranks, or -1 when this member's dump is missing or rejected.
  int32_t dump = -1;
  uint32_t local_group = 0;           // index into that dump's groups
  std::vector<CollectiveUnit> units;  // ascending seq
  std::vector<uint32_t> p2p_entries;  // send/recv entry indices, oldest first
  // Progress in this group, combining the ring buffer with pg_status; kUnknown when no evidence.
  int64_t last_enqueued = kUnknown;
  int64_t last_started = kUnknown;
  int64_t last_completed = kUnknown;
  int64_t first_seq_in_buffer = kUnknown;
};

struct JobGroup {
  std::string name;
  std::string desc;
  std::vector<int64_t> ranks;        // global ranks in group-rank order
  bool ranks_known = false;          // false: members are just the dumps that name the group
  std::vector<GroupMember> members;  // one per rank, in `ranks` order
};

struct JobIndex {
  std::vector<JobGroup> groups;  // sorted by name (numerically when numeric), then ranks
  // For each loaded dump (same order as LoadedTrace::ranks): group index per local group.
  std::vector<std::vector<uint32_t>> group_of_local;
  int64_t entries = 0;
};

JobIndex BuildJobIndex(const LoadedTrace& trace);

// The order in which groups are listed: numeric names numerically ("2" before "10"), then other
// names as strings.
bool GroupNameLess(const std::string& a, const std::string& b);

}  // namespace fr

#endif  // FR_INDEX_JOB_INDEX_H_
