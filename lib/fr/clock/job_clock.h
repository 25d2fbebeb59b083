// One clock for the whole job: who printed each log event (rank, host), and when on a corrected
// UTC clock (docs/architecture.md, "clock"; docs/logs.md, "One clock").
//
//   LogSet logs = ...;                          // lib/fr/logs
//   JobClock clock = AlignClocks(&logs, {});    // fills every event's rank, host and time_ns
//   clock.hosts[0].offset_ns;                   // node00's clock minus the consensus clock
//
// Hosts disagree by seconds or minutes, so raw timestamps can make a victim's error look earlier
// than the culprit's. Some events happen at nearly the same true moment on every host that prints
// them: the enqueue of the collective every victim times out on (the watchdog's time minus how
// long the op ran), the completion of the world communicator's NCCL init, the rendezvous. Each
// such group of events gives every host that printed one an observation of its clock against
// the others; offsets are the robust (median) solution of "observed = true + offset(host)", and
// the job's clock is the consensus of its hosts (the median host has offset 0): no single
// host's clock is trusted. A host whose anchors lie far apart in time also gets a drift.
//
// Times written without a year (glog, syslog) take the year that puts them nearest the job's
// dated lines (a dump time, or the current year when nothing is dated), so a job that crosses
// New Year is read right. Seconds since boot (dmesg) have no anchor of their own: a host's
// kernel lines are placed so that the last one falls just before the job's first stalled
// collective was enqueued, keeping their spacing; their confidence is low and says so.
#ifndef FR_CLOCK_JOB_CLOCK_H_
#define FR_CLOCK_JOB_CLOCK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/base/confidence.h"
#include "fr/logs/log_event.h"

namespace fr {

struct HostClock {
  std::string host;  // "" gathers the lines no host could be given to
  // The host's clock minus the consensus clock at `drift_origin_ns` (consensus time).
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t drift_origin_ns = 0;
  std::string method;
  Confidence confidence = Confidence::kLow;
  int32_t anchors = 0;
  // For dmesg's seconds since boot: the boot on this host's clock, kNoTime when not placed.
  int64_t boot_ns = kNoTime;
};

// A rank's own record of when it did something every member of a group did at nearly the same
// moment (the flight recorder's time_created of one collective), read on its host's clock: the
// dumps' anchors, used once the logs tie the rank to its host.
struct RankAnchor {
  std::string key;  // the shared event, e.g. "flight recorder: all_reduce #812 in group 3"
  int64_t rank = -1;
  int64_t ns = 0;  // on the rank's host's clock, ns since the epoch
};

struct ClockHints {
  // A time known to lie near the job's end (a dump time, the logs' modification times; ns since
  // the epoch), or kNoTime. Only used to give year-less dates their year.
  int64_t near_ns = kNoTime;
  // Used for the year when nothing else is dated (the analysis time by default).
  int64_t now_ns = kNoTime;
  // Shared events the dumps recorded, per rank.
  std::vector<RankAnchor> rank_anchors;
};

struct JobClock {
  std::vector<HostClock> hosts;  // ascending host
  int year = 0;                  // the year given to year-less dates near the job's end
  std::string year_source;       // "dated log lines", "dump time", "current year (assumed)"
  // Lines dated after the analysis (more than a day after now): "path:line: dated <UTC>".
  // Their dates are not used; the lines count as undated.
  std::vector<std::string> impossible_times;
  // The consensus time of a reading of `host`'s clock.
  int64_t Correct(const std::string& host, int64_t host_ns) const;
  const HostClock* Find(const std::string& host) const;
};

// Gives events the rank and host their file, prefixes and the job's NCCL init lines imply
// (ResolveIdentities), then their corrected time (time_ns; kNoTime when the line and the lines
// before it in its file carry no time).
JobClock AlignClocks(LogSet* logs, const ClockHints& hints);

// Who printed what: fills LogEvent::rank and ::host where the file, a prefix, or the job's
// identity lines (NCCL init: host, pid, cudaDev and busId of each rank; torchrun's failure
// table: host, rank and local rank) tie them. An Xid names only a PCI bus id: it is given the
// rank whose NCCL init line on that host has that bus id. `world_size` is the job's, from its
// dumps (-1 when unknown): a worker whose local rank is world_size - 1 shows that one launcher
// started every rank, so there each local rank is the global one.
void ResolveIdentities(LogSet* logs, int64_t world_size = -1);

// RFC 3339 UTC with milliseconds, "2026-03-14T11:21:20.770Z"; "" for kNoTime.
std::string FormatUtc(int64_t ns);
// A raw time as the line printed it, readable: "2026-12-01 12:03:04.123 (host clock)",
// "12-01 12:03:04.123456 (no year)", "1234.567890 s after boot".
std::string FormatRawTime(const LogTime& time);

}  // namespace fr

#endif  // FR_CLOCK_JOB_CLOCK_H_
