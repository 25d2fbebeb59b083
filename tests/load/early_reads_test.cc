// Files read while their folder is still being written (the console's uploads): the load of the
// finished folder uses what was read early and gives the trace a plain load gives, reads again
// what changed since, and leaves out what discovery leaves out.
#include "fr/load/early_reads.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "fr/load/load.h"
#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class EarlyReadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("fr_early_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    job_.world_size = 16;
    job_.entries_per_rank = 100;
    job_.stuck_rank = 9;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path Write(const std::string& name, const std::string& bytes) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << bytes;
    return dir_ / name;
  }

  std::string Dump(int64_t rank, int entries = 100) {
    ExampleJobOptions options = job_;
    options.entries_per_rank = entries;
    return WriteDumpPickle(MakeExampleRankDump(options, rank));
  }

  static void WaitForReads(const EarlyReads& early, size_t files) {
    for (int i = 0; i < 2000 && early.files_read() < files; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_GE(early.files_read(), files);
  }

  static LoadedTrace Load(const fs::path& root, EarlyReads* early) {
    LoadOptions options;
    options.jobs = 2;
    options.early = early;
    absl::StatusOr<LoadedTrace> trace = LoadTrace(root.string(), options);
    EXPECT_TRUE(trace.ok()) << trace.status();
    return trace.ok() ? *std::move(trace) : LoadedTrace();
  }

  // What a user sees of a trace: which ranks, from which files, with what in them, and what
  // was left out and why.
  static void ExpectSameTrace(const LoadedTrace& early, const LoadedTrace& plain) {
    ASSERT_EQ(early.ranks.size(), plain.ranks.size());
    for (size_t i = 0; i < plain.ranks.size(); ++i) {
      EXPECT_EQ(early.ranks[i].rank, plain.ranks[i].rank);
      EXPECT_EQ(early.ranks[i].path, plain.ranks[i].path);
      EXPECT_EQ(early.ranks[i].host, plain.ranks[i].host);
      EXPECT_EQ(early.ranks[i].entries.size(), plain.ranks[i].entries.size());
      EXPECT_EQ(early.ranks[i].file_mtime_ns, plain.ranks[i].file_mtime_ns);
      EXPECT_EQ(early.ranks[i].version, plain.ranks[i].version);
    }
    EXPECT_EQ(early.missing_ranks, plain.missing_ranks);
    ASSERT_EQ(early.rejected.size(), plain.rejected.size());
    for (size_t i = 0; i < plain.rejected.size(); ++i) {
      EXPECT_EQ(early.rejected[i].path, plain.rejected[i].path);
      EXPECT_EQ(early.rejected[i].error, plain.rejected[i].error);
    }
    ASSERT_EQ(early.skipped.size(), plain.skipped.size());
    for (size_t i = 0; i < plain.skipped.size(); ++i) {
      EXPECT_EQ(early.skipped[i].path, plain.skipped[i].path);
    }
  }

  fs::path dir_;
  ExampleJobOptions job_;
};

TEST_F(EarlyReadsTest, AFolderReadAsItWasWrittenLoadsAsThePlainLoadDoes) {
  EarlyReads early(/*jobs=*/2);
  for (int64_t rank = 0; rank < job_.world_size; ++rank) {
    if (rank == 9) continue;  // the crashed rank left no dump
    std::string bytes = Dump(rank);
    if (rank == 4) bytes.resize(bytes.size() / 2);  // copied while being written
    std::string name = (rank < 8 ? "node0/" : "node1/") + fmt::format("nccl_trace_rank_{}", rank);
    Write(name, bytes);
    // The writer names files in its own spelling; the load finds them by walking the root.
    early.FileComplete((dir_ / "node0" / ".." / name).string());
  }
  early.FileComplete(Write("node0/train.log", "step 100 loss 2.31\n").string());
  early.FileComplete(Write("node0/nccl_trace_rank_0.pipe", "").string());
  WaitForReads(early, 15);

  LoadedTrace with_early = Load(dir_, &early);
  LoadedTrace plain = Load(dir_, nullptr);
  ExpectSameTrace(with_early, plain);
  EXPECT_EQ(with_early.ranks.size(), 14u);
  ASSERT_EQ(with_early.rejected.size(), 1u);
  EXPECT_THAT(with_early.rejected[0].error, HasSubstr("nccl_trace_rank_4"));
  EXPECT_EQ(with_early.ranks[0].host, "node0");
  // Every dump file was read once, early (the damaged one too); the log and the pipe never.
  EXPECT_EQ(early.files_read(), 15u);
  EXPECT_EQ(early.files_used(), 15u);
}

TEST_F(EarlyReadsTest, AFileRewrittenAfterItWasReadIsReadAgain) {
  EarlyReads early(/*jobs=*/1);
  for (int64_t rank = 0; rank < 4; ++rank) {
    early.FileComplete(Write("nccl_trace_rank_" + std::to_string(rank), Dump(rank)).string());
  }
  WaitForReads(early, 4);
  // Rewritten in place (same inode): a longer run's dump with fewer entries kept.
  Write("nccl_trace_rank_2", Dump(2, /*entries=*/40));

  LoadedTrace trace = Load(dir_, &early);
  ASSERT_EQ(trace.ranks.size(), 4u);
  EXPECT_EQ(trace.ranks[2].entries.size(), 40u);
  EXPECT_EQ(trace.ranks[1].entries.size(), 100u);
  EXPECT_EQ(early.files_used(), 3u);
}

TEST_F(EarlyReadsTest, ARankClaimedByTwoFilesIsSettledByTheirContent) {
  EarlyReads early(/*jobs=*/2);
  for (int64_t rank = 0; rank < 4; ++rank) {
    early.FileComplete(Write("nccl_trace_rank_" + std::to_string(rank), Dump(rank)).string());
  }
  // A copy of rank 2 from a longer run: only the contents (hashed) can tell which is newer.
  early.FileComplete(Write("backup/nccl_trace_rank_2", Dump(2, 60)).string());
  WaitForReads(early, 5);

  ExpectSameTrace(Load(dir_, &early), Load(dir_, nullptr));
  // The contested rank's two files were read again, with their contents hashed.
  EXPECT_EQ(early.files_used(), 3u);
}

TEST_F(EarlyReadsTest, FilesNotYetReadAreReadByTheLoad) {
  std::vector<std::string> paths;
  for (int64_t rank = 0; rank < job_.world_size; ++rank) {
    paths.push_back(Write("nccl_trace_rank_" + std::to_string(rank), Dump(rank)).string());
  }
  // One thread, named all at once, loaded at once: most reads are still queued and are taken
  // back by the load, the one under way is waited for.
  EarlyReads early(/*jobs=*/1);
  for (const std::string& path : paths) early.FileComplete(path);
  LoadedTrace trace = Load(dir_, &early);
  ExpectSameTrace(trace, Load(dir_, nullptr));
  EXPECT_EQ(trace.ranks.size(), 16u);
  EXPECT_LE(early.files_used(), early.files_read());
}

TEST_F(EarlyReadsTest, StoppingWithReadsQueuedReturnsPromptly) {
  std::string bytes = Dump(0);
  std::vector<std::string> paths;
  for (int i = 0; i < 200; ++i) {
    paths.push_back(Write("nccl_trace_rank_" + std::to_string(i), bytes).string());
  }
  auto started = std::chrono::steady_clock::now();
  {
    EarlyReads early(/*jobs=*/2);
    for (const std::string& path : paths) early.FileComplete(path);
  }  // the upload was refused: the reads stop
  // Waits only for the reads under way (one file per thread), not for the 200.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST_F(EarlyReadsTest, APathThatIsNoFileIsIgnored) {
  EarlyReads early;
  early.FileComplete((dir_ / "gone").string());
  fs::create_directories(dir_ / "folder");
  early.FileComplete((dir_ / "folder").string());
  Write("nccl_trace_rank_0", Dump(0));
  LoadedTrace trace = Load(dir_, &early);
  EXPECT_EQ(trace.ranks.size(), 1u);
  EXPECT_EQ(early.files_read(), 0u);
}

}  // namespace
}  // namespace fr
