#include "fr/clock/job_clock.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "fr/logs/log_parser.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

// A log file known by its path only.
LogFile NamedFile(std::string path) {
  LogFile file;
  file.path = std::move(path);
  file.format = "test";
  return file;
}

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1000 * kMs;

int64_t Utc(int year, int month, int day, int hour, int minute, int second) {
  return absl::ToUnixNanos(absl::FromCivil(
      absl::CivilSecond(year, month, day, hour, minute, second), absl::UTCTimeZone()));
}

// A job's logs written by hosts whose clocks are off by known amounts.
class SkewedJob {
 public:
  explicit SkewedJob(int ranks_per_host) : ranks_per_host_(ranks_per_host) {}

  void AddHost(const std::string& host, int64_t offset_ns) {
    offsets_.push_back({host, offset_ns});
  }

  // Every rank of every host times out in SeqNum `seq`, enqueued at `true_enqueue_ns` (+ a few
  // ms of scatter), `timeout_ms` later (+ up to a second of watchdog polling).
  void TimeOut(int64_t seq, int64_t true_enqueue_ns, int64_t timeout_ms, LogSet* logs) {
    int rank = 0;
    for (const auto& [host, offset] : offsets_) {
      for (int local = 0; local < ranks_per_host_; ++local, ++rank) {
        int64_t enqueue = true_enqueue_ns + (rank % 7) * kMs;
        int64_t ran_for_ms = timeout_ms + (rank * 37) % 900;
        LogEvent event;
        event.kind = LogEventKind::kWatchdogTimeout;
        event.file = File(logs, host);
        event.rank = rank;
        event.host = host;
        event.seq = seq;
        event.timeout_ms = timeout_ms;
        event.ran_for_ms = ran_for_ms;
        event.raw_time = {.kind = LogTime::Kind::kLocal, .ns = enqueue + ran_for_ms * kMs + offset};
        logs->events.push_back(event);
      }
    }
  }

  int32_t File(LogSet* logs, const std::string& host) {
    for (size_t i = 0; i < logs->files.size(); ++i) {
      if (logs->files[i].path == host + ".log") return static_cast<int32_t>(i);
    }
    logs->files.push_back(NamedFile(host + ".log"));
    return static_cast<int32_t>(logs->files.size() - 1);
  }

  const std::vector<std::pair<std::string, int64_t>>& offsets() const { return offsets_; }

 private:
  int ranks_per_host_;
  std::vector<std::pair<std::string, int64_t>> offsets_;
};

TEST(JobClockTest, HostOffsetsAreRecoveredFromSharedTimeouts) {
  SkewedJob job(8);
  job.AddHost("node00", 0);
  job.AddHost("node01", 42 * kSecond);
  job.AddHost("node02", -75 * kSecond);
  job.AddHost("node03", 3 * kSecond);
  job.AddHost("node04", -1 * kSecond);
  LogSet logs;
  job.TimeOut(2383, Utc(2026, 12, 1, 12, 0, 0), 600'000, &logs);
  JobClock clock = AlignClocks(&logs, {});
  ASSERT_EQ(clock.hosts.size(), 5u);
  // Offsets are relative to the consensus; their differences are what the hosts' clocks differ
  // by, within the scatter of the anchors.
  const HostClock* reference = clock.Find("node00");
  ASSERT_NE(reference, nullptr);
  for (const auto& [host, offset] : job.offsets()) {
    const HostClock* estimate = clock.Find(host);
    ASSERT_NE(estimate, nullptr) << host;
    EXPECT_LE(std::llabs((estimate->offset_ns - reference->offset_ns) - offset), 50 * kMs) << host;
    EXPECT_EQ(estimate->confidence, Confidence::kHigh) << host;
    EXPECT_NE(estimate->method.find("SeqNum 2383"), std::string::npos) << estimate->method;
  }
  // Corrected, the enqueues (time minus ran-for) agree across hosts.
  int64_t low = INT64_MAX, high = INT64_MIN;
  for (const LogEvent& event : logs.events) {
    int64_t enqueue = event.time_ns - event.ran_for_ms * kMs;
    low = std::min(low, enqueue);
    high = std::max(high, enqueue);
  }
  EXPECT_LE(high - low, 100 * kMs);
}

TEST(JobClockTest, YearlessDatesTakeTheYearNearestTheDatedLines) {
  LogSet logs;
  logs.files.push_back(NamedFile("a.log"));
  LogEvent dated;
  dated.file = 0;
  dated.kind = LogEventKind::kRendezvous;
  dated.raw_time = {.kind = LogTime::Kind::kLocal, .ns = Utc(2027, 1, 1, 0, 0, 10)};
  LogEvent glog;
  glog.file = 0;
  glog.kind = LogEventKind::kWatchdogTimeout;
  glog.raw_time = {.kind = LogTime::Kind::kNoYear,
                   .ns = (23 * 3600 + 59 * 60 + 50) * kSecond,
                   .month = 12,
                   .day = 31};
  logs.events = {dated, glog};
  // Analysed the day after (a line dated after the analysis would be impossible).
  ClockHints hints;
  hints.now_ns = Utc(2027, 1, 2, 0, 0, 0);
  AlignClocks(&logs, hints);
  EXPECT_EQ(logs.events[1].time_ns, Utc(2026, 12, 31, 23, 59, 50));
}

TEST(JobClockTest, XidNamingOnlyABusIdIsGivenTheRankOnThatGpu) {
  LogSet logs;
  logs.files.push_back(NamedFile("node07/nccl.log"));
  logs.files.push_back(NamedFile("node07/dmesg"));
  for (int dev = 0; dev < 8; ++dev) {
    LogEvent init;
    init.file = 0;
    init.kind = LogEventKind::kNcclInit;
    init.host = "node07";
    init.rank = 56 + dev;
    init.nranks = 64;
    init.cuda_dev = dev;
    init.bus_id = dev == 3 ? "0000:3b:00" : "0000:" + std::to_string(10 + dev) + ":00";
    logs.events.push_back(init);
  }
  LogEvent xid;
  xid.file = 1;
  xid.kind = LogEventKind::kXid;
  xid.host = "node07";
  xid.xid = 79;
  xid.bus_id = "0000:3b:00";
  logs.events.push_back(xid);
  ResolveIdentities(&logs);
  EXPECT_EQ(logs.events.back().rank, 59);
}

TEST(JobClockTest, DriftIsEstimatedFromAnchorsHoursApart) {
  SkewedJob job(4);
  job.AddHost("node00", 0);
  job.AddHost("node01", 0);
  job.AddHost("node02", 0);
  LogSet logs;
  int64_t start = Utc(2026, 12, 1, 2, 0, 0);
  job.TimeOut(10, start, 1000, &logs);
  int64_t later = start + 10 * 3600 * kSecond;
  job.TimeOut(5000, later, 1000, &logs);
  // node02 gains 100 ppm: 3.6 s over the 10 hours.
  for (LogEvent& event : logs.events) {
    if (event.host != "node02") continue;
    event.raw_time.ns += (event.raw_time.ns - start) / 10'000;
  }
  JobClock clock = AlignClocks(&logs, {});
  const HostClock* fast = clock.Find("node02");
  ASSERT_NE(fast, nullptr);
  EXPECT_NEAR(fast->drift_ppm, 100, 10);
  EXPECT_NE(fast->method.find("drift"), std::string::npos);
}

TEST(JobClockTest, KernelSecondsSinceBootArePlacedBeforeTheStall) {
  SkewedJob job(4);
  job.AddHost("node00", 0);
  job.AddHost("node01", 20 * kSecond);
  LogSet logs;
  job.TimeOut(7, Utc(2026, 12, 1, 12, 0, 0), 600'000, &logs);
  LogEvent xid;
  xid.file = job.File(&logs, "node01-dmesg");
  xid.kind = LogEventKind::kXid;
  xid.host = "node01";
  xid.raw_time = {.kind = LogTime::Kind::kSinceBoot, .ns = 98765 * kSecond};
  logs.events.push_back(xid);
  JobClock clock = AlignClocks(&logs, {});
  // The stall's enqueue on the corrected clock (the consensus of the two hosts).
  int64_t stalled = INT64_MAX;
  for (const LogEvent& event : logs.events) {
    if (event.kind == LogEventKind::kWatchdogTimeout) {
      stalled = std::min(stalled, event.time_ns - event.ran_for_ms * kMs);
    }
  }
  const LogEvent& placed = logs.events.back();
  ASSERT_NE(placed.time_ns, kNoTime);
  EXPECT_LT(placed.time_ns, stalled);
  EXPECT_GT(placed.time_ns, stalled - kSecond);
  EXPECT_EQ(clock.Find("node01")->confidence, Confidence::kLow);
}

TEST(JobClockTest, DumpTimesOfSharedCollectivesAnchorHostsTheLogsTieRanksTo) {
  // Logs with no shared timed event: each host printed one untimed NCCL init per rank (which ties
  // rank to host) and one timed line. The dumps recorded the same collectives on every rank, each
  // on its host's clock.
  const std::vector<std::pair<std::string, int64_t>> hosts = {
      {"node00", 0}, {"node01", 37 * kSecond}, {"node02", -12 * kSecond}};
  LogSet logs;
  ClockHints hints;
  int64_t noon = Utc(2026, 12, 1, 12, 0, 0);
  for (size_t h = 0; h < hosts.size(); ++h) {
    logs.files.push_back(NamedFile(hosts[h].first + ".log"));
    for (int local = 0; local < 2; ++local) {
      int rank = static_cast<int>(h) * 2 + local;
      LogEvent init;
      init.file = static_cast<int32_t>(h);
      init.kind = LogEventKind::kNcclInit;
      init.host = hosts[h].first;
      init.comm_rank = rank;
      init.nranks = 6;
      logs.events.push_back(init);
      for (int seq = 100; seq < 103; ++seq) {
        hints.rank_anchors.push_back(
            {.key = "flight recorder: all_reduce #" + std::to_string(seq) + " in group 0",
             .rank = rank,
             .ns = noon + seq * kSecond + rank * kMs + hosts[h].second});
      }
    }
  }
  JobClock clock = AlignClocks(&logs, hints);
  const HostClock* reference = clock.Find("node00");
  ASSERT_NE(reference, nullptr);
  for (const auto& [host, offset] : hosts) {
    const HostClock* estimate = clock.Find(host);
    ASSERT_NE(estimate, nullptr) << host;
    EXPECT_LE(std::llabs((estimate->offset_ns - reference->offset_ns) - offset), 20 * kMs) << host;
    EXPECT_NE(estimate->method.find("flight recorder"), std::string::npos) << estimate->method;
  }
}

TEST(JobClockTest, TimesAreFormattedAsRfc3339Utc) {
  EXPECT_EQ(FormatUtc(Utc(2026, 3, 14, 11, 21, 20) + 770 * kMs), "2026-03-14T11:21:20.770Z");
  EXPECT_EQ(FormatUtc(kNoTime), "");
  LogTime boot{.kind = LogTime::Kind::kSinceBoot, .ns = 1234 * kSecond + 567890 * 1000};
  EXPECT_EQ(FormatRawTime(boot), "1234.567890 s after boot");
}

// A real torchrun job (torch 2.13.0, one agent, rank 2 segfaulted): the --log-dir file
// ".../attempt_0/2/stderr.log" names no host and only a local rank; the agent's console ties
// local rank 2 to rank 2, so the faulthandler block in that file is rank 2's too.
TEST(JobClockTest, LogDirFilesOfOneAgentTakeTheGlobalRankOfTheirLocalRank) {
  std::string job = std::string(FR_TEST_DATA_DIR) + "/torchrun/2.13.0/segfault";
  std::vector<std::string> paths = {job + "/console.log"};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(job + "/logdir")) {
    if (entry.is_regular_file()) paths.push_back(entry.path().string());
  }
  absl::StatusOr<LogSet> logs = ParseLogFiles(paths);
  ASSERT_TRUE(logs.ok()) << logs.status();
  ResolveIdentities(&*logs);
  int from_log_dir = 0;
  for (const LogEvent& event : logs->events) {
    if (event.kind != LogEventKind::kSegfault) continue;
    EXPECT_EQ(event.rank, 2) << logs->files[event.file].path << ": " << event.text;
    if (logs->files[event.file].path.find("/attempt_0/2/") != std::string::npos) ++from_log_dir;
  }
  EXPECT_EQ(from_log_dir, 1);
}

// A real torchrun job (torch 2.13.0, one agent, rank 2 segfaulted) whose agent raised
// JSONDecodeError on an empty error.json before it printed its failure table: no line ties
// "[default2]:" to a global rank. The dumps' world of 4 and a worker with local rank 3 show
// that one agent ran every rank, so local rank 2 is rank 2; in a larger world, or with the world
// unknown, the faulthandler block keeps no rank.
TEST(JobClockTest, OneAgentThatRanTheWholeWorldGivesLocalRanksAsGlobal) {
  std::string job = std::string(FR_TEST_DATA_DIR) + "/torchrun/2.13.0/segfault_agent_crash";
  std::vector<std::string> paths = {job + "/console.log"};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(job + "/logdir")) {
    if (entry.is_regular_file()) paths.push_back(entry.path().string());
  }
  for (int64_t world : {int64_t{4}, int64_t{8}, int64_t{-1}}) {
    absl::StatusOr<LogSet> logs = ParseLogFiles(paths);
    ASSERT_TRUE(logs.ok()) << logs.status();
    ResolveIdentities(&*logs, world);
    int segfaults = 0;
    for (const LogEvent& event : logs->events) {
      if (event.kind != LogEventKind::kSegfault) continue;
      ++segfaults;
      // World 4: one launcher started every rank. World 8: a second agent ran ranks 4-7, so
      // local 2 is rank 2 or 6. No world size (logs alone): one agent and one host, so rank 2,
      // said to be assumed (right on one node, which these logs cannot prove).
      EXPECT_EQ(event.rank, world == 8 ? -1 : 2)
          << "world " << world << ": " << logs->files[event.file].path << ": " << event.text;
      EXPECT_EQ(event.rank_assumed, world == -1) << "world " << world;
    }
    EXPECT_EQ(segfaults, 2) << "the console's block and the --log-dir file's";
  }
}

// Two agents on one host: local rank 2 is rank 2 on one and rank 6 on the other, so a log-dir
// file that names neither its host nor its node keeps no rank rather than a wrong one.
TEST(JobClockTest, LogDirLocalRankOfSeveralAgentsStaysUnresolved) {
  LogSet logs;
  logs.files.push_back(NamedFile("console0.log"));
  logs.files.push_back(NamedFile("logdir/run/attempt_0/2/stderr.log"));
  logs.files.back().local_rank = 2;
  for (int32_t rank : {2, 6}) {
    LogEvent table;
    table.file = 0;
    table.kind = LogEventKind::kRootCauseTable;
    table.host = "localhost";
    table.rank = rank;
    table.local_rank = 2;
    logs.events.push_back(table);
  }
  LogEvent crash;
  crash.file = 1;
  crash.kind = LogEventKind::kSegfault;
  logs.events.push_back(crash);
  ResolveIdentities(&logs);
  EXPECT_EQ(logs.events.back().rank, -1);
}

// A traceback carries no time; its rank's death reported by the launcher dates it, unless the
// file was last written long before that death (a previous run's log kept beside the job).
TEST(JobClockTest, AnUntimedCrashIsDatedByItsRanksDeathOnlyIfItsFileCouldBeThatLate) {
  int64_t death = Utc(2026, 12, 3, 6, 48, 18);
  for (int64_t written : {death + kSecond, death - 24 * 3600 * kSecond}) {
    LogSet logs;
    logs.files.push_back(NamedFile("console.log"));
    logs.files.push_back(NamedFile("logdir/run/attempt_0/2/stderr.log"));
    logs.files.back().mtime_ns = written;
    LogEvent died;
    died.file = 0;
    died.kind = LogEventKind::kRootCauseTable;
    died.host = "localhost";
    died.rank = 2;
    died.raw_time = {.kind = LogTime::Kind::kLocal, .ns = death};
    LogEvent traceback;
    traceback.file = 1;
    traceback.kind = LogEventKind::kPythonException;
    traceback.rank = 2;
    logs.events = {died, traceback};
    AlignClocks(&logs, {});
    const LogEvent& crash = logs.events[1];
    if (written > death) {
      EXPECT_TRUE(crash.time_inferred);
      EXPECT_NEAR(crash.time_ns, death, kSecond);
    } else {
      EXPECT_EQ(crash.time_ns, kNoTime);
      // Its file's last write, give or take ten minutes of the file clock's error.
      EXPECT_GE(crash.time_upper_ns, written);
      EXPECT_LT(crash.time_upper_ns, death - 3600 * kSecond);
    }
  }
}

}  // namespace
}  // namespace fr
