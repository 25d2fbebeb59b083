// Analyze() with logs: the dumps' verdict, then the logs on one clock, then the root cause.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/base/utf8.h"
#include "fr/clock/job_clock.h"
#include "fr/logs/log_parser.h"
#include "fr/logs/log_text.h"
#include "fr/model/op_kind.h"
#include "fr/verdict/analyze.h"
#include "fr/verdict/judgment.h"
#include "fr/verdict/report_writer.h"
#include "fr/verdict/root_cause.h"

namespace fr {
namespace {

bool Compressed(std::string_view head) {
  return head.starts_with("\x1f\x8b") || head.starts_with("\x28\xb5\x2f\xfd");
}

// The flight recorder's own times of the collectives most ranks recorded: each rank's
// time_created of one collective is the same moment give or take the skew of its enqueue, read on
// its host's clock. The most widely recorded collectives (latest first, so nearest the failure) are
// enough; every rank contributes at most this many.
constexpr size_t kDumpAnchorsPerRank = 8;

std::vector<RankAnchor> DumpAnchors(const LoadedTrace& trace) {
  struct Seen {
    int64_t members = 0;
    int64_t seq = 0;
  };
  std::map<std::string, Seen> seen;
  auto key_of = [](const RankDump& dump, const Entry& entry) {
    const ProcessGroup& group = dump.groups[entry.group];
    return fmt::format("flight recorder: {} #{} in group {}", OpKindName(entry.op),
                       entry.collective_seq_id, dump.strings.view(group.name));
  };
  for (const RankDump& dump : trace.ranks) {
    for (const Entry& entry : dump.entries) {
      if (entry.is_p2p || entry.collective_seq_id < 0 || entry.time_created_ns <= 0 ||
          entry.group >= dump.groups.size()) {
        continue;
      }
      Seen& s = seen[key_of(dump, entry)];
      ++s.members;
      s.seq = entry.collective_seq_id;
    }
  }
  std::vector<std::pair<std::string, Seen>> ranked(seen.begin(), seen.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.second.members != b.second.members) return a.second.members > b.second.members;
    return a.second.seq > b.second.seq;
  });
  if (ranked.size() > kDumpAnchorsPerRank) ranked.resize(kDumpAnchorsPerRank);
  std::set<std::string> chosen;
  for (const auto& [key, s] : ranked) {
    if (s.members >= 2) chosen.insert(key);
  }
  std::vector<RankAnchor> anchors;
  for (const RankDump& dump : trace.ranks) {
    for (const Entry& entry : dump.entries) {
      if (entry.is_p2p || entry.collective_seq_id < 0 || entry.time_created_ns <= 0 ||
          entry.group >= dump.groups.size()) {
        continue;
      }
      std::string key = key_of(dump, entry);
      if (chosen.contains(key)) {
        anchors.push_back({.key = std::move(key),
                           .rank = static_cast<int64_t>(dump.rank),
                           .ns = entry.time_created_ns});
      }
    }
  }
  return anchors;
}

// The creation time of the job's first recorded op: record 0 of every dump that still holds it
// (a wrapped ring buffer has lost it), the earliest.
int64_t FirstRecordNs(const LoadedTrace& trace) {
  int64_t first = kUnknown;
  for (const RankDump& dump : trace.ranks) {
    for (const Entry& entry : dump.entries) {
      if (entry.record_id != 0 || entry.time_created_ns <= 0) continue;
      if (first == kUnknown || entry.time_created_ns < first) first = entry.time_created_ns;
      break;
    }
  }
  return first;
}

// Per rank, when its newest completed op completed: how long it made progress.
std::map<int64_t, int64_t> LastCompletedNs(const LoadedTrace& trace) {
  std::map<int64_t, int64_t> last;
  for (const RankDump& dump : trace.ranks) {
    int64_t newest = kUnknown;
    for (const Entry& entry : dump.entries) {
      if (entry.state != EntryState::kCompleted) continue;
      int64_t at = entry.time_discovered_completed_ns > 0 ? entry.time_discovered_completed_ns
                                                          : entry.time_created_ns;
      if (at > 0 && at > newest) newest = at;
    }
    if (newest > 0) last[dump.rank] = newest;
  }
  return last;
}

// Whether a file discovery set aside may be read as other evidence: by its kind, never by how
// its reason is worded (not a dump, not a pipe, device, core or link out of the directory).
bool MayRead(const SkippedFile& file) { return MayReadAsOtherEvidence(file.kind); }

// Opens a file that MayRead and reads its first 4 KB into `head`, by which its kind is judged;
// false when it cannot be opened. Leading NUL bytes are skipped (up to 64 MiB of them): a log
// truncated in place while its writer went on starts with a hole.
bool OpenWithHead(const SkippedFile& file, std::ifstream* in, std::string* head) {
  if (!MayRead(file)) return false;
  in->open(file.path, std::ios::binary);
  if (!*in) return false;
  constexpr size_t kHeadBytes = 4096;
  constexpr int kMaxHoleBlocks = (64 << 20) / kHeadBytes;
  std::string block;
  for (int blocks = 0; blocks < kMaxHoleBlocks; ++blocks) {
    block.assign(kHeadBytes, '\0');
    in->read(block.data(), static_cast<std::streamsize>(block.size()));
    block.resize(static_cast<size_t>(in->gcount()));
    if (block.empty()) break;  // nothing but NULs: the head is the last of them
    *head = block;
    size_t first = head->find_first_not_of('\0');
    if (first == std::string::npos && head->size() == kHeadBytes) continue;
    if (first != std::string::npos && first > 0) {
      // The head starts at the first text byte, and holds up to 4 KB from there.
      head->erase(0, first);
      std::string more(first, '\0');
      in->read(more.data(), static_cast<std::streamsize>(more.size()));
      head->append(more.data(), static_cast<size_t>(in->gcount()));
    }
    break;
  }
  return true;
}

// The whole of an opened file of at most `max_bytes` (a snapshot far larger is not one), else
// nullopt.
std::optional<std::string> ReadWhole(std::ifstream* in, std::streamsize max_bytes) {
  in->clear();
  in->seekg(0, std::ios::end);
  std::streamsize size = in->tellg();
  if (size < 0 || size > max_bytes) return std::nullopt;
  std::string text(static_cast<size_t>(size), '\0');
  in->seekg(0);
  in->read(text.data(), size);
  text.resize(static_cast<size_t>(in->gcount()));
  return text;
}

// Slurm's job id in its default output name: "slurm-1234.out", "slurm-1234_7.out" (an array
// task), compressed copies too; -1 for any other name.
int64_t SlurmJobOfName(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (!name.starts_with("slurm-")) return -1;
  name.remove_prefix(6);
  int64_t id = 0;
  size_t digits = 0;
  while (digits < name.size() && digits < 18 && name[digits] >= '0' && name[digits] <= '9') {
    id = id * 10 + (name[digits] - '0');
    ++digits;
  }
  if (digits == 0) return -1;
  std::string_view rest = name.substr(digits);
  if (rest.starts_with("_")) {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  return rest.starts_with(".out") || rest.starts_with(".err") ? id : -1;
}

// Outputs of several Slurm jobs beside one job's evidence (a previous run's slurm-<id>.out left
// in the folder): Slurm numbers jobs in submission order, so the newest job is the one analysed
// and the others are set aside, named, as an older job's dumps are.
void SetAsideEarlierSlurmJobs(std::vector<std::string>* paths,
                              std::vector<LogSet::SetAside>* set_aside) {
  int64_t newest = -1;
  for (const std::string& path : *paths) newest = std::max(newest, SlurmJobOfName(path));
  if (newest < 0) return;
  std::erase_if(*paths, [&](const std::string& path) {
    int64_t job = SlurmJobOfName(path);
    if (job < 0 || job == newest) return false;
    set_aside->push_back({path, fmt::format("an earlier Slurm job's output (job {}); the logs of "
                                            "job {}, the newest, are read",
                                            job, newest)});
    return true;
  });
}

}  // namespace

bool IsOwnReport(std::string_view head) {
  if (head.starts_with("fr-analyze: ") || head.starts_with("root cause: ")) return true;
  size_t start = head.find_first_not_of(" \t\r\n");
  std::string_view text = start == std::string_view::npos ? "" : head.substr(start);
  // The HTML report (page or notebook fragment) and the JSON report: their advice and evidence
  // quote error messages that are not this job's lines.
  if (text.starts_with("<")) {
    return text.find("<meta name=\"generator\" content=\"fr-analyze") != std::string_view::npos ||
           text.find("<title>fr-analyze: ") != std::string_view::npos ||
           text.starts_with("<div class=\"fr-report\">");
  }
  return text.starts_with("{") && text.find("\"schema_version\"") != std::string_view::npos &&
         text.find("\"verdict\"") != std::string_view::npos;
}

LogSet ReadLogsBeside(const LoadedTrace& trace) {
  std::vector<std::string> paths;
  // Files looked at and not read as logs, with why: the report lists what became of each file.
  std::vector<LogSet::SetAside> set_aside;
  // A folder that holds no dump is logs, as a paste is: its text files are read although their
  // first lines are the program's own output (a paste on stdin is never asked to look like a
  // log). Beside dumps, only files that look like logs are read.
  const bool logs_only = trace.ranks.empty() && trace.rejected.empty();
  for (const SkippedFile& file : trace.skipped) {
    if (!MayRead(file)) continue;
    std::ifstream in;
    std::string head;
    if (!OpenWithHead(file, &in, &head)) {
      set_aside.push_back({file.path, "not read as a log: it cannot be opened"});
      continue;
    }
    if (MonitorFormatOf(head) != MonitorFormat::kNone) continue;  // ReadMonitorsBeside's
    if (LooksLikeStackSnapshot(head, file.path)) continue;        // ReadStacksBeside's
    if (LooksLikeDebugServerSnapshot(head, file.path)) {
      set_aside.push_back({file.path,
                           "a debug server snapshot (its tables or health check), not a log; "
                           "only its stacks snapshots are read"});
      continue;
    }
    if (IsOwnReport(head)) {
      set_aside.push_back({file.path,
                           "an fr-analyze report, not read as a log (the lines it "
                           "quotes are read from their own files)"});
      continue;
    }
    bool named_log = file.kind == SetAsideKind::kLogByName;
    if (LooksLikeLog(head) || (named_log && Compressed(head)) ||
        (logs_only && LooksLikeText(head))) {
      paths.push_back(file.path);
    } else {
      set_aside.push_back({file.path, fmt::format("not a log: {}", DescribeNonLog(head))});
    }
  }
  SetAsideEarlierSlurmJobs(&paths, &set_aside);
  if (paths.empty()) {
    LogSet none;
    none.set_aside = std::move(set_aside);
    return none;
  }
  LogParseOptions options;
  options.any_text_is_log = logs_only;
  absl::StatusOr<LogSet> logs = ParseLogFiles(paths, options);
  if (!logs.ok()) {
    LogSet failed;
    failed.errors.push_back(std::string(logs.status().message()));
    failed.set_aside = std::move(set_aside);
    return failed;
  }
  logs->set_aside.insert(logs->set_aside.end(), std::make_move_iterator(set_aside.begin()),
                         std::make_move_iterator(set_aside.end()));
  for (LogFile& file : logs->files) {
    struct stat info;
    if (::stat(file.path.c_str(), &info) == 0) {
      file.mtime_ns = int64_t{info.st_mtim.tv_sec} * 1'000'000'000 + info.st_mtim.tv_nsec;
    }
  }
  return *std::move(logs);
}

MonitorSnapshots ReadMonitorsBeside(const LoadedTrace& trace, const std::string& source,
                                    const LogSet* logs) {
  // A monitor log of a long job is a few MB per host; anything far larger is not one.
  constexpr std::streamsize kMaxMonitorBytes = std::streamsize{256} << 20;
  MonitorSnapshots snapshots;
  for (const SkippedFile& file : trace.skipped) {
    std::ifstream in;
    std::string head;
    if (!OpenWithHead(file, &in, &head) || MonitorFormatOf(head) == MonitorFormat::kNone) {
      continue;
    }
    std::optional<std::string> text = ReadWhole(&in, kMaxMonitorBytes);
    if (!text) continue;
    // The host: the folder the file sits in, below the directory analysed.
    std::string_view relative = file.path;
    if (!source.empty() && relative.starts_with(source)) relative.remove_prefix(source.size());
    while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
    std::string host;
    if (size_t slash = relative.rfind('/'); slash != std::string_view::npos) {
      std::string_view folder = relative.substr(0, slash);
      if (size_t parent = folder.rfind('/'); parent != std::string_view::npos) {
        folder.remove_prefix(parent + 1);
      }
      host = std::string(folder);
    }
    // A file that is not one after all (no header line) is simply not a monitor snapshot.
    (void)ParseMonitorFile(file.path, *text, host, &snapshots);
  }
  if (logs != nullptr) AssignGpuRanks(*logs, &snapshots);
  return snapshots;
}

StackSnapshots ReadStacksBeside(const LoadedTrace& trace) {
  // A snapshot holds one stack per thread per rank: tens of KB per rank, a few hundred MB for the
  // largest jobs.
  constexpr std::streamsize kMaxStacksBytes = std::streamsize{512} << 20;
  StackSnapshots stacks;
  for (const SkippedFile& file : trace.skipped) {
    std::ifstream in;
    std::string head;
    if (!OpenWithHead(file, &in, &head) || !LooksLikeStackSnapshot(head, file.path)) continue;
    std::optional<std::string> text = ReadWhole(&in, kMaxStacksBytes);
    if (!text) continue;
    // One that holds no rank block after all is simply not a snapshot (listed as set aside).
    (void)ParseStackSnapshot(file.path, *text, &stacks);
  }
  return stacks;
}

namespace {

// Says what became of each file the loader set aside as no dump: read as a log or a GPU monitor
// snapshot, or, for a file that may be read but was not, why it is not a log either. Without
// this a log that could not be read would be listed like one that was.
void SayWhatSkippedFilesWereReadAs(const LoadedTrace& trace, const LogSet* logs,
                                   const MonitorSnapshots* monitors, const StackSnapshots* stacks,
                                   report::Report* report) {
  std::set<std::string> logs_read, monitors_read, stacks_read;
  if (stacks != nullptr) stacks_read.insert(stacks->files.begin(), stacks->files.end());
  std::map<std::string, std::string> not_read;
  if (logs != nullptr) {
    for (const LogFile& file : logs->files) logs_read.insert(file.path);
    for (const LogSet::SetAside& file : logs->set_aside) not_read.emplace(file.path, file.reason);
  }
  if (monitors != nullptr) monitors_read.insert(monitors->files.begin(), monitors->files.end());
  std::map<std::string, const SkippedFile*> may_read;
  for (const SkippedFile& file : trace.skipped) {
    if (MayRead(file)) may_read.emplace(ValidUtf8(file.path), &file);
  }
  for (report::SkippedFile& out : *report->mutable_inputs()->mutable_files_skipped()) {
    auto it = may_read.find(out.path());
    if (it == may_read.end()) continue;  // its reason says why it is never read
    const std::string& path = it->second->path;
    if (logs_read.contains(path)) {
      out.set_read_as("log");
    } else if (monitors_read.contains(path)) {
      out.set_read_as("gpu_monitor");
    } else if (stacks_read.contains(path)) {
      out.set_read_as("python_stacks");
    } else if (auto reason = not_read.find(path); reason != not_read.end()) {
      out.set_reason(ValidUtf8(fmt::format("{}; {}", out.reason(), reason->second)));
    } else if (logs != nullptr) {
      out.set_reason(
          fmt::format("{}; not read as a log, GPU monitor or stacks snapshot", out.reason()));
    }
  }
}

}  // namespace

report::Report Analyze(const LoadedTrace& trace, LogSet* logs, const AnalyzeOptions& options) {
  return Diagnose(trace, logs, options).report;
}

Diagnosis Diagnose(const LoadedTrace& trace, LogSet* logs, const AnalyzeOptions& options) {
  AnalyzeOptions with_deaths = options;
  if (logs != nullptr && !trace.ranks.empty() && !logs->events.empty()) {
    // Who died is known before the dumps are judged: a death ends the op its peers were in.
    ResolveIdentities(logs, JobWorldSize(trace));
    with_deaths.died_ranks = RanksTheLogsSayDied(*logs);
  }
  Judgment judgment;
  Diagnosis diagnosis;
  report::Report& report = diagnosis.report;
  report = AnalyzeInto(trace, with_deaths, &judgment);
  diagnosis.failed = IsFailureClass(judgment.verdict.failure_class);
  judgment.first_record_ns = FirstRecordNs(trace);
  judgment.last_completed_ns = LastCompletedNs(trace);
  SayWhatSkippedFilesWereReadAs(trace, logs, options.monitors, options.stacks, &report);
  if (logs == nullptr || (logs->files.empty() && logs->errors.empty())) return diagnosis;
  ClockHints hints;
  // The dumps' own newest record dates year-less log lines when no log line carries a year: it
  // is the job's content. Their file times come next: a copy (cp without -p, an archive
  // unpacked a year later) moves them, and the lines would take the copy's year.
  int64_t newest_record = kUnknown;
  for (int64_t ns : judgment.index.dump_times.newest_record) {
    if (ns > 0) newest_record = std::max(newest_record, ns);
  }
  if (newest_record > 0) {
    hints.near_ns = newest_record;
  } else if (!trace.ranks.empty() && judgment.matched.dump_time_ns > 0) {
    hints.near_ns = judgment.matched.dump_time_ns;
  } else {
    // Else the logs' own modification times: when their last lines were written.
    std::vector<int64_t> mtimes;
    for (const LogFile& file : logs->files) {
      if (file.mtime_ns != kNoTime) mtimes.push_back(file.mtime_ns);
    }
    if (!mtimes.empty()) {
      std::nth_element(mtimes.begin(), mtimes.begin() + mtimes.size() / 2, mtimes.end());
      hints.near_ns = mtimes[mtimes.size() / 2];
    }
  }
  hints.rank_anchors = DumpAnchors(trace);
  JobClock clock = AlignClocks(logs, hints);
  // Live stacks decide a verdict as dumps do: the logs then join it rather than replace it.
  bool have_verdict =
      !trace.ranks.empty() || (options.stacks != nullptr && !options.stacks->snapshots.empty());
  LogsAnswer answer = ExplainFromLogs(*logs, clock, have_verdict ? &judgment : nullptr, &report);
  diagnosis.failed = IsFailureClass(answer.failure_class) || answer.kind != RootCauseKind::kNone;
  return diagnosis;
}

}  // namespace fr
