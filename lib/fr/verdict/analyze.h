// The verdict: from the per-rank dumps of a hung or crashed job to a Report that names the
// initiating rank(s), separates them from the victims, classifies the failure, shows the evidence
// and says what to do next (docs/report-contract.md: failure classes and the report).
//
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, LoadTrace(dir));
//   report::Report report = Analyze(trace, {.source = dir});
//   report.verdict().failure_class();   // "missing_participant"
//   report.verdict().culprit_ranks();   // {37}
//
// The stages: BuildJobIndex (groups across ranks) -> MatchJob (per-group matching, blocked heads)
// -> WaitForGraph (culprits are its sinks) -> classification, findings, stragglers -> Report.
#ifndef FR_VERDICT_ANALYZE_H_
#define FR_VERDICT_ANALYZE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fr/logs/log_event.h"
#include "fr/model/loaded_trace.h"
#include "fr/monitor/monitor_snapshots.h"
#include "fr/report.pb.h"
#include "fr/stacks/python_stacks.h"
#include "fr/verdict/stack_evidence.h"

namespace fr {

// Where an analysis spent its time (wall clock, ns), for `--timings`: matching includes the
// stragglers, found beside it on another core; the verdict is the findings and the judgment.
struct AnalyzeTimings {
  int64_t index_ns = 0;
  int64_t match_ns = 0;
  int64_t verdict_ns = 0;
  int64_t report_ns = 0;  // the report message, from the judgment
};

struct AnalyzeOptions {
  // The directory or files analysed, echoed in the report.
  std::string source;
  // When the dumps were taken (ns since the epoch); kUnknown: from the files' modification times.
  int64_t dump_time_ns = kUnknown;
  // Only report process groups whose name or desc is listed (empty: all). Matching still uses
  // every group, so a culprit outside the filter is still found.
  std::vector<std::string> pg_filter;
  // Findings per kind beyond which only a count is kept (the analysis itself never stops early).
  int max_findings_per_kind = 20;
  // Monitor snapshots read beside the dumps (ReadMonitorsBeside), or nullptr: what they show
  // (the NCCL hang signature, an idle GPU among busy ones, uneven memory, workers outliving their
  // launcher) becomes findings.
  const MonitorSnapshots* monitors = nullptr;
  // Live Python stacks read beside the dumps (ReadStacksBeside: PyTorch's debug-server snapshots,
  // `fr-analyze live`), or nullptr: where each rank's main thread is, joined to the verdict
  // (lib/fr/verdict/stack_evidence.h).
  const StackSnapshots* stacks = nullptr;
  // How long a rank's stack must stay outside communication, unchanged across snapshots while
  // its peers wait, before the stacks alone make it the culprit.
  int64_t stacks_stalled_ns = kStalledSpanNs;
  // Threads for the analysis (indexing, matching); 0: one per core. The report is the same on
  // any number.
  int jobs = 0;
  // Ranks the job's logs say died (RanksTheLogsSayDied), which the dumps cannot show: the op
  // their peers were in ended in the error of that death.
  std::vector<int64_t> died_ranks;
  // Filled in when given; the report does not depend on it.
  AnalyzeTimings* timings = nullptr;
};

report::Report Analyze(const LoadedTrace& trace, const AnalyzeOptions& options);

// The dumps and the job's logs together; either may be empty (`trace.ranks` empty: logs alone,
// e.g. one log pasted on stdin). Puts the logs on one clock (lib/fr/clock: fills each event's
// rank, host and corrected time, hence the pointer) and adds the root cause, the hosts' clocks
// and the logs read to the dumps' report (root_cause.h says how the two answers are joined).
report::Report Analyze(const LoadedTrace& trace, LogSet* logs, const AnalyzeOptions& options);

// A report and whether it shows a failure: the verdict's class is one, or the logs name a root
// cause (exit status 1 of `fr-analyze analyze`). Decided on the typed verdict and the logs'
// answer, never on the report's words.
struct Diagnosis {
  report::Report report;
  bool failed = false;
};

// Analyze, with the decision beside the report.
Diagnosis Diagnose(const LoadedTrace& trace, const AnalyzeOptions& options);
Diagnosis Diagnose(const LoadedTrace& trace, LogSet* logs, const AnalyzeOptions& options);

// The logs among the files that discovery set aside as not being dumps, recognized by their
// content (lib/fr/logs LooksLikeLog; compressed files named like logs too), parsed. Links out of
// the input, hidden files, pipes and core files are never read.
LogSet ReadLogsBeside(const LoadedTrace& trace);

// Whether a file whose first bytes (a few KB) are `head` is a report fr-analyze wrote (text,
// HTML page or notebook fragment, JSON): it quotes log lines as evidence and advice that names
// error messages, so it is never read as a log, and an output may replace it.
bool IsOwnReport(std::string_view head);

// The monitor snapshots among the files beside the dumps, by content (nvidia-smi CSV logs and
// `-q` reports, `dcgmi dmon` output, `ps` listings: see lib/fr/monitor), each host named by the
// folder it is in below `source` (the directory analysed). With `logs`, each GPU gets the rank
// whose NCCL init line on that host names its PCI bus id.
MonitorSnapshots ReadMonitorsBeside(const LoadedTrace& trace, const std::string& source,
                                    const LogSet* logs = nullptr);

// The debug server's stacks snapshots among the files beside the dumps (`stacks_<time>.txt`, by
// content: lib/fr/stacks), oldest first.
StackSnapshots ReadStacksBeside(const LoadedTrace& trace);

}  // namespace fr

#endif  // FR_VERDICT_ANALYZE_H_
