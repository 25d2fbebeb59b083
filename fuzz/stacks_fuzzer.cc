// libFuzzer target for PyTorch debug-server stacks snapshots (`stacks_<time>.txt`, written by
// `fr-analyze live` or the debug server's periodic dumper): bytes -> lib/fr/stacks -> the live
// verdict -> text and JSON reports. Any text must give an error or a report, never a crash, a
// hang or unbounded memory, and a culprit named from the stacks is a rank the snapshot holds.
//
//   cmake --preset fuzz && cmake --build build/fuzz --target stacks_fuzzer
//   build/fuzz/fuzz/stacks_fuzzer -max_total_time=60 tests/data/fuzz/stacks
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

#include "fr/load/load.h"
#include "fr/report/report_format.h"
#include "fr/stacks/python_stacks.h"
#include "fr/verdict/analyze.h"

namespace {

void Check(bool condition, const char* invariant) {
  if (condition) return;
  std::fprintf(stderr, "stacks analysis invariant broken: %s\n", invariant);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fr::StackSnapshots stacks;
  if (!fr::ParseStackSnapshot("dbg/stacks_20261203_095248.txt", text, &stacks).ok()) return 0;
  Check(!stacks.snapshots.empty(), "a snapshot read without error holds a snapshot");
  std::set<int32_t> stack_ranks;
  for (const fr::RankStacks& rank : stacks.snapshots.back().ranks) stack_ranks.insert(rank.rank);
  fr::AnalyzeOptions with_stacks;
  with_stacks.stacks = &stacks;
  fr::report::Report live = fr::Analyze(fr::LoadedTrace(), with_stacks);
  for (int32_t rank : live.verdict().culprit_ranks()) {
    Check(stack_ranks.contains(rank), "a culprit from the stacks is a rank they hold");
  }
  Check(fr::FormatReportJson(live).ok(), "the live report serializes to JSON");
  Check(!fr::FormatReportText(live).empty(), "the live text report is not empty");
  return 0;
}
