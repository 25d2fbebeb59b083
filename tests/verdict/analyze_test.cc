// The culprit analysis end to end on simulated jobs: simulate a TP x PP x DP job with one injected
// fault, write every surviving rank's dump to disk, load the directory and analyse it. The
// expectation is the simulator's ground truth, never the analyzer's own output.
#include "fr/verdict/analyze.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/load/load.h"
#include "fr/report/report_format.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fault_matrix.h"

namespace fr {
namespace {

namespace fs = std::filesystem;
using test_support::FaultCase;
using test_support::FaultCaseName;
using test_support::FaultsAt512Ranks;
using test_support::FaultsAt8Ranks;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

struct Analysis {
  GroundTruth truth;
  report::Report report;
};

fs::path TempDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("fr_analyze_{}_{}", ::getpid(), name);
  fs::remove_all(dir);
  return dir;
}

Analysis SimulateAndAnalyze(const JobSimulatorOptions& options, const JobWriteOptions& write,
                            const std::string& name) {
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return {};
  fs::path dir = TempDir(name);
  absl::StatusOr<JobWriteStats> written = WriteSimulatedJob(*job, dir.string(), write);
  EXPECT_TRUE(written.ok()) << written.status();
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  EXPECT_TRUE(trace.ok()) << trace.status();
  Analysis analysis;
  analysis.truth = job->ground_truth();
  if (trace.ok()) {
    EXPECT_TRUE(trace->rejected.empty()) << trace->rejected.front().error;
    AnalyzeOptions options;
    options.source = dir.string();
    analysis.report = Analyze(*trace, options);
  }
  fs::remove_all(dir);
  return analysis;
}

std::vector<int32_t> Ranks(const google::protobuf::RepeatedField<int32_t>& field) {
  return {field.begin(), field.end()};
}

std::vector<int32_t> Ranks(const std::vector<int64_t>& ranks) {
  return {ranks.begin(), ranks.end()};
}

void ExpectVerdictMatchesTruth(const Analysis& analysis) {
  const report::Verdict& verdict = analysis.report.verdict();
  const GroundTruth& truth = analysis.truth;
  SCOPED_TRACE(truth.description);
  SCOPED_TRACE(FormatReportText(analysis.report));
  EXPECT_EQ(verdict.failure_class(), truth.failure_class);
  if (truth.failure_class == "p2p_unmatched" && verdict.confidence() == "low") {
    // A skipped send/recv shifts the FIFO pairing and the hang shows as two ranks whose pending
    // sends and recvs wait on each other. Where a wrapped ring buffer keeps too few steps to
    // show either rank's own rhythm, the dumps cannot say which side skipped, and the report
    // says so (low confidence). Both sides of the channel are then named.
    std::vector<int32_t> channel = {static_cast<int32_t>(truth.culprit_ranks.front()),
                                    static_cast<int32_t>(truth.peer_rank)};
    std::sort(channel.begin(), channel.end());
    EXPECT_THAT(Ranks(verdict.culprit_ranks()), ElementsAreArray(channel));
  } else {
    EXPECT_THAT(Ranks(verdict.culprit_ranks()), ElementsAreArray(Ranks(truth.culprit_ranks)));
  }
  if (truth.failure_class != "none" && !truth.process_group.name.empty()) {
    EXPECT_EQ(verdict.process_group().name(), truth.process_group.name);
    EXPECT_THAT(Ranks(verdict.process_group().ranks()),
                ElementsAreArray(Ranks(truth.process_group.ranks)));
  }
  if (truth.collective_seq_id >= 0) {
    EXPECT_EQ(verdict.collective_seq_id(), truth.collective_seq_id);
  }
  EXPECT_FALSE(verdict.summary().empty());
  if (truth.straggler_rank >= 0) {
    ASSERT_GT(analysis.report.stragglers_size(), 0);
    EXPECT_EQ(analysis.report.stragglers(0).rank(), truth.straggler_rank);
    EXPECT_GT(analysis.report.stragglers(0).median_lateness_ms(), 1.0);
  } else {
    EXPECT_EQ(analysis.report.stragglers_size(), 0);
  }
  if (truth.failure_class != "none") {
    EXPECT_FALSE(verdict.next_actions().empty());
  }
  // Culprits are never also victims.
  for (int32_t culprit : verdict.culprit_ranks()) {
    EXPECT_THAT(Ranks(verdict.victim_ranks()), ::testing::Not(::testing::Contains(culprit)));
  }
}

std::string CaseName(const ::testing::TestParamInfo<FaultCase>& info) {
  return FaultCaseName(info.param);
}

class EveryFaultAt8RanksTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(EveryFaultAt8RanksTest, VerdictMatchesTheInjectedFault) {
  JobSimulatorOptions options;  // 2 x 2 x 2
  options.steps = 16;
  options.timing = GetParam().timing;
  options.fault.kind = GetParam().kind;
  options.fault.rank = 5;
  options.fault.step = 12;
  options.fault.group = GetParam().group;
  Analysis analysis = SimulateAndAnalyze(options, {}, FaultCaseName(GetParam()));
  ExpectVerdictMatchesTruth(analysis);
  if (GetParam().kind == FaultKind::kMissingSend || GetParam().kind == FaultKind::kMissingRecv) {
    // Whole ring buffers keep every step: the side whose own schedule broke is named alone.
    EXPECT_EQ(analysis.report.verdict().confidence(), "medium");
    EXPECT_THAT(Ranks(analysis.report.verdict().culprit_ranks()),
                ElementsAreArray(Ranks(analysis.truth.culprit_ranks)));
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, EveryFaultAt8RanksTest, ::testing::ValuesIn(FaultsAt8Ranks()),
                         CaseName);

class EveryFaultAt512RanksTest : public ::testing::TestWithParam<FaultCase> {};

// 4 x 4 x 32 ranks, the culprit in a middle pipeline stage, every ring buffer wrapped.
TEST_P(EveryFaultAt512RanksTest, CulpritDeepInThePipelineIsFound) {
  JobSimulatorOptions options;
  options.tensor_parallel = 4;
  options.pipeline_parallel = 4;
  options.data_parallel = 32;
  options.steps = 12;
  options.buffer_size = 300;
  options.timing = GetParam().timing;
  options.fault.kind = GetParam().kind;
  options.fault.rank = 7 * 16 + 2 * 4 + 1;  // dp 7, stage 2, tp 1
  options.fault.step = 9;
  options.fault.group = GetParam().group;
  Analysis analysis = SimulateAndAnalyze(options, {}, "large_" + FaultCaseName(GetParam()));
  ExpectVerdictMatchesTruth(analysis);
  if (analysis.truth.failure_class != "none") {
    // Most of the job is blocked behind the culprit, and the report says how.
    EXPECT_GT(analysis.report.verdict().victim_ranks_size(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, EveryFaultAt512RanksTest, ::testing::ValuesIn(FaultsAt512Ranks()),
                         CaseName);

class EveryVersionTest : public ::testing::TestWithParam<std::tuple<std::string, DumpEncoding>> {};

TEST_P(EveryVersionTest, StuckRankIsFoundInEveryVersionAndEncoding) {
  const auto& [version, encoding] = GetParam();
  JobSimulatorOptions options;
  options.steps = 16;
  options.timing = false;
  options.version = version;
  options.fault.kind = FaultKind::kStuckBeforeOp;
  options.fault.rank = 6;
  options.fault.step = 12;
  JobWriteOptions write;
  write.encoding = encoding;
  write.compression =
      encoding == DumpEncoding::kJson ? DumpCompression::kGzip : DumpCompression::kZstd;
  write.naming = DumpNaming::kHostSubdirectory;
  Analysis analysis = SimulateAndAnalyze(
      options, write, fmt::format("v{}_{}", version, encoding == DumpEncoding::kJson));
  EXPECT_EQ(analysis.report.verdict().failure_class(), "missing_participant");
  EXPECT_THAT(Ranks(analysis.report.verdict().culprit_ranks()), ElementsAreArray({6}));
}

INSTANTIATE_TEST_SUITE_P(
    Versions, EveryVersionTest,
    ::testing::Combine(::testing::Values("1.4", "2.0", "2.3", "2.7", "2.9", "2.10"),
                       ::testing::Values(DumpEncoding::kPickle, DumpEncoding::kJson)),
    [](const auto& info) {
      std::string name = "v" + std::get<0>(info.param) +
                         (std::get<1>(info.param) == DumpEncoding::kJson ? "_json" : "_pickle");
      for (char& c : name) {
        if (c == '.') c = '_';
      }
      return name;
    });

TEST(AnalyzeTest, OnDemandDumpOfAHealthyJobIsNotAHang) {
  JobSimulatorOptions options;
  options.steps = 16;
  options.fault.kind = FaultKind::kNone;
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok()) << job.status();
  fs::path dir = TempDir("on_demand");
  ASSERT_TRUE(WriteSimulatedJob(*job, dir.string(), {}).ok());
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  fs::remove_all(dir);

  // Dumped mid-run (the files' times say when): ops are in flight, younger than their timeout.
  report::Report report = Analyze(*trace, {});
  EXPECT_EQ(report.verdict().failure_class(), "none");
  EXPECT_GT(report.stats().counters().at("ops_in_flight_not_stuck"), 0);

  // The same dumps judged an hour later: the ops in flight have outlived their timeout.
  AnalyzeOptions later;
  later.dump_time_ns = job->ground_truth().dump_time_ns + int64_t{3600} * 1'000'000'000;
  report::Report stale = Analyze(*trace, later);
  EXPECT_NE(stale.verdict().failure_class(), "none");
  EXPECT_EQ(stale.stats().counters().count("ops_in_flight_not_stuck"), 0u);
}

TEST(AnalyzeTest, TooFewDumpsIsInsufficientEvidence) {
  JobSimulatorOptions options;
  options.steps = 8;
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok());
  fs::path dir = TempDir("too_few");
  ASSERT_TRUE(WriteSimulatedJob(*job, dir.string(), {}).ok());
  // Keep 2 of 8 dumps.
  for (int rank = 2; rank < 8; ++rank) fs::remove(dir / fmt::format("nccl_trace_rank_{}", rank));
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  ASSERT_TRUE(trace.ok());
  report::Report report = Analyze(*trace, {});
  fs::remove_all(dir);
  EXPECT_EQ(report.verdict().failure_class(), "insufficient_evidence");
  EXPECT_THAT(report.verdict().summary(), HasSubstr("2-7"));
}

// Loads a simulated job's dumps, keeping only the ranks in `keep` (all when empty).
absl::StatusOr<LoadedTrace> WriteAndLoad(const SimulatedJob& job, const std::string& name,
                                         const std::vector<int64_t>& keep = {}) {
  fs::path dir = TempDir(name);
  FR_RETURN_IF_ERROR(WriteSimulatedJob(job, dir.string(), {}).status());
  if (!keep.empty()) {
    for (int64_t r = 0; r < job.world_size(); ++r) {
      if (std::find(keep.begin(), keep.end(), r) == keep.end()) {
        fs::remove(dir / fmt::format("nccl_trace_rank_{}", r));
      }
    }
  }
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  fs::remove_all(dir);
  return trace;
}

TEST(AnalyzeTest, CoalescedGroupCutByTheRingBufferDoesNotOutrankTheHang) {
  // 256 ranks, 30 steps: rank 77's ring buffer starts in the middle of a coalesced DP all-gather,
  // whose remaining ops differ from the whole group its peers recorded. That is no desync.
  JobSimulatorOptions options;
  options.tensor_parallel = 8;
  options.pipeline_parallel = 4;
  options.data_parallel = 8;
  options.steps = 30;
  options.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 77, .step = 26};
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<LoadedTrace> trace = WriteAndLoad(*job, "wrap_edge");
  ASSERT_TRUE(trace.ok()) << trace.status();
  report::Report report = Analyze(*trace, {});
  SCOPED_TRACE(FormatReportText(report));
  EXPECT_EQ(report.verdict().failure_class(), "missing_participant");
  EXPECT_THAT(Ranks(report.verdict().culprit_ranks()), ElementsAreArray({77}));
  EXPECT_EQ(report.verdict().confidence(), "high");
  for (const report::Finding& finding : report.findings()) {
    EXPECT_FALSE(finding.kind().ends_with("_mismatch")) << finding.summary();
  }
}

TEST(AnalyzeTest, DesyncShowsTheStackAtTheMismatchedOpBesideAMajorityStack) {
  JobSimulatorOptions options;
  options.steps = 12;
  options.fault = {
      .kind = FaultKind::kOpMismatch, .rank = 3, .step = 9, .group = GroupKind::kTensor};
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<LoadedTrace> trace = WriteAndLoad(*job, "desync_stack");
  ASSERT_TRUE(trace.ok()) << trace.status();
  report::Report report = Analyze(*trace, {});
  SCOPED_TRACE(FormatReportText(report));
  const GroundTruth& truth = job->ground_truth();
  ASSERT_EQ(report.verdict().failure_class(), "op_mismatch");
  const report::Finding* lead = nullptr;
  for (const report::Finding& f : report.findings()) {
    if (f.kind() == "op_mismatch") lead = lead == nullptr ? &f : lead;
  }
  ASSERT_NE(lead, nullptr);
  // The stack is the one recorded at the mismatching collective, not at the rank's last op.
  EXPECT_THAT(lead->stack_at(), HasSubstr(fmt::format("#{} in group {}", truth.collective_seq_id,
                                                      truth.process_group.name)));
  ASSERT_TRUE(lead->has_majority_rank());
  EXPECT_NE(lead->majority_rank(), 3);
  EXPECT_FALSE(lead->majority_stack().empty());
  EXPECT_THAT(FormatReportText(report), HasSubstr("(majority) at the same collective"));
}

TEST(AnalyzeTest, FewDumpsWithTheBlamedRankMissingCannotNameACulprit) {
  JobSimulatorOptions options;
  options.steps = 8;
  options.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 5, .step = 6};
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok()) << job.status();
  // Ranks 0 and 5 only: rank 0 is seen waiting for rank 1, whose dump is one of six missing.
  absl::StatusOr<LoadedTrace> few = WriteAndLoad(*job, "few_missing", {0, 5});
  ASSERT_TRUE(few.ok()) << few.status();
  report::Report report = Analyze(*few, {});
  EXPECT_EQ(report.verdict().failure_class(), "insufficient_evidence");
  EXPECT_TRUE(report.verdict().culprit_ranks().empty());
  EXPECT_THAT(report.verdict().summary(), ::testing::StartsWith("Only 2 of 8"));
  // The culprit and its waiting peer: the culprit is named, and the limit is said first.
  absl::StatusOr<LoadedTrace> pair = WriteAndLoad(*job, "few_present", {4, 5});
  ASSERT_TRUE(pair.ok()) << pair.status();
  report::Report named = Analyze(*pair, {});
  EXPECT_EQ(named.verdict().failure_class(), "missing_participant");
  EXPECT_THAT(Ranks(named.verdict().culprit_ranks()), ElementsAreArray({5}));
  EXPECT_EQ(named.verdict().confidence(), "medium");
  EXPECT_THAT(named.verdict().summary(), ::testing::StartsWith("Only 2 of 8"));
}

TEST(AnalyzeTest, PgFilterHeadlineSaysWhenTheCauseIsOutsideTheSelectedGroups) {
  JobSimulatorOptions options;
  options.steps = 8;
  options.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 5, .step = 6};
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<LoadedTrace> trace = WriteAndLoad(*job, "pg_filter");
  ASSERT_TRUE(trace.ok()) << trace.status();
  const std::string& culprit_group = job->ground_truth().process_group.desc;
  ASSERT_EQ(culprit_group, "DP");
  AnalyzeOptions dp_only;
  dp_only.pg_filter = {"DP"};
  report::Report selected = Analyze(*trace, dp_only);
  EXPECT_EQ(selected.verdict().process_group().desc(), "DP");
  EXPECT_THAT(selected.verdict().summary(), ::testing::Not(HasSubstr("No cause lies")));
  AnalyzeOptions pp_only;
  pp_only.pg_filter = {"PP"};
  report::Report other = Analyze(*trace, pp_only);
  EXPECT_THAT(other.verdict().summary(),
              ::testing::StartsWith("No cause lies in the selected groups (PP)"));
  EXPECT_THAT(Ranks(other.verdict().culprit_ranks()), ElementsAreArray({5}));
}

TEST(AnalyzeTest, NothingStuckButADumpMissingIsNotCalledHealthy) {
  // A rank that exits leaves no dump, and with Gloo its peers' ops end retired as if completed:
  // the dumps alone cannot call such a job healthy.
  JobSimulatorOptions options;
  options.steps = 8;
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<LoadedTrace> trace = WriteAndLoad(*job, "one_missing", {0, 1, 2, 3, 4, 6, 7});
  ASSERT_TRUE(trace.ok()) << trace.status();
  Diagnosis diagnosis = Diagnose(*trace, {});
  const report::Report& report = diagnosis.report;
  EXPECT_EQ(report.verdict().failure_class(), "insufficient_evidence");
  EXPECT_EQ(report.verdict().confidence(), "low");
  EXPECT_THAT(report.verdict().summary(), HasSubstr("rank 5 left no dump"));
  EXPECT_FALSE(diagnosis.failed);
}

TEST(AnalyzeTest, SameInputGivesTheSameBytes) {
  JobSimulatorOptions options;
  options.steps = 16;
  options.fault.kind = FaultKind::kStuckBeforeOp;
  options.fault.rank = 3;
  options.fault.step = 12;
  Analysis first = SimulateAndAnalyze(options, {}, "det1");
  Analysis second = SimulateAndAnalyze(options, {}, "det2");
  // Paths differ between the two runs; everything else must not.
  first.report.mutable_inputs()->clear_source();
  second.report.mutable_inputs()->clear_source();
  EXPECT_EQ(FormatReportText(first.report), FormatReportText(second.report));
  EXPECT_EQ(FormatReportProto(first.report), FormatReportProto(second.report));
}

}  // namespace
}  // namespace fr
