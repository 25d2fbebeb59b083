// Summaries end to end: every fault the simulator injects, written to disk, loaded once from the
// files and once from per-file summaries (what Dask workers return), must give the same report
// byte for byte, as must the same dumps with their entries unpacked; damaged summaries are their
// file's error, never a crash.
#include "fr/summary/rank_summary.h"

#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fr/load/load.h"
#include "fr/report/report_format.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "fr/verdict/analyze.h"
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
using ::testing::HasSubstr;

fs::path WriteJob(const JobSimulatorOptions& options, const std::string& name) {
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  EXPECT_TRUE(job.ok()) << job.status();
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("fr_summary_{}_{}", ::getpid(), name);
  fs::remove_all(dir);
  if (job.ok()) {
    absl::StatusOr<JobWriteStats> written = WriteSimulatedJob(*job, dir.string(), {});
    EXPECT_TRUE(written.ok()) << written.status();
  }
  return dir;
}

fs::path WriteJob(FaultKind kind, GroupKind group, bool timing, const std::string& name) {
  JobSimulatorOptions options;  // 2 x 2 x 2
  options.steps = 16;
  options.timing = timing;
  options.fault.kind = kind;
  options.fault.rank = 5;
  options.fault.step = 12;
  options.fault.group = group;
  return WriteJob(options, name);
}

std::string ReportOf(const LoadedTrace& trace, const std::string& source, int jobs = 0) {
  AnalyzeOptions options;
  options.source = source;
  options.jobs = jobs;
  absl::StatusOr<std::string> json = FormatReportJson(Analyze(trace, options));
  EXPECT_TRUE(json.ok()) << json.status();
  return json.ok() ? *json : "";
}

absl::StatusOr<LoadedTrace> FromSummaries(const std::string& root,
                                          std::vector<std::string>* summaries = nullptr) {
  absl::StatusOr<Discovery> discovery = DiscoverDumps(root, {});
  if (!discovery.ok()) return discovery.status();
  std::vector<std::string> bytes;
  for (const SummaryTask& task : PlanSummaries(*discovery))
    bytes.push_back(SummarizeDumpFile(task));
  if (summaries != nullptr) {
    *summaries = bytes;
    return LoadedTrace();
  }
  return AssembleTrace(root, *std::move(discovery), bytes);
}

class SummariesGiveTheSameReportTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(SummariesGiveTheSameReportTest, ForEveryInjectedFault) {
  const FaultCase& c = GetParam();
  std::string name = std::string(FaultKindName(c.kind)) + (c.timing ? "_timing" : "");
  fs::path dir = WriteJob(c.kind, c.group, c.timing, name);
  absl::StatusOr<LoadedTrace> files = LoadTrace(dir.string());
  absl::StatusOr<LoadedTrace> summaries = FromSummaries(dir.string());
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_TRUE(summaries.ok()) << summaries.status();
  ASSERT_FALSE(files->ranks.empty());
  EXPECT_EQ(summaries->ranks.size(), files->ranks.size());
  EXPECT_EQ(summaries->missing_ranks, files->missing_ranks);
  EXPECT_EQ(summaries->bytes_on_disk, files->bytes_on_disk);
  std::string from_files = ReportOf(*files, dir.string());
  EXPECT_EQ(ReportOf(*summaries, dir.string()), from_files);
  EXPECT_THAT(from_files, HasSubstr("\"failure_class\""));
  // The loader keeps entries packed; the same entries as plain vectors give the same report.
  absl::StatusOr<LoadedTrace> unpacked = LoadTrace(dir.string());
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  for (RankDump& dump : unpacked->ranks) {
    ASSERT_TRUE(dump.entries.packed());
    EntryStore entries;
    for (const Entry& entry : dump.entries) entries.push_back(entry);
    dump.entries = std::move(entries);
  }
  EXPECT_EQ(ReportOf(*unpacked, dir.string()), from_files);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Faults, SummariesGiveTheSameReportTest,
                         ::testing::ValuesIn(FaultsAt8Ranks()),
                         [](const ::testing::TestParamInfo<FaultCase>& info) {
                           return FaultCaseName(info.param);
                         });

class AtScaleTest : public ::testing::TestWithParam<FaultCase> {};

// 4 x 4 x 32 ranks with wrapped ring buffers, the fault in a middle pipeline stage: the report
// from summaries is the report from files, and the analysis on one thread is the analysis on
// several (it indexes dumps and matches groups in parallel).
TEST_P(AtScaleTest, SummariesAndOneThreadGiveTheSameReport) {
  const FaultCase& c = GetParam();
  JobSimulatorOptions options;
  options.tensor_parallel = 4;
  options.pipeline_parallel = 4;
  options.data_parallel = 32;
  options.steps = 12;
  options.buffer_size = 300;
  options.timing = c.timing;
  options.fault.kind = c.kind;
  options.fault.rank = 7 * 16 + 2 * 4 + 1;
  options.fault.step = 9;
  options.fault.group = c.group;
  std::string name = "scale_" + std::string(FaultKindName(c.kind)) + (c.timing ? "_timing" : "");
  fs::path dir = WriteJob(options, name);
  absl::StatusOr<LoadedTrace> files = LoadTrace(dir.string());
  absl::StatusOr<LoadedTrace> summaries = FromSummaries(dir.string());
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_TRUE(summaries.ok()) << summaries.status();
  ASSERT_EQ(files->ranks.size() + files->missing_ranks.size(), 512u);
  std::string from_files = ReportOf(*files, dir.string(), /*jobs=*/4);
  EXPECT_EQ(ReportOf(*summaries, dir.string(), /*jobs=*/4), from_files);
  EXPECT_EQ(ReportOf(*files, dir.string(), /*jobs=*/1), from_files);
  EXPECT_THAT(from_files, HasSubstr("\"failure_class\""));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Faults, AtScaleTest, ::testing::ValuesIn(FaultsAt512Ranks()),
                         [](const ::testing::TestParamInfo<FaultCase>& info) {
                           return FaultCaseName(info.param);
                         });

TEST(RankSummaryTest, ADumpReadBackIsTheDumpWritten) {
  fs::path dir = WriteJob(FaultKind::kSizeMismatch, GroupKind::kTensor, true, "roundtrip");
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  for (const RankDump& dump : trace->ranks) {
    std::string bytes = SerializeRankDump(dump);
    absl::StatusOr<RankDump> back = ParseRankDump(bytes, dump.path);
    ASSERT_TRUE(back.ok()) << back.status();
    // Written again, the dump read back gives the same bytes: nothing was lost or changed.
    EXPECT_EQ(SerializeRankDump(*back), bytes);
    ASSERT_EQ(back->entries.size(), dump.entries.size());
    EXPECT_EQ(back->strings.size(), dump.strings.size());
    for (size_t i = 0; i < dump.entries.size(); ++i) {
      EXPECT_EQ(back->entries[i].collective_seq_id, dump.entries[i].collective_seq_id);
      EXPECT_EQ(back->Shapes(back->entries[i].input_sizes),
                dump.Shapes(dump.entries[i].input_sizes));
    }
  }
  fs::remove_all(dir);
}

TEST(RankSummaryTest, DamagedSummariesAreTheirFilesErrors) {
  fs::path dir = WriteJob(FaultKind::kStuckBeforeOp, GroupKind::kData, true, "damaged");
  std::vector<std::string> summaries;
  ASSERT_TRUE(FromSummaries(dir.string(), &summaries).ok());
  ASSERT_GE(summaries.size(), 8u);
  // Rank 0's summary cut short, rank 1's bytes garbage, rank 2's summary of rank 3's file.
  summaries[0].resize(summaries[0].size() / 2);
  summaries[1] = "not a summary at all";
  summaries[2] = summaries[3];
  absl::StatusOr<Discovery> discovery = DiscoverDumps(dir.string(), {});
  ASSERT_TRUE(discovery.ok());
  absl::StatusOr<LoadedTrace> trace = AssembleTrace(dir.string(), *discovery, summaries);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->rejected.size(), 3u);
  for (const RejectedFile& rejected : trace->rejected) {
    EXPECT_THAT(rejected.error, HasSubstr(rejected.path));
  }
  EXPECT_THAT(trace->rejected[2].error, HasSubstr("not of this file"));
  EXPECT_EQ(trace->ranks.size(), summaries.size() - 3);
  // One summary per file, or nothing is assembled.
  summaries.pop_back();
  EXPECT_FALSE(AssembleTrace(dir.string(), *discovery, summaries).ok());
  fs::remove_all(dir);
}

TEST(RankSummaryTest, OutOfRangeIdsAreRefusedWithTheField) {
  RankDump dump;
  dump.rank = 3;
  dump.path = "rank3";
  dump.strings.Intern("nccl:all_reduce");
  dump.groups.emplace_back();
  Entry& entry = dump.entries.emplace_back();
  entry.profiling_name = 1;
  ASSERT_TRUE(ParseRankDump(SerializeRankDump(dump), "rank3").ok());
  entry.profiling_name = 7;  // no such string
  absl::StatusOr<RankDump> bad = ParseRankDump(SerializeRankDump(dump), "rank3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("rank3"));
  EXPECT_THAT(bad.status().message(), HasSubstr("entries.profiling_name"));
  entry.profiling_name = 1;
  entry.group = 2;  // no such group
  bad = ParseRankDump(SerializeRankDump(dump), "rank3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("entries.group"));
  // Ranks outside what the normalizer admits (0..2^31-1), as the summary fuzzer found: the
  // analysis adds to them.
  entry.group = 0;
  dump.rank = std::numeric_limits<int64_t>::max();
  bad = ParseRankDump(SerializeRankDump(dump), "rank3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'rank'"));
  dump.rank = 3;
  dump.groups[0].ranks = {0, int64_t{1} << 40};
  bad = ParseRankDump(SerializeRankDump(dump), "rank3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("groups.ranks"));
}

// A worker's summary whose strings are not UTF-8 (a frame name with a byte 0xfd) was accepted, and
// Python then failed to decode the report. The decoders accept only UTF-8, so such a summary was
// damaged on the way: it is its file's error, naming the file and the field.
TEST(RankSummaryTest, StringsThatAreNotUtf8AreRefusedWithTheField) {
  RankDump dump;
  dump.rank = 3;
  dump.path = "rank3";
  dump.version = "2.10";
  StringId name = dump.strings.Intern("train_step");
  dump.frames.push_back({.name = name, .filename = name, .line = 1});
  ASSERT_TRUE(ParseRankDump(SerializeRankDump(dump), "rank3").ok());
  std::string bytes = SerializeRankDump(dump);
  bytes.replace(bytes.find("train_step") + 5, 1, "\xfd");
  absl::StatusOr<RankDump> bad = ParseRankDump(bytes, "rank3");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("rank3"));
  EXPECT_THAT(bad.status().message(), HasSubstr("'strings'"));
  for (std::string* field : {&dump.version, &dump.comm_lib_version}) {
    *field = "2.\xff";
    EXPECT_FALSE(ParseRankDump(SerializeRankDump(dump), "rank3").ok());
    *field = "2.10";
  }
  dump.oddities.emplace_back("unknown_key:\xc3", 1);
  EXPECT_FALSE(ParseRankDump(SerializeRankDump(dump), "rank3").ok());
}

// Every dump lists the default group's whole world (and each DP group its strided ranks): written
// out, 300 KB per summary at 100k ranks, so regular lists travel as (first, step, count) runs and
// come back as they were; irregular ones are written out.
TEST(RankSummaryTest, RankListsTravelAsRunsAndComeBackWhole) {
  RankDump dump;
  dump.rank = 5;
  dump.path = "rank5";
  std::vector<int64_t> world(100'000);
  for (int64_t r = 0; r < 100'000; ++r) world[r] = r;
  std::vector<int64_t> strided, irregular = {5, 9, 2, 40, 41, 7};
  for (int64_t r = 5; r < 100'000; r += 32) strided.push_back(r);
  for (const std::vector<int64_t>* ranks : {&world, &strided, &irregular}) {
    ProcessGroup& group = dump.groups.emplace_back();
    group.ranks = *ranks;
    group.ranks_known = true;
  }
  std::string bytes = SerializeRankDump(dump);
  EXPECT_LT(bytes.size(), 200u) << "the world and the strided group as a few runs";
  summary::RankSummary message;
  ASSERT_TRUE(message.ParseFromString(bytes));
  EXPECT_EQ(message.groups(0).rank_runs_size(), 3);
  EXPECT_EQ(message.groups(1).rank_runs_size(), 3);
  EXPECT_EQ(message.groups(2).ranks_size(), 6);
  absl::StatusOr<RankDump> back = ParseRankDump(bytes, "rank5");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->groups.size(), 3u);
  EXPECT_EQ(back->groups[0].ranks.ToVector(), world);
  EXPECT_EQ(back->groups[1].ranks.ToVector(), strided);
  EXPECT_EQ(back->groups[2].ranks.ToVector(), irregular);
}

TEST(RankSummaryTest, DamagedRankRunsAreRefusedWithTheField) {
  RankDump dump;
  dump.rank = 1;
  dump.path = "rank1";
  dump.groups.emplace_back().ranks = std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7};
  summary::RankSummary good;
  ASSERT_TRUE(good.ParseFromString(SerializeRankDump(dump)));
  ASSERT_EQ(good.groups(0).rank_runs_size(), 3);
  auto with_runs = [&](std::vector<int64_t> runs, bool also_ranks = false) {
    summary::RankSummary bad = good;
    bad.mutable_groups(0)->clear_rank_runs();
    for (int64_t v : runs) bad.mutable_groups(0)->add_rank_runs(v);
    if (also_ranks) bad.mutable_groups(0)->add_ranks(3);
    return ParseRankDump(bad.SerializeAsString(), "rank1");
  };
  const int64_t kRankMax = std::numeric_limits<int32_t>::max();
  for (const auto& [runs, also_ranks] : std::vector<std::pair<std::vector<int64_t>, bool>>{
           {{0, 1}, false},                    // not a triple
           {{0, 1, 0}, false},                 // no ranks
           {{0, 0, int64_t{1} << 40}, false},  // more ranks than a summary may hold
           {{kRankMax, 1, 2}, false},          // past the largest rank
           {{10, -1, 12}, false},              // below rank 0
           {{0, int64_t{1} << 40, 2}, false},  // a step no two ranks are apart
           {{0, 1, 8}, true}}) {               // both spellings at once
    absl::StatusOr<RankDump> bad = with_runs(runs, also_ranks);
    ASSERT_FALSE(bad.ok()) << runs[0];
    EXPECT_THAT(bad.status().message(), HasSubstr("rank1"));
    EXPECT_THAT(bad.status().message(), HasSubstr("groups.rank_runs"));
  }
  absl::StatusOr<RankDump> fine = with_runs({7, -1, 8});  // descending runs are runs too
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ(fine->groups[0].ranks.ToVector(), (std::vector<int64_t>{7, 6, 5, 4, 3, 2, 1, 0}));
}

}  // namespace
}  // namespace fr
