// libFuzzer target for reading logs: bytes -> one log (lib/fr/logs) -> one clock -> root cause ->
// text and JSON reports. Any text must give a report, never a crash, a hang or unbounded memory,
// and the report must be coherent: a root-cause kind of the contract, its ranks never also
// victims, valid UTF-8 JSON. The same bytes are read as a monitor snapshot (lib/fr/monitor) too,
// its GPUs tied to the log's ranks, and its findings must name only ranks the log named.
//
//   cmake --preset fuzz && cmake --build build/fuzz --target log_fuzzer
//   build/fuzz/fuzz/log_fuzzer -max_total_time=60 tests/data/fuzz/logs
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "fr/load/load.h"
#include "fr/logs/log_parser.h"
#include "fr/monitor/monitor_snapshots.h"
#include "fr/report/report_format.h"
#include "fr/verdict/analyze.h"

namespace {

void Check(bool condition, const char* invariant) {
  if (condition) return;
  std::fprintf(stderr, "log analysis invariant broken: %s\n", invariant);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fr::LogSet logs;
  fr::LogParseOptions options;
  options.max_events_per_file = 10'000;
  Check(fr::ParseLogText("fuzz.log", text, &logs, options).ok(), "parsing text never fails");
  fr::report::Report report = fr::Analyze(fr::LoadedTrace(), &logs, fr::AnalyzeOptions{});
  static const std::set<std::string> kKinds = {
      "xid",          "host_oom",        "cuda_oom",
      "host_kill",    "transport_error", "python_exception",
      "cuda_error",   "segfault",        "collective_timeout",
      "init_failure", "non_finite",      "none",
      "unknown"};
  const fr::report::RootCause& cause = report.verdict().root_cause();
  Check(kKinds.contains(cause.kind()), "the root-cause kind is one of the contract's");
  std::set<int32_t> victims(report.verdict().victim_ranks().begin(),
                            report.verdict().victim_ranks().end());
  for (int32_t rank : report.verdict().culprit_ranks()) {
    Check(!victims.contains(rank), "a culprit is never also a victim");
  }
  Check(!fr::FormatReportText(report).empty(), "the text report is not empty");
  Check(fr::FormatReportJson(report).ok(), "the report serializes to JSON");

  fr::MonitorSnapshots snapshots;
  (void)fr::ParseMonitorFile("fuzz.txt", text, "node00", &snapshots);
  fr::AssignGpuRanks(logs, &snapshots);
  std::set<int32_t> log_ranks;
  for (const fr::LogEvent& event : logs.events) log_ranks.insert(event.rank);
  for (const fr::MonitorFinding& finding : fr::FindMonitorAnomalies(snapshots)) {
    Check(!finding.summary.empty(), "a monitor finding says what it is");
    for (int32_t rank : finding.ranks) {
      Check(log_ranks.contains(rank), "a GPU's rank is one the logs named");
    }
  }

  return 0;
}
