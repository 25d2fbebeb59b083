// The load summary as data: built from dumps written to disk, it names what a user would look
// for (ranks read and missing, bad files, groups, entries), and its JSON and binary forms are the
// same message.
#include "fr/report/load_summary.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fr/load/load.h"
#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LoadSummaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("fr_load_summary_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ExampleJobOptions options;
    options.world_size = 8;
    options.entries_per_rank = 30;
    options.stuck_rank = 5;
    for (int64_t rank = 0; rank < options.world_size; ++rank) {
      if (rank == 6) continue;  // a rank that left no dump
      std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, rank));
      if (rank == 3) bytes.resize(bytes.size() / 2);  // cut short while copying
      Write("nccl_trace_rank_" + std::to_string(rank), bytes);
    }
    Write("nccl_trace_rank_0.pipe", "");
    Write(std::string("notes-\xff.txt"), "not a dump");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& bytes) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }

  fs::path dir_;
};

TEST_F(LoadSummaryTest, NamesRanksBadFilesGroupsAndEntries) {
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string(), {});
  ASSERT_TRUE(trace.ok()) << trace.status();
  report::LoadSummary summary = BuildLoadSummary(*trace, dir_.string());

  EXPECT_EQ(summary.source(), dir_.string());
  EXPECT_THAT(summary.ranks_loaded(), ElementsAre(0, 1, 2, 4, 5, 7));
  EXPECT_THAT(summary.ranks_missing(), ElementsAre(6));
  EXPECT_THAT(summary.versions(), ElementsAre("2.10"));
  ASSERT_EQ(summary.files_rejected_size(), 1);
  EXPECT_EQ(summary.files_rejected(0).rank(), 3);
  EXPECT_THAT(summary.files_rejected(0).error(), HasSubstr("byte"));
  ASSERT_EQ(summary.files_skipped_size(), 2);
  std::vector<std::string> skipped;
  for (const auto& file : summary.files_skipped()) {
    skipped.push_back(fs::path(file.path()).filename().string());
  }
  // File names are bytes; the summary holds valid UTF-8 (U+FFFD for the stray byte).
  EXPECT_THAT(skipped, testing::UnorderedElementsAre("nccl_trace_rank_0.pipe", "notes-\uFFFD.txt"));

  ASSERT_EQ(summary.per_rank_size(), 6);
  int64_t entries = 0;
  for (const auto& rank : summary.per_rank()) {
    EXPECT_EQ(rank.entries(), 30) << rank.rank();
    EXPECT_TRUE(rank.has_stacks());
    entries += rank.entries();
  }
  // Every entry belongs to exactly one group, so the groups' counts add up to the ranks'.
  int64_t group_entries = 0;
  const report::LoadedGroup* world = nullptr;
  for (const auto& group : summary.process_groups()) {
    group_entries += group.entries();
    if (group.desc() == "default_pg") world = &group;
  }
  EXPECT_EQ(group_entries, entries);
  ASSERT_NE(world, nullptr);
  EXPECT_THAT(world->ranks(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(world->seen_by(), ElementsAre(0, 1, 2, 4, 5, 7));
  EXPECT_TRUE(world->ranks_known());
  EXPECT_GT(summary.bytes_on_disk(), 0);
  EXPECT_GE(summary.bytes_decoded(), summary.bytes_on_disk());
}

TEST_F(LoadSummaryTest, JsonAndBinaryFormsAreTheSameMessage) {
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string(), {});
  ASSERT_TRUE(trace.ok()) << trace.status();
  report::LoadSummary summary = BuildLoadSummary(*trace, dir_.string());
  absl::StatusOr<std::string> json = FormatLoadSummaryJson(*trace, dir_.string());
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_THAT(*json, HasSubstr("\"ranks_missing\""));

  report::LoadSummary from_json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &from_json).ok());
  report::LoadSummary from_binary;
  ASSERT_TRUE(from_binary.ParseFromString(summary.SerializeAsString()));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(from_json, summary));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(from_binary, summary));
  // Deterministic: loading again (with another thread count) gives the same bytes.
  LoadOptions one_thread;
  one_thread.jobs = 1;
  absl::StatusOr<LoadedTrace> again = LoadTrace(dir_.string(), one_thread);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(FormatLoadSummaryJson(*again, dir_.string()).value(), *json);
}

}  // namespace
}  // namespace fr
