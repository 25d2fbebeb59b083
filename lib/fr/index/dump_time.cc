#include "fr/index/dump_time.h"

#include <algorithm>

#include "fmt/format.h"
#include "fr/base/parallel_for.h"

namespace fr {
namespace {

// A file time may trail the dump's own clock by a little when the file lives on another host's
// file system (NFS), whose clock is not the writer's.
constexpr int64_t kFileClockSlackNs = 5'000'000'000;

int64_t NewestRecord(const RankDump& dump) {
  int64_t newest = kUnknown;
  for (const Entry& entry : dump.entries) {
    newest = std::max({newest, entry.time_created_ns, entry.time_discovered_started_ns,
                       entry.time_discovered_completed_ns});
  }
  return newest;
}

}  // namespace

DumpTimes EstimateDumpTimes(const LoadedTrace& trace, int64_t option_ns, int jobs) {
  DumpTimes times;
  times.per_dump.assign(trace.ranks.size(), kUnknown);
  times.newest_record.resize(trace.ranks.size());
  // A pass over every entry of the job: each dump's on its own core.
  ParallelFor(
      trace.ranks.size(), jobs,
      [&](size_t d) { times.newest_record[d] = NewestRecord(trace.ranks[d]); },
      /*cancel=*/nullptr, /*min_items_per_thread=*/64);
  if (option_ns != kUnknown) {
    std::fill(times.per_dump.begin(), times.per_dump.end(), option_ns);
    times.job_ns = option_ns;
    times.source = "option";
    times.confidence = "high";
    return times;
  }
  int64_t accepted = 0, without_time = 0;
  for (size_t d = 0; d < trace.ranks.size(); ++d) {
    int64_t mtime = trace.ranks[d].file_mtime_ns;
    if (mtime == kUnknown || mtime <= 0) {
      if (mtime <= 0 && mtime != kUnknown) {
        ++times.file_times_rejected;
      } else {
        ++without_time;
      }
      continue;
    }
    int64_t newest = times.newest_record[d];
    if (newest != kUnknown && mtime + kFileClockSlackNs < newest) {
      ++times.file_times_rejected;
      continue;
    }
    times.per_dump[d] = mtime;
    times.job_ns = std::max(times.job_ns, mtime);
    ++accepted;
  }
  if (accepted == 0) {
    times.source = times.file_times_rejected > 0
                       ? fmt::format(
                             "unknown: the modification times of {} file(s) predate the "
                             "dumps' own records, so pending ops are judged stuck",
                             times.file_times_rejected)
                       : "unknown: no file times, so pending ops are judged stuck";
    times.confidence = "low";
    return times;
  }
  if (times.file_times_rejected > 0) {
    // A dump whose own file time was refused is judged by the job's latest accepted time: the
    // dumps of one job are written within seconds of each other.
    for (int64_t& t : times.per_dump) {
      if (t == kUnknown) t = times.job_ns;
    }
    times.source =
        fmt::format("file modification time ({} file(s) refused: older than their own records)",
                    times.file_times_rejected);
    times.confidence = "low";
  } else {
    times.source = "file modification time";
    times.confidence = without_time > 0 ? "low" : "medium";
  }
  return times;
}

}  // namespace fr
