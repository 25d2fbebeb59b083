#include "fr/clock/job_clock.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/civil_time.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "fmt/format.h"

namespace fr {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;
// Drift is only estimated from anchors at least this far apart: over shorter spans the
// scatter of the anchors themselves (watchdog polling, init skew) is larger than any drift.
constexpr int64_t kMinDriftSpanNs = 10 * 60 * kNanosPerSecond;
// Faster than this no working NTP-less crystal runs; a larger fit is noise.
constexpr double kMaxDriftPpm = 1000;
// Readings outside these bounds are no clock reading a job printed (a corrupt or hostile line):
// they are dropped, which also keeps every sum and difference of times far from overflow.
constexpr int64_t kEarliestPlausibleNs = int64_t{315'532'800} * kNanosPerSecond;  // 1980-01-01
constexpr int64_t kLatestPlausibleNs = int64_t{7'258'118'400} * kNanosPerSecond;  // 2200-01-01
constexpr int64_t kLongestPlausibleNs = int64_t{10} * 366 * 24 * 3600 * kNanosPerSecond;
constexpr int64_t kLongestPlausibleMs = kLongestPlausibleNs / kNanosPerMs;

bool Plausible(int64_t ns) { return ns >= kEarliestPlausibleNs && ns <= kLatestPlausibleNs; }

// A line dated more than this after the analysis runs was not written by the job: a clock set
// wrong, a planted line, a date field filled with 9999.
constexpr int64_t kFutureGraceNs = int64_t{24} * 3600 * kNanosPerSecond;

// Durations and boot-relative times a line states, clamped to what a job can print (ten years);
// anything else is treated as not stated. A line's own date after `latest_ns` is impossible: it
// is not used, and named in `impossible` ("path:line: date").
void DropImplausible(LogSet* logs, int64_t latest_ns, std::vector<std::string>* impossible) {
  constexpr size_t kMaxNamed = 20;
  for (LogEvent& event : logs->events) {
    bool dated_own =
        event.raw_time.kind == LogTime::Kind::kUtc || event.raw_time.kind == LogTime::Kind::kLocal;
    if (dated_own && event.raw_time.ns > latest_ns && Plausible(event.raw_time.ns)) {
      if (impossible->size() < kMaxNamed) {
        const std::string& path =
            event.file >= 0 && event.file < static_cast<int32_t>(logs->files.size())
                ? logs->files[event.file].path
                : std::string();
        impossible->push_back(fmt::format("{}:{}: dated {} (after the analysis)", path, event.line,
                                          FormatUtc(event.raw_time.ns)));
      }
      event.raw_time = LogTime();
      event.impossible_time = true;
    }
    for (LogTime* time : {&event.nearby_time, &event.next_time}) {
      bool dated = time->kind == LogTime::Kind::kUtc || time->kind == LogTime::Kind::kLocal;
      if (dated && time->ns > latest_ns) *time = LogTime();
    }
    if (event.ran_for_ms > kLongestPlausibleMs || event.ran_for_ms < -1) event.ran_for_ms = -1;
    if (event.timeout_ms > kLongestPlausibleMs || event.timeout_ms < -1) event.timeout_ms = -1;
    if (event.stated_ns != kNoTime && !Plausible(event.stated_ns)) event.stated_ns = kNoTime;
    for (LogTime* time : {&event.raw_time, &event.nearby_time, &event.next_time}) {
      bool since_boot = time->kind == LogTime::Kind::kSinceBoot;
      bool dated = time->kind == LogTime::Kind::kUtc || time->kind == LogTime::Kind::kLocal;
      if ((since_boot && (time->ns < 0 || time->ns > kLongestPlausibleNs)) ||
          (dated && !Plausible(time->ns)) ||
          (time->kind == LogTime::Kind::kNoYear &&
           (time->ns < 0 || time->ns >= 24 * 3600 * kNanosPerSecond + kNanosPerSecond))) {
        *time = LogTime();
      }
    }
  }
}

// A host whose anchors agree with the consensus within this is "high" confidence.
constexpr int64_t kTightResidualNs = 2 * kNanosPerSecond;

int64_t Median(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  int64_t upper = values[middle];
  if (values.size() % 2 == 1) return upper;
  int64_t lower = *std::max_element(values.begin(), values.begin() + middle);
  return lower + (upper - lower) / 2;
}

int64_t CivilNs(int64_t year, int month, int day, int64_t ns_of_day) {
  absl::Time midnight = absl::FromCivil(absl::CivilDay(year, month, day), absl::UTCTimeZone());
  return absl::ToUnixNanos(midnight) + ns_of_day;
}

int YearOf(int64_t ns) {
  return static_cast<int>(absl::ToCivilYear(absl::FromUnixNanos(ns), absl::UTCTimeZone()).year());
}

bool IsDated(const LogTime& time) {
  return time.kind == LogTime::Kind::kUtc || time.kind == LogTime::Kind::kLocal;
}

// A year-less date in the year that puts it nearest `reference`, or, when the reference is the
// job's end (a dump or file time, or now), in the latest year that puts it before the end: a log
// line is never written after its file.
int64_t NearestYear(const LogTime& time, int64_t reference, bool reference_is_end) {
  constexpr int64_t kDayNs = int64_t{24} * 3600 * 1'000'000'000;
  int year = YearOf(reference);
  int64_t best = kNoTime;
  for (int candidate : {year + 1, year, year - 1}) {
    int64_t ns = CivilNs(candidate, time.month, time.day, time.ns);
    if (reference_is_end) {
      // A day's grace for time zones: the end is UTC, the line host-local.
      if (ns <= reference + kDayNs) return ns;
      continue;
    }
    if (best == kNoTime || std::llabs(ns - reference) < std::llabs(best - reference)) best = ns;
  }
  return best != kNoTime ? best : CivilNs(year - 1, time.month, time.day, time.ns);
}

bool IsKernelFault(LogEventKind kind) {
  return kind == LogEventKind::kXid || kind == LogEventKind::kHostOom;
}

// Observations of one group of simultaneous events: per host, the median of its readings.
struct AnchorGroup {
  std::string method;
  std::map<std::string, std::vector<int64_t>> readings;
  std::map<std::string, int64_t> by_host;  // filled from readings
  int64_t consensus = 0;
};

}  // namespace

const HostClock* JobClock::Find(const std::string& host) const {
  auto it =
      std::lower_bound(hosts.begin(), hosts.end(), host,
                       [](const HostClock& h, const std::string& name) { return h.host < name; });
  return it != hosts.end() && it->host == host ? &*it : nullptr;
}

int64_t JobClock::Correct(const std::string& host, int64_t host_ns) const {
  const HostClock* clock = Find(host);
  if (clock == nullptr || host_ns == kNoTime) return host_ns;
  double drift = clock->drift_ppm * 1e-6 * static_cast<double>(host_ns - clock->drift_origin_ns);
  return host_ns - clock->offset_ns - static_cast<int64_t>(std::llround(drift));
}

namespace {

// Whether `host` appears in `path` as a whole token ("logs/node01/dmesg.txt",
// "kern-node01.log"), not as part of a longer name ("node010").
bool PathNamesHost(std::string_view path, std::string_view host) {
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
  };
  for (size_t at = path.find(host); at != std::string_view::npos; at = path.find(host, at + 1)) {
    size_t end = at + host.size();
    bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(path[at - 1]));
    bool ends =
        end == path.size() || !is_name_char(path[end]) || path[end] == '_' || path[end] == '-';
    if (starts && ends) return true;
  }
  return false;
}

// A log of one host whose lines do not name it (dmesg, a kernel log copied per host) is that
// host's when its path names one of the job's hosts, and only one.
void HostsFromPaths(LogSet* logs) {
  std::set<std::string> known;
  for (const LogEvent& event : logs->events) {
    if (!event.host.empty()) known.insert(event.host);
  }
  for (LogFile& file : logs->files) {
    if (!file.host.empty()) continue;
    std::string match;
    int matches = 0;
    for (const std::string& host : known) {
      if (PathNamesHost(file.path, host)) {
        ++matches;
        match = host;
      }
    }
    if (matches == 1) file.host = match;
  }
}

// Logs without dumps (a paste, a folder of logs) that one torchrun agent wrote: one host at most,
// and every line that names a global rank names the same number as its local rank (or no line
// names one). Single-node torchrun numbers its workers' global ranks as their local ranks, so
// "failed (exitcode: -11) local_rank: 2" is rank 2. A second host, or a global rank that
// differs from its local rank (a second node's workers), and local ranks stay local.
bool IsSingleAgentPaste(const LogSet& logs) {
  std::set<std::string> hosts;
  bool local_only = false;
  for (const LogEvent& event : logs.events) {
    if (!event.host.empty()) hosts.insert(event.host);
    if (event.rank >= 0 && event.local_rank >= 0 && event.rank != event.local_rank) return false;
    local_only |= event.rank < 0 && event.local_rank >= 0;
  }
  for (const LogFile& file : logs.files) {
    if (!file.host.empty()) hosts.insert(file.host);
    if (file.rank >= 0 && file.local_rank >= 0 && file.rank != file.local_rank) return false;
  }
  return local_only && hosts.size() <= 1;
}

bool IsTimeoutCascade(LogEventKind kind) {
  return kind == LogEventKind::kWatchdogTimeout || kind == LogEventKind::kWatchdogStuck ||
         kind == LogEventKind::kWorkTimeoutSeqs || kind == LogEventKind::kDumpSignal ||
         kind == LogEventKind::kProcessTakenDown;
}

// Whether a group tag's rank ("[Rank 3]") may be read as the global rank: no line names a group
// other than the default one, and every line whose rank is known otherwise (a "[rank3]:" prefix)
// carries that same rank in its tag. Torch before 2.2 tags every group's lines with "[Rank N]"
// alone, so in a job with several groups (FSDP, tensor parallelism) the tag is ambiguous.
bool ShowsOnlyTheDefaultGroup(const LogSet& logs) {
  bool any_tag = false;
  for (const LogEvent& event : logs.events) {
    if (event.group_rank < 0) continue;
    any_tag = true;
    if (event.group_tag == LogEvent::GroupTagKind::kOtherGroup) return false;
    if (event.rank >= 0 && event.rank != event.group_rank) return false;
  }
  return any_tag;
}

}  // namespace

void ResolveIdentities(LogSet* logs, int64_t world_size) {
  HostsFromPaths(logs);
  std::vector<LogEvent>& events = logs->events;
  // One launcher ran the whole job when a worker's local rank is world_size - 1 (its launcher
  // started world_size workers) and no line names a rank or local rank beyond the world (lines
  // of another, larger job). torchrun's agent can fail before it prints its failure table (its
  // JSONDecodeError on an error.json a killed worker left empty), and then nothing else ties a
  // faulthandler block under "[default2]:" to rank 2.
  bool one_launcher = false;
  if (world_size >= 2) {
    bool beyond = false;
    for (const LogFile& file : logs->files) {
      one_launcher |= file.highest_local_rank == world_size - 1;
      beyond |= file.highest_local_rank >= world_size;
    }
    for (const LogEvent& event : events) beyond |= event.rank >= world_size;
    one_launcher &= !beyond;
  }
  // What the file says of all its lines.
  for (LogEvent& event : events) {
    if (event.file < 0 || event.file >= static_cast<int32_t>(logs->files.size())) continue;
    const LogFile& file = logs->files[event.file];
    if (event.host.empty()) event.host = file.host;
    if (event.rank < 0) event.rank = file.rank;
    if (event.local_rank < 0) event.local_rank = file.local_rank;
  }
  // A file whose host-bearing lines all name one host (a rank's log with NCCL prefixes) is that
  // host's, for its other lines too.
  std::map<int32_t, std::set<std::string>> hosts_of_file;
  for (const LogEvent& event : events) {
    if (!event.host.empty()) hosts_of_file[event.file].insert(event.host);
  }
  for (LogEvent& event : events) {
    auto it = hosts_of_file.find(event.file);
    if (event.host.empty() && it != hosts_of_file.end() && it->second.size() == 1) {
      event.host = *it->second.begin();
    }
  }
  // The world communicator's init lines tie each rank to its host, device, bus id and pid: in
  // the communicator with every rank, the communicator's rank is the global rank.
  const int64_t world = WorldCommunicatorSize(events);
  for (LogEvent& event : events) {
    if (event.kind == LogEventKind::kNcclInit && event.nranks == world && event.rank < 0) {
      event.rank = event.comm_rank;
    }
  }
  const bool single_agent = world_size < 2 && IsSingleAgentPaste(*logs);
  const bool one_group = ShowsOnlyTheDefaultGroup(*logs);
  std::map<std::pair<std::string, int32_t>, int32_t> by_device, by_pid;
  std::map<std::pair<std::string, std::string>, int64_t> by_bus;
  std::map<int64_t, std::string> host_of_rank;
  std::map<int64_t, std::set<int64_t>> ranks_of_local_rank;
  for (const LogEvent& event : events) {
    if (event.host.empty() || event.rank < 0) continue;
    bool world_init = event.kind == LogEventKind::kNcclInit && event.nranks == world;
    if (world_init) {
      if (event.cuda_dev >= 0) by_device[{event.host, event.cuda_dev}] = event.rank;
      if (event.pid >= 0) by_pid[{event.host, event.pid}] = event.rank;
      if (!event.bus_id.empty()) by_bus[{event.host, event.bus_id}] = event.rank;
    }
    bool global_rank =
        world_init || event.kind == LogEventKind::kRootCauseTable ||
        (event.kind != LogEventKind::kNcclInit && event.kind != LogEventKind::kWorkerFailed);
    if (!global_rank) continue;
    host_of_rank.emplace(event.rank, event.host);
    if (event.local_rank >= 0) {
      by_device.emplace(std::pair{event.host, event.local_rank}, event.rank);
      ranks_of_local_rank[event.local_rank].insert(event.rank);
    }
  }
  for (LogEvent& event : events) {
    if (event.rank < 0 && !event.host.empty()) {
      auto find = [&](const auto& map, const auto& key) {
        auto it = map.find(key);
        return it == map.end() ? -1 : it->second;
      };
      if (event.local_rank >= 0)
        event.rank = find(by_device, std::pair{event.host, event.local_rank});
      if (event.rank < 0 && event.pid >= 0)
        event.rank = find(by_pid, std::pair{event.host, event.pid});
      if (event.rank < 0 && !event.bus_id.empty()) {
        event.rank = find(by_bus, std::pair{event.host, event.bus_id});
      }
    }
    // A torchrun --log-dir file (".../attempt_0/2/stderr.log") names only its local rank and no
    // host. When every host that knows local rank N gives it the same global rank (one agent),
    // that is its rank; with several agents the local rank is ambiguous and stays unresolved.
    if (event.rank < 0 && event.host.empty() && event.local_rank >= 0) {
      auto it = ranks_of_local_rank.find(event.local_rank);
      if (it != ranks_of_local_rank.end() && it->second.size() == 1)
        event.rank = *it->second.begin();
    }
    if (event.rank < 0 && event.local_rank >= 0 && (one_launcher || single_agent)) {
      event.rank = event.local_rank;
      event.rank_assumed = !one_launcher;
    }
    // Only for a fault's line: a timeout's reporters are victims, and the ranks that printed
    // none are read as the laggards, which one unresolved group would name wrongly.
    if (event.rank < 0 && event.group_rank >= 0 && one_group && !IsTimeoutCascade(event.kind)) {
      event.rank = event.group_rank;
      event.rank_from_group_tag = true;
    }
    if (event.host.empty() && event.rank >= 0) {
      if (auto it = host_of_rank.find(event.rank); it != host_of_rank.end())
        event.host = it->second;
    }
  }
}

namespace {

// The clock a line's time was read from: its host's, except Slurm's "CANCELLED AT" time, which
// the controller (slurmctld) stamps with its own clock whatever node the line names.
std::string ClockOf(const LogEvent& event) {
  if (event.kind == LogEventKind::kHostKill &&
      event.text.find("CANCELLED AT") != std::string::npos) {
    return "slurmctld";
  }
  return event.host;
}

bool IsCrash(LogEventKind kind) {
  return kind == LogEventKind::kPythonException || kind == LogEventKind::kCudaOom ||
         kind == LogEventKind::kCudaError || kind == LogEventKind::kSegfault ||
         kind == LogEventKind::kNonFiniteLoss || kind == LogEventKind::kTransportError;
}

// Tracebacks carry no time. A worker that crashed died right after printing one, and its
// launcher reported the death with a date (torchrun polls its workers a few times a second), so
// an untimed crash of a rank is put just before the earliest reported death of that rank; failing
// that, it lies between the nearest earlier and later timed lines of its file (its bounds).
//
// A file's modification time is when its last line was written: no line of it is later. A crash
// in a file last written well before a death of its rank is not that death's (a previous run's
// --log-dir tree, a log kept from an earlier attempt): it keeps its file's bounds.
void TimeUntimedCrashes(std::vector<LogEvent>& events, const std::vector<int64_t>& nearby,
                        const std::vector<int64_t>& next, const std::vector<int64_t>& written) {
  constexpr int64_t kLauncherPollNs = 300 * kNanosPerMs;
  // File times come from the clock of the machine that stored the file (the host, or a file
  // server), never corrected: they are trusted only to tell a previous run's file, minutes or
  // days older, from this job's.
  constexpr int64_t kFileClockSlackNs = 10 * 60 * kNanosPerSecond;
  // A worker the launcher stopped (SIGTERM, once another had failed) died when the launcher
  // chose, not when it crashed: its traceback came before the stop, by any length of time.
  // The launcher's own "Sending process N closing signal SIGTERM" line dates the stop best.
  std::map<std::pair<std::string_view, int32_t>, int64_t> stop_sent;
  for (const LogEvent& event : events) {
    if (event.kind != LogEventKind::kSignalSent || event.pid < 0 || event.time_ns == kNoTime) {
      continue;
    }
    auto [it, inserted] = stop_sent.try_emplace({event.host, event.pid}, event.time_ns);
    if (!inserted) it->second = std::min(it->second, event.time_ns);
  }
  std::map<int64_t, int64_t> death_of_rank, stop_of_rank;
  for (const LogEvent& event : events) {
    bool death =
        event.kind == LogEventKind::kWorkerFailed || event.kind == LogEventKind::kRootCauseTable;
    if (!death || event.rank < 0 || event.time_ns == kNoTime) continue;
    int64_t at = event.time_ns;
    auto* deaths = &death_of_rank;
    if (event.signal == 15) {
      deaths = &stop_of_rank;
      if (auto sent = stop_sent.find({event.host, event.pid}); sent != stop_sent.end()) {
        at = std::min(at, sent->second);
      }
    }
    auto [it, inserted] = deaths->try_emplace(event.rank, at);
    if (!inserted) it->second = std::min(it->second, at);
  }
  for (size_t i = 0; i < events.size(); ++i) {
    LogEvent& event = events[i];
    if (event.time_ns != kNoTime || !IsCrash(event.kind)) continue;
    // The file's last write bounds the line, give or take the file clock's error.
    int64_t upper = next[i];
    int64_t written_by = written[i] == kNoTime ? kNoTime : written[i] + kFileClockSlackNs;
    if (written_by != kNoTime && (upper == kNoTime || written_by < upper)) upper = written_by;
    if (auto stop = stop_of_rank.find(event.rank);
        stop != stop_of_rank.end() && (upper == kNoTime || stop->second < upper)) {
      upper = stop->second;
    }
    auto it = death_of_rank.find(event.rank);
    if (it != death_of_rank.end() &&
        (written_by == kNoTime || written_by >= it->second - kLauncherPollNs)) {
      // No later than the next dated line of its own file (the launcher's lines between the
      // crash and its report of the death).
      event.time_ns = it->second - kLauncherPollNs;
      if (next[i] != kNoTime) event.time_ns = std::min(event.time_ns, next[i]);
      event.time_upper_ns = event.time_ns;  // as good as a time of its own
      event.time_inferred = true;
    } else if (nearby[i] != kNoTime || upper != kNoTime) {
      event.time_ns = nearby[i];
      event.time_upper_ns = upper;
      event.time_inferred = true;
    }
  }
}

// Seconds since boot on each host become its clock's time, by the best evidence at hand:
//   1. the kernel's own boot line stating the wall-clock time ("setting system clock to ...");
//   2. a process the kernel killed (OOM killer) whose death the launcher reported with a date:
//      the same pid, the same moment;
//   3. otherwise the host's last kernel fault is placed just before the first stalled
//      collective's enqueue (the last moment the job was known healthy), keeping the spacing of
//      its lines; the host's clock confidence is then low.
void PlaceBoots(const std::vector<LogEvent>& events, const std::vector<int64_t>& local,
                JobClock* clock) {
  std::map<std::string, std::vector<size_t>> since_boot;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].raw_time.kind == LogTime::Kind::kSinceBoot) {
      since_boot[events[i].host].push_back(i);
    }
  }
  if (since_boot.empty()) return;
  int64_t first_stall = kNoTime;
  for (size_t i = 0; i < events.size(); ++i) {
    const LogEvent& event = events[i];
    if (event.kind != LogEventKind::kWatchdogTimeout || local[i] == kNoTime) continue;
    int64_t enqueue =
        clock->Correct(event.host, local[i]) - std::max<int64_t>(event.ran_for_ms, 0) * kNanosPerMs;
    if (first_stall == kNoTime || enqueue < first_stall) first_stall = enqueue;
  }
  // Each host's earliest local time (correcting a host's times keeps their order).
  std::map<std::string_view, int64_t> earliest_local;
  for (size_t i = 0; i < events.size(); ++i) {
    if (local[i] == kNoTime) continue;
    auto [it, inserted] = earliest_local.try_emplace(events[i].host, local[i]);
    if (!inserted) it->second = std::min(it->second, local[i]);
  }
  // The first line of each (host, pid) in which the launcher reports that worker's death, looked
  // up once per kernel kill rather than searched for (a log can hold thousands of both).
  std::map<std::pair<std::string_view, int64_t>, size_t> first_death;
  for (size_t j = 0; j < events.size(); ++j) {
    const LogEvent& death = events[j];
    if ((death.kind == LogEventKind::kWorkerFailed ||
         death.kind == LogEventKind::kRootCauseTable) &&
        local[j] != kNoTime) {
      first_death.try_emplace({death.host, death.pid}, j);
    }
  }
  for (const auto& [host, indices] : since_boot) {
    // Hosts are sorted by name (see Find).
    auto found =
        std::lower_bound(clock->hosts.begin(), clock->hosts.end(), host,
                         [](const HostClock& h, const std::string& name) { return h.host < name; });
    if (found == clock->hosts.end() || found->host != host) continue;
    HostClock* target = &*found;
    // 1. The boot line.
    for (size_t i : indices) {
      const LogEvent& event = events[i];
      if (event.kind == LogEventKind::kBootClock && event.stated_ns != kNoTime) {
        target->boot_ns = event.stated_ns - event.raw_time.ns;
        target->method += "; kernel times from the boot's rtc line";
        break;
      }
    }
    if (target->boot_ns != kNoTime) continue;
    // 2. A killed pid the launcher saw die (it polls its workers every few tenths of a second).
    constexpr int64_t kLauncherPollNs = 300 * kNanosPerMs;
    for (size_t i : indices) {
      const LogEvent& kill = events[i];
      if (kill.pid < 0 || !IsKernelFault(kill.kind)) continue;
      auto death = first_death.find({host, kill.pid});
      if (death == first_death.end()) continue;
      target->boot_ns = local[death->second] - kLauncherPollNs - kill.raw_time.ns;
      target->method +=
          fmt::format("; kernel times from pid {}'s death, as the launcher reported it", kill.pid);
      break;
    }
    if (target->boot_ns != kNoTime) continue;
    // 3. Just before the stall.
    int64_t anchor = INT64_MIN, last = INT64_MIN;
    for (size_t i : indices) {
      last = std::max(last, events[i].raw_time.ns);
      if (IsKernelFault(events[i].kind)) anchor = std::max(anchor, events[i].raw_time.ns);
    }
    if (anchor == INT64_MIN) anchor = last;
    int64_t when = first_stall;
    if (when == kNoTime) {
      auto earliest = earliest_local.find(host);
      if (earliest != earliest_local.end()) when = clock->Correct(host, earliest->second);
    }
    if (when == kNoTime) continue;
    // boot + anchor (host clock) corrects to just before `when`.
    target->boot_ns = when - kNanosPerMs + target->offset_ns - anchor;
    target->method += "; kernel seconds since boot placed just before the first stalled collective";
    target->confidence = Confidence::kLow;
  }
}

}  // namespace

JobClock AlignClocks(LogSet* logs, const ClockHints& hints) {
  ResolveIdentities(logs);
  std::vector<LogEvent>& events = logs->events;
  JobClock clock;
  const int64_t now = hints.now_ns != kNoTime ? hints.now_ns : absl::ToUnixNanos(absl::Now());
  DropImplausible(logs, now + kFutureGraceNs, &clock.impossible_times);

  // The year for year-less dates: from the dated lines, else the dump time, else now.
  std::vector<int64_t> dated;
  for (const LogEvent& event : events) {
    if (IsDated(event.raw_time)) dated.push_back(event.raw_time.ns);
  }
  int64_t reference;
  bool reference_is_end = true;
  if (!dated.empty()) {
    reference_is_end = false;
    reference = Median(dated);
    clock.year_source = "dated log lines";
  } else if (hints.near_ns != kNoTime && Plausible(hints.near_ns)) {
    reference = hints.near_ns;
    clock.year_source = "dump or log file times";
  } else {
    reference = now;
    clock.year_source = "current year (assumed: no line is dated)";
  }
  clock.year = YearOf(reference);

  // Every event's reading of its host's clock (kNoTime for none yet: seconds since boot are
  // placed once the offsets are known).
  auto reading = [&](const LogTime& time) {
    if (IsDated(time)) return time.ns;
    if (time.kind == LogTime::Kind::kNoYear && time.month >= 1 && time.month <= 12 &&
        time.day >= 1 && time.day <= 31) {
      return NearestYear(time, reference, reference_is_end);
    }
    return kNoTime;
  };
  std::vector<int64_t> local(events.size(), kNoTime);
  for (size_t i = 0; i < events.size(); ++i) local[i] = reading(events[i].raw_time);

  // Groups of events that happen at nearly the same true moment wherever they are printed.
  const int64_t world = WorldCommunicatorSize(events);
  std::map<std::string, AnchorGroup> groups;
  for (size_t i = 0; i < events.size(); ++i) {
    const LogEvent& event = events[i];
    if (local[i] == kNoTime) continue;
    std::string key;
    int64_t value = local[i];
    if (event.kind == LogEventKind::kWatchdogTimeout && event.seq >= 0) {
      // The op's enqueue: the same moment on every member, unlike the watchdog's polling.
      if (event.ran_for_ms > 0) value -= event.ran_for_ms * kNanosPerMs;
      key = fmt::format("watchdog timeouts of SeqNum {}{}", event.seq,
                        event.process_group.empty() ? "" : " (" + event.process_group + ")");
    } else if (event.kind == LogEventKind::kNcclInit && event.nranks == world && world > 1) {
      key = fmt::format("NCCL init of the {}-rank communicator", world);
    } else if (event.kind == LogEventKind::kRendezvous) {
      key = "rendezvous";
    } else if (event.kind == LogEventKind::kLauncherStart) {
      key = "launcher start";
    } else {
      continue;
    }
    AnchorGroup& group = groups[key];
    group.method = key;
    group.readings[ClockOf(event)].push_back(value);
  }
  // The dumps' anchors, on the host the logs put each rank on.
  std::map<int64_t, std::string> host_of_rank;
  for (const LogEvent& event : events) {
    if (event.rank >= 0 && !event.host.empty()) host_of_rank.emplace(event.rank, event.host);
  }
  for (const RankAnchor& anchor : hints.rank_anchors) {
    auto it = host_of_rank.find(anchor.rank);
    if (it == host_of_rank.end() || !Plausible(anchor.ns)) continue;
    AnchorGroup& group = groups[anchor.key];
    group.method = anchor.key;
    group.readings[it->second].push_back(anchor.ns);
  }
  std::vector<AnchorGroup*> shared;
  for (auto& [key, group] : groups) {
    for (auto& [host, values] : group.readings) group.by_host[host] = Median(values);
    if (group.by_host.size() >= 2) shared.push_back(&group);
  }

  std::set<std::string> hosts;
  // Lines of no known host are on no host's clock: an empty name is never a host.
  for (const LogEvent& event : events) {
    if (!ClockOf(event).empty()) hosts.insert(ClockOf(event));
  }
  // Each host's clock reads the consensus time T as T + a + b (T - origin): an offset a at the
  // origin (the latest anchor, nearest the failure) and a drift b. Alternating estimates: each
  // group's true time given the clocks (a median over hosts, so one late watchdog poll or one
  // host that printed its init much later moves nothing), then each host's a and b given the
  // groups' times (a median offset, and a least-squares drift when its anchors lie far enough
  // apart to tell drift from scatter).
  struct ClockFit {
    double a = 0;
    double b = 0;
    bool drifts = false;
  };
  std::map<std::string, ClockFit> fit;
  std::map<std::string, std::vector<const AnchorGroup*>> groups_of_host;
  for (AnchorGroup* group : shared) {
    std::vector<int64_t> raw;
    for (const auto& [host, value] : group->by_host) {
      raw.push_back(value);
      groups_of_host[host].push_back(group);
    }
    group->consensus = Median(raw);
  }
  int64_t origin = 0;
  for (const AnchorGroup* group : shared) origin = std::max(origin, group->consensus);
  auto predicted = [&](const std::string& host, int64_t t) {
    const ClockFit& f = fit[host];
    return f.a + f.b * static_cast<double>(t - origin);
  };
  for (int round = 0; round < 12 && !shared.empty(); ++round) {
    for (AnchorGroup* group : shared) {
      std::vector<int64_t> times;
      for (const auto& [host, value] : group->by_host) {
        times.push_back(value -
                        static_cast<int64_t>(std::llround(predicted(host, group->consensus))));
      }
      group->consensus = Median(times);
    }
    for (const auto& [host, list] : groups_of_host) {
      ClockFit& f = fit[host];
      std::vector<int64_t> residuals;
      int64_t first = list.front()->consensus, last = first;
      for (const AnchorGroup* group : list) {
        residuals.push_back(group->by_host.at(host) - group->consensus);
        first = std::min(first, group->consensus);
        last = std::max(last, group->consensus);
      }
      f = ClockFit{.a = static_cast<double>(Median(residuals))};
      if (last - first < kMinDriftSpanNs || list.size() < 2) continue;
      double mean_t = 0, mean_r = 0;
      for (const AnchorGroup* group : list) {
        mean_t += static_cast<double>(group->consensus - origin);
        mean_r += static_cast<double>(group->by_host.at(host) - group->consensus);
      }
      mean_t /= static_cast<double>(list.size());
      mean_r /= static_cast<double>(list.size());
      double covariance = 0, variance = 0;
      for (const AnchorGroup* group : list) {
        double t = static_cast<double>(group->consensus - origin) - mean_t;
        double r = static_cast<double>(group->by_host.at(host) - group->consensus) - mean_r;
        covariance += t * r;
        variance += t * t;
      }
      double slope = variance > 0 ? covariance / variance : 0;
      if (std::abs(slope) * 1e6 <= kMaxDriftPpm) {
        f = ClockFit{.a = mean_r - slope * mean_t, .b = slope, .drifts = true};
      }
    }
  }
  // The consensus clock is the median anchored host's, in offset and in drift: no single host is
  // trusted.
  std::vector<int64_t> offsets_at_origin, drifts_ppb;
  for (const auto& [host, list] : groups_of_host) {
    offsets_at_origin.push_back(static_cast<int64_t>(std::llround(fit[host].a)));
    if (fit[host].drifts)
      drifts_ppb.push_back(static_cast<int64_t>(std::llround(fit[host].b * 1e9)));
  }
  double center_a = static_cast<double>(Median(offsets_at_origin));
  double center_b = drifts_ppb.size() * 2 > groups_of_host.size()
                        ? static_cast<double>(Median(drifts_ppb)) * 1e-9
                        : 0;
  for (AnchorGroup* group : shared) {
    group->consensus += static_cast<int64_t>(
        std::llround(center_a + center_b * static_cast<double>(group->consensus - origin)));
  }
  for (auto& [host, f] : fit) {
    f.a -= center_a;
    if (f.drifts) f.b -= center_b;
  }

  bool single_host = hosts.size() == 1;
  for (const std::string& host : hosts) {
    HostClock out;
    out.host = host;
    auto it = groups_of_host.find(host);
    if (it == groups_of_host.end()) {
      out.method = single_host ? "the only source: its clock is the job's"
                               : "no event shared with other hosts: its clock is taken as is";
      out.confidence = single_host ? Confidence::kMedium : Confidence::kLow;
      clock.hosts.push_back(std::move(out));
      continue;
    }
    const ClockFit& f = fit[host];
    out.offset_ns = static_cast<int64_t>(std::llround(f.a));
    out.drift_ppm = f.drifts ? f.b * 1e6 : 0;
    out.drift_origin_ns = origin;
    std::vector<const AnchorGroup*> list = it->second;
    out.anchors = static_cast<int32_t>(list.size());
    int64_t last = origin;
    int64_t worst = 0;
    for (const AnchorGroup* group : list) {
      double drift = out.drift_ppm * 1e-6 * static_cast<double>(group->consensus - last);
      int64_t predicted = out.offset_ns + static_cast<int64_t>(std::llround(drift));
      worst = std::max<int64_t>(worst,
                                std::llabs(group->by_host.at(host) - group->consensus - predicted));
    }
    // The most widely shared group names the method.
    const AnchorGroup* best =
        *std::max_element(list.begin(), list.end(), [](const AnchorGroup* a, const AnchorGroup* b) {
          return a->by_host.size() < b->by_host.size();
        });
    out.method = fmt::format("{} on {} hosts", best->method, best->by_host.size());
    if (list.size() > 1) out.method += fmt::format(" (+{} more shared events)", list.size() - 1);
    if (out.drift_ppm != 0) out.method += fmt::format(", drift {:.1f} ppm", out.drift_ppm);
    bool widely_shared = best->by_host.size() >= 3;
    out.confidence =
        widely_shared && worst <= kTightResidualNs ? Confidence::kHigh : Confidence::kMedium;
    clock.hosts.push_back(std::move(out));
  }

  PlaceBoots(events, local, &clock);

  for (size_t i = 0; i < events.size(); ++i) {
    LogEvent& event = events[i];
    if (event.raw_time.kind == LogTime::Kind::kSinceBoot) {
      const HostClock* host = clock.Find(ClockOf(event));
      if (host != nullptr && host->boot_ns != kNoTime) local[i] = host->boot_ns + event.raw_time.ns;
    }
    if (local[i] != kNoTime) event.time_ns = clock.Correct(ClockOf(event), local[i]);
  }
  std::vector<int64_t> nearby(events.size(), kNoTime), next(events.size(), kNoTime);
  for (size_t i = 0; i < events.size(); ++i) {
    int64_t before = reading(events[i].nearby_time);
    if (before != kNoTime) nearby[i] = clock.Correct(ClockOf(events[i]), before);
    int64_t after = reading(events[i].next_time);
    if (after != kNoTime) next[i] = clock.Correct(ClockOf(events[i]), after);
  }
  std::vector<int64_t> written(events.size(), kNoTime);
  for (size_t i = 0; i < events.size(); ++i) {
    int32_t file = events[i].file;
    if (file >= 0 && file < static_cast<int32_t>(logs->files.size())) {
      written[i] = logs->files[file].mtime_ns;
    }
  }
  TimeUntimedCrashes(events, nearby, next, written);
  return clock;
}

std::string FormatUtc(int64_t ns) {
  if (ns == kNoTime) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

std::string FormatRawTime(const LogTime& time) {
  switch (time.kind) {
    case LogTime::Kind::kNone:
      return "";
    case LogTime::Kind::kUtc:
      return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixNanos(time.ns),
                              absl::UTCTimeZone());
    case LogTime::Kind::kLocal:
      return absl::FormatTime("%Y-%m-%d %H:%M:%E6S", absl::FromUnixNanos(time.ns),
                              absl::UTCTimeZone()) +
             " (host local time)";
    case LogTime::Kind::kNoYear:
      return fmt::format("{:02}-{:02} ", time.month, time.day) +
             absl::FormatTime("%H:%M:%E6S", absl::FromUnixNanos(time.ns), absl::UTCTimeZone()) +
             " (no year)";
    case LogTime::Kind::kSinceBoot:
      return fmt::format("{}.{:06} s after boot", time.ns / kNanosPerSecond,
                         (time.ns % kNanosPerSecond) / 1000);
  }
  return "";
}

}  // namespace fr
