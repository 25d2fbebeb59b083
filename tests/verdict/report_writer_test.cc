// The report written from a Judgment built by hand: the contract's words come from the values,
// and nothing the judgment does not say appears.
#include "fr/verdict/report_writer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;

Judgment GpuStallJudgment() {
  Judgment judgment;
  JudgedFinding& stall = judgment.findings.emplace_back();
  stall.failure_class = FailureClass::kGpuStall;
  stall.ranks = {3};
  stall.seq = 12;
  stall.op = "all_reduce";
  stall.confidence = Confidence::kMedium;
  stall.summary = "Rank 3 enqueued all_reduce #12 but its GPU never started it.";
  stall.evidence = {"waiting in all_reduce #12: 0-2"};
  stall.majority_rank = 0;
  stall.majority_stack = {"train (train.py:10)"};
  JudgedFinding& monitor = judgment.findings.emplace_back();
  monitor.topic = FindingTopic::kMonitor;
  monitor.monitor_kind = "gpu_idle_while_peers_busy";
  monitor.ranks = {3};
  monitor.confidence = Confidence::kLow;
  judgment.verdict.failure_class = FailureClass::kGpuStall;
  judgment.verdict.culprits = {3};
  judgment.verdict.victims = {0, 1, 2};
  judgment.verdict.lead = 0;
  judgment.verdict.confidence = Confidence::kMedium;
  judgment.verdict.summary = "Rank 3's GPU stalled.";
  judgment.verdict.next_actions = {"Check rank 3's GPU."};
  judgment.missing_ranks = {7};
  judgment.findings_not_listed["stuck_collective"] = 4;
  return judgment;
}

TEST(ReportWriterTest, TheVerdictIsWrittenFromItsValues) {
  report::Report report = WriteDumpReport(LoadedTrace(), {}, GpuStallJudgment());
  const report::Verdict& verdict = report.verdict();
  EXPECT_EQ(report.schema_version(), 1);
  EXPECT_EQ(verdict.failure_class(), "gpu_stall");
  EXPECT_EQ(verdict.confidence(), "medium");
  EXPECT_THAT(verdict.culprit_ranks(), ElementsAre(3));
  EXPECT_THAT(verdict.victim_ranks(), ElementsAre(0, 1, 2));
  // The lead's op and seq are the headline's.
  EXPECT_EQ(verdict.collective_seq_id(), 12);
  EXPECT_EQ(verdict.op(), "all_reduce");
  EXPECT_TRUE(verdict.has_process_group());
  EXPECT_THAT(verdict.next_actions(), ElementsAre("Check rank 3's GPU."));
}

TEST(ReportWriterTest, NoLeadLeavesTheHeadlineWithoutAnOp) {
  Judgment judgment;
  judgment.verdict.failure_class = FailureClass::kNone;
  report::Report report = WriteDumpReport(LoadedTrace(), {}, judgment);
  EXPECT_EQ(report.verdict().failure_class(), "none");
  EXPECT_EQ(report.verdict().confidence(), "high");
  EXPECT_EQ(report.verdict().collective_seq_id(), -1);
  EXPECT_FALSE(report.verdict().has_process_group());
}

TEST(ReportWriterTest, FindingsKeepTheirOrderAndNameTheirKind) {
  report::Report report = WriteDumpReport(LoadedTrace(), {}, GpuStallJudgment());
  ASSERT_EQ(report.findings_size(), 2);
  const report::Finding& stall = report.findings(0);
  EXPECT_EQ(stall.kind(), "gpu_stall");
  EXPECT_EQ(stall.confidence(), "medium");
  EXPECT_THAT(stall.ranks(), ElementsAre(3));
  EXPECT_FALSE(stall.has_process_group());  // it names no group
  ASSERT_TRUE(stall.has_majority_rank());
  EXPECT_EQ(stall.majority_rank(), 0);
  EXPECT_THAT(stall.majority_stack(), ElementsAre("train (train.py:10)"));
  EXPECT_EQ(report.findings(1).kind(), "gpu_idle_while_peers_busy");
  EXPECT_EQ(report.findings(1).confidence(), "low");
  EXPECT_FALSE(report.findings(1).has_majority_rank());
}

TEST(ReportWriterTest, MissingRanksAndUnlistedFindingsAreCounted) {
  report::Report report = WriteDumpReport(LoadedTrace(), {}, GpuStallJudgment());
  EXPECT_THAT(report.inputs().ranks_missing(), ElementsAre(7));
  EXPECT_EQ(report.stats().ranks_expected(), 1);
  EXPECT_EQ(report.stats().counters().at("findings_not_listed:stuck_collective"), 4);
  ASSERT_EQ(report.ranks_size(), 1);
  EXPECT_EQ(report.ranks(0).rank(), 7);
  EXPECT_EQ(report.ranks(0).role(), "missing");
}

TEST(ReportWriterTest, FindingKindsAreTheContractsWords) {
  JudgedFinding finding;
  finding.failure_class = FailureClass::kMissingParticipant;
  EXPECT_EQ(FindingKindName(finding), "missing_participant");
  finding.topic = FindingTopic::kStraggler;
  EXPECT_EQ(FindingKindName(finding), "straggler");
  finding.topic = FindingTopic::kDataLoss;
  EXPECT_EQ(FindingKindName(finding), "data_loss");
}

}  // namespace
}  // namespace fr
