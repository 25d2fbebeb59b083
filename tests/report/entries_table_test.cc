// The columnar entries table against the dumps it was built from, entry by entry.
#include "fr/report/entries_table.h"

#include <filesystem>
#include <string>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/load/load.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(EntriesTableTest, EveryRowIsItsEntry) {
  JobSimulatorOptions options;
  options.steps = 4;
  options.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 5, .step = 3};
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  ASSERT_TRUE(job.ok()) << job.status();
  std::string dir = ::testing::TempDir() + "/entries_table_job";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteSimulatedJob(*job, dir, {}).ok());
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir);
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::filesystem::remove_all(dir);
  EntriesTable t = BuildEntriesTable(*trace);
  size_t row = 0;
  for (const RankDump& dump : trace->ranks) {
    for (const Entry& e : dump.entries) {
      ASSERT_LT(row, t.rows);
      EXPECT_EQ(t.rank[row], dump.rank);
      EXPECT_EQ(t.record_id[row], e.record_id);
      EXPECT_EQ(t.collective_seq_id[row], e.collective_seq_id);
      EXPECT_EQ(t.time_created_ns[row], e.time_created_ns);
      EXPECT_EQ(t.op.categories[t.op.codes[row]], dump.strings.view(e.op_name));
      EXPECT_EQ(t.state.categories[t.state.codes[row]], EntryStateName(e.state));
      EXPECT_EQ(t.input_sizes.categories[t.input_sizes.codes[row]],
                fmt::format("{}", dump.Shapes(e.input_sizes)));
      ++row;
    }
  }
  EXPECT_EQ(row, t.rows);
  EXPECT_EQ(t.rank.size(), t.rows);
  EXPECT_EQ(t.frames.codes.size(), t.rows);
}

}  // namespace
}  // namespace fr
