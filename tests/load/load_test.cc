// Loading whole directories from real files on disk: one bad file among many is reported with its
// path and byte offset while the rest load; missing ranks are found; threads do not change results.
#include "fr/load/load.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
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

// Several per-host folders name each rank's host; one folder holding every rank is the job's
// folder (an upload named "job", a "dumps" folder), and no rank's host.
TEST_F(LoadTraceTest, PerHostFoldersNameHostsButOneSharedFolderDoesNot) {
  ExampleJobOptions options;
  options.world_size = 4;
  for (int rank = 0; rank < 4; ++rank) {
    Write(fmt::format("hosts/node{}/nccl_trace_rank_{}", rank / 2, rank),
          WriteDumpPickle(MakeExampleRankDump(options, rank)));
    Write(fmt::format("alone/dumps/nccl_trace_rank_{}", rank),
          WriteDumpPickle(MakeExampleRankDump(options, rank)));
  }
  absl::StatusOr<LoadedTrace> hosts = LoadTrace((dir_ / "hosts").string());
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_EQ(hosts->ranks.size(), 4u);
  EXPECT_EQ(hosts->ranks[0].host, "node0");
  EXPECT_EQ(hosts->ranks[3].host, "node1");

  absl::StatusOr<LoadedTrace> shared = LoadTrace((dir_ / "alone").string());
  ASSERT_TRUE(shared.ok()) << shared.status();
  ASSERT_EQ(shared->ranks.size(), 4u);
  for (const RankDump& rank : shared->ranks) EXPECT_EQ(rank.host, "") << rank.path;
}

// Per-node folders that each hold a folder of the same name (node0/dumps, node1/dumps: what a
// job copied from each node looks like) are named by the node, not by the shared inner name.
TEST_F(LoadTraceTest, PerNodeFoldersOfSameNamedDumpFoldersNameTheNode) {
  ExampleJobOptions options;
  options.world_size = 4;
  for (int rank = 0; rank < 4; ++rank) {
    Write(fmt::format("job/node{}/dumps/nccl_trace_rank_{}", rank / 2, rank),
          WriteDumpPickle(MakeExampleRankDump(options, rank)));
  }
  absl::StatusOr<LoadedTrace> trace = LoadTrace((dir_ / "job").string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->ranks.size(), 4u);
  for (const RankDump& rank : trace->ranks) {
    EXPECT_EQ(rank.host, fmt::format("node{}", rank.rank / 2)) << rank.path;
  }
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

// PyTorch writes the default group's whole rank list into every dump: kept per dump, a job of N
// ranks would hold N^2 ranks. The loader makes every dump's list one list, on 1 thread or 2, from
// files and from bytes, and the lists still read as each dump wrote them.
TEST_F(LoadTraceTest, EveryDumpsWorldListIsOneListInMemory) {
  ExampleJobOptions options;
  options.world_size = 64;
  options.entries_per_rank = 20;
  std::map<int64_t, std::shared_ptr<const Buffer>> dumps;
  for (int64_t rank = 0; rank < options.world_size; ++rank) {
    std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, rank));
    Write("nccl_trace_rank_" + std::to_string(rank), bytes);
    dumps[rank] = Buffer::FromString(std::move(bytes));
  }
  std::vector<int64_t> world(options.world_size);
  for (int64_t r = 0; r < options.world_size; ++r) world[r] = r;
  auto world_list = [&](const RankDump& dump) -> const SharedRanks* {
    for (const ProcessGroup& group : dump.groups) {
      if (group.ranks.size() == world.size()) return &group.ranks;
    }
    return nullptr;
  };
  for (int jobs : {1, 2}) {
    LoadOptions load;
    load.jobs = jobs;
    for (bool from_files : {true, false}) {
      absl::StatusOr<LoadedTrace> trace =
          from_files ? LoadTrace(dir_.string(), load) : LoadTraceFromBytes(dumps, load);
      ASSERT_TRUE(trace.ok()) << trace.status();
      ASSERT_EQ(trace->ranks.size(), world.size());
      const SharedRanks* first = world_list(trace->ranks.front());
      ASSERT_NE(first, nullptr);
      for (const RankDump& dump : trace->ranks) {
        const SharedRanks* ranks = world_list(dump);
        ASSERT_NE(ranks, nullptr) << "rank " << dump.rank;
        EXPECT_TRUE(ranks->SharesStorageWith(*first)) << "rank " << dump.rank;
        EXPECT_EQ(ranks->ToVector(), world);
      }
    }
  }
}

std::vector<int64_t> LoadedRanks(const LoadedTrace& trace) {
  std::vector<int64_t> ranks;
  for (const RankDump& dump : trace.ranks) ranks.push_back(dump.rank);
  return ranks;
}

// The reason `name` (a path ending) was skipped, or "<not skipped>".
std::string SkipReason(const LoadedTrace& trace, const std::string& name) {
  for (const SkippedFile& file : trace.skipped) {
    if (file.path.ends_with("/" + name)) return file.reason;
  }
  return "<not skipped>";
}

TEST_F(LoadTraceTest, SeveralFilesForOneRankKeepTheRankLoaded) {
  ExampleJobOptions options;
  options.world_size = 8;
  for (int64_t rank = 0; rank < 8; ++rank) {
    Write("nccl_trace_rank_" + std::to_string(rank),
          WriteDumpPickle(MakeExampleRankDump(options, rank)));
  }
  // Rank 5: a .zst copy beside the original, and an older dump (fewer, older entries) backed up.
  ASSERT_EQ(std::system(("zstd -q -k -f " + (dir_ / "nccl_trace_rank_5").string()).c_str()), 0);
  ExampleJobOptions earlier = options;
  earlier.entries_per_rank = options.entries_per_rank / 2;
  Write("backup/nccl_trace_rank_5", WriteDumpPickle(MakeExampleRankDump(earlier, 5)));
  // Rank 2: a damaged copy and a JSON file that is no dump (a report saved into the directory).
  std::string rank_2 = WriteDumpPickle(MakeExampleRankDump(options, 2));
  Write("copies/nccl_trace_rank_2", rank_2.substr(0, rank_2.size() / 2));
  Write("report_2.json", R"({"schema_version": 1, "verdict": {}, "inputs": {}})");
  // Rank 3: a JSON dump and the newer pickle of the same rank.
  Write("nccl_trace_rank_3.json", WriteDumpJson(MakeExampleRankDump(earlier, 3)));

  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(LoadedRanks(*trace), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(trace->rejected.empty());
  EXPECT_TRUE(trace->missing_ranks.empty());
  EXPECT_TRUE(trace->conflicts.empty());
  EXPECT_EQ(trace->ranks[5].path, (dir_ / "nccl_trace_rank_5").string());
  EXPECT_EQ(trace->ranks[5].entries.size(), static_cast<size_t>(options.entries_per_rank));
  EXPECT_EQ(trace->ranks[3].path, (dir_ / "nccl_trace_rank_3").string());
  EXPECT_EQ(SkipReason(*trace, "nccl_trace_rank_5.zst"), "same content as " +
                                                             (dir_ / "nccl_trace_rank_5").string() +
                                                             " (after decompression): one dump");
  EXPECT_THAT(SkipReason(*trace, "backup/nccl_trace_rank_5"),
              HasSubstr("rank 5 is read from " + (dir_ / "nccl_trace_rank_5").string() +
                        ", whose records are newer"));
  EXPECT_THAT(SkipReason(*trace, "nccl_trace_rank_3.json"), HasSubstr("rank 3 is read from"));
  EXPECT_THAT(SkipReason(*trace, "copies/nccl_trace_rank_2"),
              HasSubstr("this other file of rank 2 could not be read"));
  EXPECT_EQ(SkipReason(*trace, "report_2.json"),
            "not a flight-recorder dump: JSON of an fr-analyze report");
  // Dumps set aside keep the rank they claimed (they were read: -o must not overwrite them).
  std::vector<std::pair<std::string, int64_t>> ranks_of_skipped;
  for (const SkippedFile& file : trace->skipped) {
    ranks_of_skipped.emplace_back(fs::path(file.path).lexically_relative(dir_).string(), file.rank);
  }
  EXPECT_THAT(ranks_of_skipped,
              ElementsAre(std::pair<std::string, int64_t>("backup/nccl_trace_rank_5", 5),
                          std::pair<std::string, int64_t>("copies/nccl_trace_rank_2", 2),
                          std::pair<std::string, int64_t>("nccl_trace_rank_3.json", 3),
                          std::pair<std::string, int64_t>("nccl_trace_rank_5.zst", 5),
                          std::pair<std::string, int64_t>("report_2.json", -1)));
}

TEST_F(LoadTraceTest, AJunkFileNamedLikeARankDoesNotExtendTheJob) {
  ExampleJobOptions options;
  options.world_size = 8;
  for (int64_t rank = 0; rank < 8; ++rank) {
    Write("nccl_trace_rank_" + std::to_string(rank),
          WriteDumpPickle(MakeExampleRankDump(options, rank)));
  }
  Write("nccl_trace_rank_20", std::string("\x13\x37\x00\xfe garbage \x01\x02", 14));
  Write("nccl_trace_rank_21", "\x80\x02}q\x00(");  // a damaged dump of a rank no dump lists
  Write("nccl_trace_rank_22.json", "[1, 2, 3]");   // JSON, but no dump

  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(LoadedRanks(*trace), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(trace->missing_ranks.empty());
  EXPECT_TRUE(trace->rejected.empty());
  EXPECT_EQ(SkipReason(*trace, "nccl_trace_rank_20"),
            "not a flight-recorder dump: binary data of an unknown kind");
  EXPECT_THAT(SkipReason(*trace, "nccl_trace_rank_21"),
              HasSubstr("named rank 21, which no readable dump lists in its process groups"));
  EXPECT_EQ(SkipReason(*trace, "nccl_trace_rank_22.json"),
            "not a flight-recorder dump: JSON holding a list of other things than entries");
}

TEST_F(LoadTraceTest, AStrayCopyNamedForAFarRankIsSetAsideWithoutCostPerRank) {
  ExampleJobOptions options;
  options.world_size = 8;
  for (int64_t rank = 0; rank < 8; ++rank) {
    Write("nccl_trace_rank_" + std::to_string(rank),
          WriteDumpPickle(MakeExampleRankDump(options, rank)));
  }
  // Its own pg_config says the job has ranks 0-7: the name lies.
  Write("nccl_trace_rank_999999", WriteDumpPickle(MakeExampleRankDump(options, 3)));
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(LoadedRanks(*trace), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(trace->missing_ranks.empty());
  EXPECT_THAT(SkipReason(*trace, "nccl_trace_rank_999999"),
              HasSubstr("none of its own process groups (pg_config) lists rank 999999"));
}

TEST_F(LoadTraceTest, AFarRankWithoutRankListsIsSetAsideToo) {
  // Real Gloo dumps list no ranks (placeholder pg_config): only the name says rank 999999.
  fs::path healthy = fs::path(FR_TEST_DATA_DIR) / "torch/2.13.0/healthy/dumps";
  for (const auto& entry : fs::directory_iterator(healthy)) {
    fs::copy_file(entry.path(), dir_ / entry.path().filename());
  }
  fs::copy_file(healthy / "nccl_trace_rank_3.zst", dir_ / "nccl_trace_rank_999999.zst");
  Write("nccl_trace_rank_12", "\x80\x02}q\x00(");  // damaged, near: still counts as a rank

  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir_.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(LoadedRanks(*trace), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THAT(SkipReason(*trace, "nccl_trace_rank_999999.zst"),
              HasSubstr("rank 999999 lies far beyond every other rank found"));
  ASSERT_EQ(trace->rejected.size(), 1u);
  EXPECT_EQ(trace->rejected[0].rank, 12);
  EXPECT_THAT(trace->missing_ranks, ElementsAre(8, 9, 10, 11));
}

TEST_F(LoadTraceTest, FarRanksInMemoryAreSetAsideToo) {
  ExampleJobOptions options;
  options.world_size = 2;
  std::map<int64_t, std::shared_ptr<const Buffer>> dumps;
  dumps[0] = Buffer::FromString(WriteDumpPickle(MakeExampleRankDump(options, 0)));
  dumps[1] = Buffer::FromString(WriteDumpPickle(MakeExampleRankDump(options, 1)));
  dumps[1'000'000] = Buffer::FromString("\x80\x02garbage");
  absl::StatusOr<LoadedTrace> trace = LoadTraceFromBytes(dumps);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(LoadedRanks(*trace), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(trace->missing_ranks.empty());
  EXPECT_TRUE(trace->rejected.empty());
  ASSERT_EQ(trace->skipped.size(), 1u);
  EXPECT_EQ(trace->skipped[0].rank, 1'000'000);
}

TEST_F(LoadTraceTest, AFifoNamedLikeADumpFailsAtOnce) {
  ASSERT_EQ(::mkfifo((dir_ / "nccl_trace_rank_0").c_str(), 0600), 0);
  absl::StatusOr<RankDump> dump = LoadDumpFile((dir_ / "nccl_trace_rank_0").string(), 0);
  EXPECT_EQ(dump.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dump.status().message(), HasSubstr("a FIFO, not a regular file"));
}

TEST_F(LoadTraceTest, AMissingDirectoryIsAnError) {
  absl::StatusOr<LoadedTrace> trace = LoadTrace((dir_ / "nope").string());
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace fr
