// libFuzzer target for rank summaries read back (what Dask workers send): bytes -> summaries of
// several ranks -> RankDumps -> the whole analysis -> JSON report. A summary that ParseRankDump
// accepts must be one the analysis can walk: any input gives an error or a report, never a
// crash, an out-of-bounds read or a hang.
//
//   cmake --preset fuzz && cmake --build build/fuzz --target summary_fuzzer
//   build/fuzz/fuzz/summary_fuzzer -max_total_time=60 tests/data/fuzz/summary
//
// The input is the RankSummary messages of ranks 0, 1, ... joined by kSeparator (the seeds are
// a simulated job's), so that the fuzzer mutates within and across ranks.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "fr/model/loaded_trace.h"
#include "fr/report/report_format.h"
#include "fr/summary/rank_summary.h"
#include "fr/verdict/analyze.h"

namespace {

constexpr std::string_view kSeparator = "\n--fr-rank--\n";
constexpr size_t kMaxRanks = 16;

void Check(bool condition, const char* invariant) {
  if (condition) return;
  std::fprintf(stderr, "summary invariant broken: %s\n", invariant);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  fr::LoadedTrace trace;
  std::set<int64_t> ranks;
  for (size_t n = 0; !input.empty() && n < kMaxRanks; ++n) {
    size_t end = input.find(kSeparator);
    std::string_view chunk = input.substr(0, end);
    input =
        end == std::string_view::npos ? std::string_view() : input.substr(end + kSeparator.size());
    absl::StatusOr<fr::RankDump> dump = fr::ParseRankDump(chunk, "fuzz");
    if (!dump.ok()) {
      Check(dump.status().message().find("fuzz") != absl::string_view::npos,
            "an error names the file");
      continue;
    }
    // A trace holds one dump per rank, ascending, as the loader settles it.
    if (dump->rank < 0 || !ranks.insert(dump->rank).second) continue;
    trace.ranks.push_back(*std::move(dump));
  }
  std::sort(trace.ranks.begin(), trace.ranks.end(),
            [](const fr::RankDump& a, const fr::RankDump& b) { return a.rank < b.rank; });
  if (trace.ranks.empty()) return 0;
  fr::report::Report report = fr::Analyze(trace, fr::AnalyzeOptions{});
  Check(fr::FormatReportJson(report).ok(), "the report serializes to JSON");
  return 0;
}
