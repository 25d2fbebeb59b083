// The per-group collective table: for every process group and every collective seq that some
// member's ring buffer still holds, which members issued, started and completed it, which never
// issued it, and whose dump is missing. This is the data behind the Python package's
// `Report.collectives_df()` and a notebook's per-rank progress plot.
//
//   JobIndex index = BuildJobIndex(trace);
//   for (const CollectiveRow& row : BuildCollectiveTable(trace, index)) {
//     ... index.groups[row.group].desc, row.seq, row.op, row.completed ...
//   }
//
// A member whose buffer no longer holds the seq (it rolled out of the ring buffer) is judged from
// its progress counters (pg_status when the dump has it): issued when last_enqueued >= seq, and so
// on. Every member of a group appears in exactly one of issued / not_issued / dump_missing, and
// completed is a subset of started, which is a subset of issued.
#ifndef FR_REPORT_COLLECTIVE_TABLE_H_
#define FR_REPORT_COLLECTIVE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/index/job_index.h"
#include "fr/model/loaded_trace.h"

namespace fr {

struct CollectiveRow {
  uint32_t group = 0;  // index into JobIndex::groups
  int64_t seq = kUnknown;
  // The op as most members that hold the seq in their buffer recorded it ("all_reduce").
  std::string op;
  // Global ranks, ascending.
  std::vector<int64_t> issued;
  std::vector<int64_t> started;  // started or completed
  std::vector<int64_t> completed;
  std::vector<int64_t> not_issued;
  std::vector<int64_t> dump_missing;  // members whose dump is missing or was rejected
};

// Rows ordered by group (JobIndex order), then ascending seq. Deterministic.
std::vector<CollectiveRow> BuildCollectiveTable(const LoadedTrace& trace, const JobIndex& index);

}  // namespace fr

#endif  // FR_REPORT_COLLECTIVE_TABLE_H_
