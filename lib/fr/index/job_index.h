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

#include "fr/index/dump_time.h"
#include "fr/model/loaded_trace.h"
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
  // An entry that the watchdog retired counts as completed (Gloo records no completion event and
  // retires every finished op), unless the group shows that it cannot have completed: see
  // `retired_failed`.
  EntryState state = EntryState::kUnknown;
  // Completed only by retirement, with no completion recorded.
  bool retired_without_completion : 1 = false;
  // Retired, yet some member whose dump is present never issued it while it was older than its
  // timeout: it ended in an error (Gloo's timeout), so it is where this member waited (state is
  // then kScheduled).
  bool retired_failed : 1 = false;
};

struct GroupMember {
  int64_t rank = kUnknown;
  // Index into LoadedTrace::ranks, or -1 when this member's dump is missing or rejected.
  int32_t dump = -1;
  // The rank's dump is loaded but holds no entry of this group (dump stays -1): the rank never
  // issued anything in it that its buffer kept, as a Gloo rank that never used the default group
  // while another member waits there. It is not a rank that left no dump.
  bool dump_holds_none = false;
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
  // The ranks come from no dump but from the job: the default group ("default_pg") spans every
  // rank, while Gloo's dumps carry no usable pg_config.
  bool ranks_inferred = false;
};

struct JobIndex {
  std::vector<JobGroup> groups;  // sorted by name (numerically when numeric), then ranks
  // For each loaded dump (same order as LoadedTrace::ranks): group index per local group.
  std::vector<std::vector<uint32_t>> group_of_local;
  // For each loaded dump: the index of its oldest entry that did not finish (neither completed
  // nor retired, or retired_failed), or -1. Closing entries of coalesced groups are skipped.
  std::vector<int64_t> first_unfinished_entry;
  // When each dump was taken, against which ages are judged.
  DumpTimes dump_times;
  int64_t entries = 0;
  int64_t retired_failed_units = 0;
  // Ranks whose file exists but could not be used (rejected, or several conflicting files),
  // ascending: unlike a rank that left no file, nothing says such a rank crashed.
  std::vector<int64_t> unreadable_ranks;
  bool Unreadable(int64_t rank) const;
  // Ranks the job's logs say died (BuildJobIndex's `died`), ascending.
  std::vector<int64_t> died_ranks;
  // Ranks of the job that left no file: LoadedTrace::missing_ranks and the ranks the logs say
  // died that have none (a dead highest rank, which no Gloo dump names), ascending.
  std::vector<int64_t> ranks_without_file;
};

// `dump_time_ns` (kUnknown: estimate from the files, see dump_time.h) is the time the dumps were
// taken, used to tell a retired op that failed from one that completed. Dumps are indexed on
// `jobs` threads (0: one per core); the index is the same on any number. `died`: ranks the logs
// say died (an exception, a signal, a kill); like a rank that left no file, such a rank's death
// ends the op its peers were in, which Gloo then retires as if it had completed.
JobIndex BuildJobIndex(const LoadedTrace& trace, int64_t dump_time_ns = kUnknown, int jobs = 0,
                       const std::vector<int64_t>& died = {});

// The order in which groups are listed: numeric names numerically ("2" before "10"), then other
// names as strings.
bool GroupNameLess(const std::string& a, const std::string& b);

}  // namespace fr

#endif  // FR_INDEX_JOB_INDEX_H_
