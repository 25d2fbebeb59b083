// Loading whole directories from real files on disk: one bad file among many is reported with its
// path and byte offset while the rest load; missing ranks are found; threads do not change results.
#include "fr/load/load.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LoadTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("fr_load_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& bytes) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }

  fs::path dir_;
};

TEST_F(LoadTraceTest, OneBadFileAmongManyIsReportedAndTheRestLoad) {
  ExampleJobOptions options;
  options.world_size = 16;
  options.entries_per_rank = 100;
  options.stuck_rank = 9;
  for (int64_t rank = 0; rank < options.world_size; ++rank) {
    if (rank == 9) continue;  // the crashed rank left no dump
    std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, rank));
    if (rank == 4) bytes.resize(bytes.size() / 2);  // copied while being written
    Write("nccl_trace_rank_" + std::to_string(rank), bytes);
  }
  Write("nccl_trace_rank_0.pipe", "");
  Write("train.log", "step 100 loss 2.31\n");

  for (int jobs : {1, 2}) {
    LoadOptions load;
    load.jobs = jobs;
    absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string(), load);
    ASSERT_TRUE(trace.ok()) << trace.status();
    std::vector<int64_t> loaded;
    for (const RankDump& dump : trace->ranks) loaded.push_back(dump.rank);
    EXPECT_EQ(loaded, (std::vector<int64_t>{0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15}));
    EXPECT_THAT(trace->missing_ranks, ElementsAre(9));
    ASSERT_EQ(trace->rejected.size(), 1u);
    EXPECT_EQ(trace->rejected[0].rank, 4);
    EXPECT_THAT(trace->rejected[0].error, HasSubstr("nccl_trace_rank_4"));
    EXPECT_THAT(trace->rejected[0].error, HasSubstr("byte "));
    EXPECT_EQ(trace->skipped.size(), 2u);
    EXPECT_THAT(trace->versions, ElementsAre("2.10"));
    for (const RankDump& dump : trace->ranks) EXPECT_EQ(dump.entries.size(), 100u);
  }
}

TEST_F(LoadTraceTest, CompressedJsonAndPerHostFoldersLoadTogether) {
  ExampleJobOptions options;
  options.world_size = 4;
  Write("node0/nccl_trace_rank_0", WriteDumpPickle(MakeExampleRankDump(options, 0)));
  Write("node0/nccl_trace_rank_1.json", WriteDumpJson(MakeExampleRankDump(options, 1)));
  Write("node1/nccl_trace_rank_2", WriteDumpPickle(MakeExampleRankDump(options, 2)));
  Write("node1/nccl_trace_rank_3", WriteDumpPickle(MakeExampleRankDump(options, 3)));
  // Compress rank 2 with the real zstd tool, keeping a name without the extension.
  std::string path = (dir_ / "node1/nccl_trace_rank_2").string();
  ASSERT_EQ(std::system(("zstd -q --rm -f " + path + " -o " + path + ".zst").c_str()), 0);

  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->ranks.size(), 4u) << (trace->rejected.empty() ? "" : trace->rejected[0].error);
  EXPECT_TRUE(trace->missing_ranks.empty());
  EXPECT_TRUE(trace->ranks[0].has_stacks);
  EXPECT_FALSE(trace->ranks[1].has_stacks);               // the JSON dump
  EXPECT_LT(trace->bytes_on_disk, trace->bytes_decoded);  // rank 2 was compressed
}

TEST_F(LoadTraceTest, InMemoryDumpsLoadLikeFiles) {
  ExampleJobOptions options;
  std::map<int64_t, std::shared_ptr<const Buffer>> dumps;
  dumps[0] = Buffer::FromString(WriteDumpPickle(MakeExampleRankDump(options, 0)));
  dumps[1] = Buffer::FromString("\x80\x02garbage");
  absl::StatusOr<LoadedTrace> trace = LoadTraceFromBytes(dumps);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->ranks.size(), 1u);
  ASSERT_EQ(trace->rejected.size(), 1u);
  EXPECT_EQ(trace->rejected[0].rank, 1);
  EXPECT_THAT(trace->rejected[0].error, HasSubstr("<rank 1 bytes>"));
}

TEST_F(LoadTraceTest, AMissingDirectoryIsAnError) {
  absl::StatusOr<LoadedTrace> trace = LoadTrace((dir_ / "nope").string());
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace fr
