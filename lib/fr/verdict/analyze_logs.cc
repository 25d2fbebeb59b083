// Analyze() with logs: the dumps' verdict, then the logs on one clock, then the root cause.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "fr/clock/job_clock.h"
#include "fr/logs/log_parser.h"
#include "fr/verdict/analyze.h"
#include "fr/verdict/root_cause.h"

namespace fr {
namespace {

// Reasons discovery gives for files that must not be read at all.
bool NeverRead(std::string_view reason) {
  for (std::string_view word : {"symlink", "hidden", "pipe", "core file", "directory", "same file",
                                "unreadable", "cannot"}) {
    if (reason.find(word) != std::string_view::npos) return true;
  }
  return false;
}

bool Compressed(std::string_view head) {
  return head.starts_with("\x1f\x8b") || head.starts_with("\x28\xb5\x2f\xfd");
}

// A text report fr-analyze wrote into the directory (`-o DIR/report.txt`): it quotes log lines
// as evidence, and read as a log it would count them twice on the next run.
bool IsOwnReport(std::string_view head) {
  return head.starts_with("fr-analyze: ") || head.starts_with("root cause: ");
}

}  // namespace

LogSet ReadLogsBeside(const LoadedTrace& trace) {
  std::vector<std::string> paths;
  for (const SkippedFile& file : trace.skipped) {
    if (file.rank >= 0 || NeverRead(file.reason)) continue;
    std::ifstream in(file.path, std::ios::binary);
    if (!in) continue;
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    if (IsOwnReport(head)) continue;
    bool named_log = file.reason == "log file";
    if (LooksLikeLog(head) || (named_log && Compressed(head))) paths.push_back(file.path);
  }
  if (paths.empty()) return LogSet();
  absl::StatusOr<LogSet> logs = ParseLogFiles(paths);
  if (!logs.ok()) {
    LogSet failed;
    failed.errors.push_back(std::string(logs.status().message()));
    return failed;
  }
  for (LogFile& file : logs->files) {
    struct stat info;
    if (::stat(file.path.c_str(), &info) == 0) {
      file.mtime_ns = int64_t{info.st_mtim.tv_sec} * 1'000'000'000 + info.st_mtim.tv_nsec;
    }
  }
  return *std::move(logs);
}

report::Report Analyze(const LoadedTrace& trace, LogSet* logs, const AnalyzeOptions& options) {
  report::Report report = Analyze(trace, options);
  if (logs == nullptr || (logs->files.empty() && logs->errors.empty())) return report;
  ClockHints hints;
  // The dumps' time dates year-less log lines when no log line carries a year.
  if (!trace.ranks.empty() && report.inputs().dump_time_ns() > 0) {
    hints.near_ns = report.inputs().dump_time_ns();
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
  JobClock clock = AlignClocks(logs, hints);
  ExplainFromLogs(*logs, clock, /*have_dumps=*/!trace.ranks.empty(), &report);
  return report;
}

}  // namespace fr
