// libFuzzer target for the whole analysis: bytes -> dumps of several ranks -> load -> index ->
// match -> wait-for graph -> verdict -> text and JSON reports. Any input must give a report (or a
// per-file rejection), never a crash, a hang or unbounded memory, and the report must be
// coherent: culprits are ranks the job has, never also victims, and it serializes.
//
//   cmake --preset fuzz && cmake --build build/fuzz --target analysis_fuzzer
//   build/fuzz/fuzz/analysis_fuzzer -max_total_time=60 tests/data/fuzz/analysis
//
// The input is the dumps of ranks 0, 1, ... joined by kSeparator, so that the fuzzer mutates
// real multi-rank jobs (the seeds) inside and across dumps. analysis_fuzz_replay_test runs the
// same function over the seed corpus.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "fr/load/load.h"
#include "fr/report/report_format.h"
#include "fr/verdict/analyze.h"

namespace {

constexpr std::string_view kSeparator = "\n--fr-rank--\n";
constexpr size_t kMaxRanks = 64;

// Says which invariant broke before aborting, so that a crash report is readable on its own.
void Check(bool condition, const char* invariant) {
  if (condition) return;
  std::fprintf(stderr, "analysis invariant broken: %s\n", invariant);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::map<int64_t, std::shared_ptr<const fr::Buffer>> dumps;
  for (int64_t rank = 0; !input.empty() && dumps.size() < kMaxRanks; ++rank) {
    size_t end = input.find(kSeparator);
    std::string_view chunk = input.substr(0, end);
    dumps[rank] = fr::Buffer::FromString(std::string(chunk));
    input =
        end == std::string_view::npos ? std::string_view() : input.substr(end + kSeparator.size());
  }
  fr::LoadOptions options;
  options.jobs = 1;
  absl::StatusOr<fr::LoadedTrace> trace = fr::LoadTraceFromBytes(dumps, options);
  if (!trace.ok()) return 0;
  fr::report::Report report = fr::Analyze(*trace, fr::AnalyzeOptions{});
  std::set<int64_t> loaded, victims;
  for (const fr::RankDump& dump : trace->ranks) loaded.insert(dump.rank);
  for (int32_t r : report.verdict().victim_ranks()) victims.insert(r);
  for (int32_t culprit : report.verdict().culprit_ranks()) {
    Check(!victims.contains(culprit), "a culprit is never also a victim");
    // A culprit is a rank of the job: loaded, or named by a loaded dump as missing.
    bool known = loaded.contains(culprit);
    for (int64_t r : trace->missing_ranks) known |= r == culprit;
    for (const fr::RejectedFile& file : trace->rejected) known |= file.rank == culprit;
    Check(known, "a culprit is a rank of the job");
  }
  const std::string& kind = report.verdict().failure_class();
  static const std::set<std::string> kClasses = {
      "none",          "missing_participant", "gpu_stall",
      "op_mismatch",   "size_mismatch",       "dtype_mismatch",
      "p2p_unmatched", "stuck_collective",    "insufficient_evidence"};
  Check(kClasses.contains(kind), "the failure class is one of the contract's");
  Check(!fr::FormatReportText(report).empty(), "the text report is not empty");
  Check(fr::FormatReportJson(report).ok(), "the report serializes to JSON");
  return 0;
}
