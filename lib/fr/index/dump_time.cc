#include "fr/index/dump_time.h"

#include <algorithm>
#include <cstdint>
#include <vector>

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

// A wait is a hang in progress when it is longer than a second, a hundred of the rank's median
// gaps between recorded ops, and ten of its longest gap (the job's own pauses: a slow step, an
// evaluation, a checkpoint). Fewer records than this tell no rhythm.
constexpr size_t kMinRecordsForRhythm = 8;
constexpr int64_t kMinStallNs = 1'000'000'000;
constexpr int64_t kMedianGaps = 100;
constexpr int64_t kLongestGaps = 10;

struct Rhythm {
  int64_t stall_after_ns = kUnknown;
  int64_t median_gap_ns = kUnknown;
};

// Gaps between consecutive records in record order (the order the rank enqueued them; a clock
// stepping back counts as no gap), without sorting: one pass, one reused buffer per thread.
Rhythm RhythmOf(const RankDump& dump) {
  thread_local std::vector<int64_t> gaps;
  gaps.clear();
  int64_t previous = kUnknown;
  for (const Entry& entry : dump.entries) {
    int64_t t = entry.time_created_ns;
    if (t == kUnknown) continue;
    if (previous != kUnknown) {
      // Saturating: an absurd clock in a hostile dump must not overflow.
      bool overflows = previous < 0 && t > INT64_MAX + previous;
      gaps.push_back(t <= previous ? 0 : overflows ? INT64_MAX : t - previous);
    }
    previous = t;
  }
  if (gaps.size() + 1 < kMinRecordsForRhythm) return {};
  int64_t longest = *std::max_element(gaps.begin(), gaps.end());
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  int64_t median = gaps[gaps.size() / 2];
  auto times = [](int64_t gap, int64_t factor) {
    return gap > INT64_MAX / factor ? INT64_MAX : gap * factor;
  };
  return {std::max({kMinStallNs, times(median, kMedianGaps), times(longest, kLongestGaps)}),
          median};
}

DumpTimes EstimateDumpTimesOnly(const LoadedTrace& trace, int64_t option_ns, int jobs);

// Whether some rank's newest op had finished and it then issued nothing for longer than its
// rhythm allows, before its dump was taken.
bool SomeRankWentIdle(const LoadedTrace& trace, const DumpTimes& times) {
  for (size_t d = 0; d < trace.ranks.size(); ++d) {
    const EntryStore& entries = trace.ranks[d].entries;
    if (entries.empty() || !EntryFinished(entries.back())) continue;
    int64_t dump = times.per_dump[d], newest = times.newest_record[d];
    if (dump == kUnknown || newest == kUnknown || times.stall_after_ns[d] == kUnknown) continue;
    if (dump - newest >= times.stall_after_ns[d]) return true;
  }
  return false;
}

}  // namespace

DumpTimes EstimateDumpTimes(const LoadedTrace& trace, int64_t option_ns, int jobs) {
  DumpTimes times = EstimateDumpTimesOnly(trace, option_ns, jobs);
  times.some_rank_went_idle = SomeRankWentIdle(trace, times);
  return times;
}

namespace {

// The dump times alone; EstimateDumpTimes adds what they show about the job's progress.
DumpTimes EstimateDumpTimesOnly(const LoadedTrace& trace, int64_t option_ns, int jobs) {
  DumpTimes times;
  times.per_dump.assign(trace.ranks.size(), kUnknown);
  times.newest_record.resize(trace.ranks.size());
  times.stall_after_ns.resize(trace.ranks.size());
  times.median_gap_ns.resize(trace.ranks.size());
  // A pass over every entry of the job: each dump's on its own core.
  ParallelFor(
      trace.ranks.size(), jobs,
      [&](size_t d) {
        times.newest_record[d] = NewestRecord(trace.ranks[d]);
        Rhythm rhythm = RhythmOf(trace.ranks[d]);
        times.stall_after_ns[d] = rhythm.stall_after_ns;
        times.median_gap_ns[d] = rhythm.median_gap_ns;
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/64);
  if (option_ns != kUnknown) {
    std::fill(times.per_dump.begin(), times.per_dump.end(), option_ns);
    times.job_ns = option_ns;
    times.source = "option";
    times.confidence = Confidence::kHigh;
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
    times.confidence = Confidence::kLow;
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
    times.confidence = Confidence::kLow;
  } else {
    times.source = "file modification time";
    times.confidence = without_time > 0 ? Confidence::kLow : Confidence::kMedium;
  }
  return times;
}

}  // namespace

}  // namespace fr
