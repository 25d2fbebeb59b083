// When each dump was taken: the clock against which an op's age is judged (an op younger than its
// timeout at dump time is in flight, not stuck). No dump version records the time it was written,
// so the evidence is, in order of trust:
//   1. the time the user gives (--dump-time);
//   2. the file's modification time, unless it is older than the dump's own newest record
//      (copies through object stores, archives or `cp` without -p lose it; an mtime of 0 is
//      common);
//   3. nothing: the dump time is unknown, and pending ops are judged stuck (dumps are normally
//      written on a timeout), with the verdict's confidence lowered.
// The dump's newest record (time_created_ns, time_discovered_*) is a lower bound on its time in
// every case, and is what rejects an impossible file time.
//
//   DumpTimes times = EstimateDumpTimes(trace, /*option_ns=*/kUnknown);
//   if (times.per_dump[d] == kUnknown) { ... age unknown ... }
#ifndef FR_INDEX_DUMP_TIME_H_
#define FR_INDEX_DUMP_TIME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/base/confidence.h"
#include "fr/model/loaded_trace.h"

namespace fr {

struct DumpTimes {
  // Per loaded dump (LoadedTrace::ranks order): ns since the epoch, or kUnknown.
  std::vector<int64_t> per_dump;
  // The newest record in each dump: a lower bound on when it was taken; kUnknown when empty.
  std::vector<int64_t> newest_record;
  // Per dump, the job's own rhythm (see RhythmOf): how long a pending op may wait before the
  // wait is far beyond anything the rank's recorded history shows, or kUnknown when it records
  // too few ops to tell. A pending op older than this is a hang in progress even when it is
  // younger than its timeout.
  std::vector<int64_t> stall_after_ns;
  // ... and the median gap between its recorded ops (ns), for the evidence; kUnknown likewise.
  std::vector<int64_t> median_gap_ns;
  // Some rank had stopped issuing ops long before its dump (its newest op finished, and then
  // nothing for longer than `stall_after_ns`): stuck outside communication. Only then is a wait
  // beyond the rhythm a hang in progress; dumps written one after another while a job runs
  // leave early-dumping ranks' peers waiting too, on ranks that were busy until they dumped.
  bool some_rank_went_idle = false;
  // The latest accepted dump time over the job (what the report shows), or kUnknown.
  int64_t job_ns = kUnknown;
  // "option", "file modification time", or "unknown", with the reason when a source was refused.
  std::string source;
  // kHigh (option), kMedium (file times), kLow (unknown, or some refused or missing).
  Confidence confidence = Confidence::kLow;
  int64_t file_times_rejected = 0;  // files whose mtime predates their own records
};

// Never fails. `option_ns` (kUnknown when not given) overrides every file.
// `jobs`: threads for the pass over every entry (0: one per core).
DumpTimes EstimateDumpTimes(const LoadedTrace& trace, int64_t option_ns, int jobs = 0);

}  // namespace fr

#endif  // FR_INDEX_DUMP_TIME_H_
