// Files read while their folder is still being written (the console's uploads): the load of the
// finished folder uses what was read early and gives the trace a plain load gives, reads again
// what changed since, and leaves out what discovery leaves out.
#include "fr/load/early_reads.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
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

// Files held in memory (ReadHeld): an archive's members handed to the analysis through a pipe,
// written to disk only afterwards.
class HeldFilesTest : public EarlyReadsTest {
 protected:
  struct Member {
    std::string path;  // as framed
    std::string bytes;
    int64_t mtime_ns = 0;
  };

  static std::string Frame(const Member& member) {
    std::string out;
    auto put = [&](uint64_t value, int bytes) {
      for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i) & 0xff));
    };
    put(member.path.size(), 4);
    out += member.path;
    put(member.bytes.size(), 8);
    put(static_cast<uint64_t>(member.mtime_ns), 8);
    out += member.bytes;
    return out;
  }

  // Writes `stream` into a new pipe from a thread of its own (a pipe holds 64 KiB: the reader
  // must read while it is written), then closes it; ReadHeld takes the read end.
  void Send(EarlyReads& early, std::string stream) {
    int ends[2];
    ASSERT_EQ(::pipe(ends), 0);
    early.ReadHeld(ends[0]);
    writer_ = std::thread([fd = ends[1], stream = std::move(stream)] {
      size_t sent = 0;
      while (sent < stream.size()) {
        ssize_t n = ::write(fd, stream.data() + sent, stream.size() - sent);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(fd);
    });
  }

  // Writes the held members to disk as the console does after answering: at their framed
  // paths (under dir_), with their framed modification times.
  void Materialize(const std::vector<Member>& members) {
    for (const Member& member : members) {
      fs::path path = Write(fs::path(member.path).lexically_relative(dir_).string(), member.bytes);
      struct timespec times[2] = {
          {member.mtime_ns / 1'000'000'000, member.mtime_ns % 1'000'000'000},
          {member.mtime_ns / 1'000'000'000, member.mtime_ns % 1'000'000'000}};
      ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    }
  }

  void TearDown() override {
    if (writer_.joinable()) writer_.join();
    EarlyReadsTest::TearDown();
  }

  // The error of a load of `root` that must fail (OK when it did not).
  static absl::Status FailedLoad(const fs::path& root, EarlyReads& early) {
    LoadOptions options;
    options.early = &early;
    absl::StatusOr<LoadedTrace> trace = LoadTrace(root.string(), options);
    EXPECT_FALSE(trace.ok());
    return trace.status();
  }

  std::vector<Member> JobMembers(const fs::path& folder) {
    std::vector<Member> members;
    for (int64_t rank = 0; rank < job_.world_size; ++rank) {
      if (rank == 9) continue;  // the crashed rank left no dump
      std::string bytes = Dump(rank);
      if (rank == 4) bytes.resize(bytes.size() / 2);  // copied while being written
      std::string name = (rank < 8 ? "node0/" : "node1/") + fmt::format("nccl_trace_rank_{}", rank);
      members.push_back({(folder / name).string(), bytes, 1'700'000'000'123'456'789 + rank});
    }
    return members;
  }

  std::thread writer_;
};

TEST_F(HeldFilesTest, HeldMembersLoadAsTheSameFilesOnDiskDo) {
  fs::path job = dir_ / "job";
  std::vector<Member> members = JobMembers(job);
  Write("job/node0/train.log", "step 100 loss 2.31\n");  // a log stays on disk
  std::string stream;
  for (const Member& member : members) stream += Frame(member);
  EarlyReads early(/*jobs=*/1, /*background=*/true);
  Send(early, stream);

  LoadedTrace held = Load(job, &early);
  EXPECT_EQ(early.files_used(), members.size());
  Materialize(members);
  LoadedTrace plain = Load(job, nullptr);
  ExpectSameTrace(held, plain);
  EXPECT_EQ(held.ranks.size(), 14u);
  EXPECT_EQ(held.missing_ranks, std::vector<int64_t>{9});
  ASSERT_EQ(held.rejected.size(), 1u);
  EXPECT_THAT(held.rejected[0].error, HasSubstr("nccl_trace_rank_4"));
  // The dump time comes from the members' own times, as from the files' once written.
  EXPECT_EQ(held.ranks[0].file_mtime_ns, 1'700'000'000'123'456'789);
}

TEST_F(HeldFilesTest, AHeldFileClaimingARankOnDiskIsSettledByContent) {
  fs::path job = dir_ / "job";
  for (int64_t rank = 0; rank < 4; ++rank)
    Write("job/nccl_trace_rank_" + std::to_string(rank), Dump(rank));
  // A copy of rank 2 from a longer run, held: only the contents can tell which is newer.
  std::vector<Member> members = {{(job / "backup/nccl_trace_rank_2").string(), Dump(2, 60), 0}};
  EarlyReads early(/*jobs=*/1);
  Send(early, Frame(members[0]));
  LoadedTrace held = Load(job, &early);
  Materialize(members);
  ExpectSameTrace(held, Load(job, nullptr));
  EXPECT_EQ(held.ranks.size(), 4u);
}

TEST_F(HeldFilesTest, OnlyHeldFilesUnderTheRootAndNamedAsDumpsAreLoaded) {
  fs::create_directories(dir_ / "job");
  std::string stream = Frame({(dir_ / "job/nccl_trace_rank_0").string(), Dump(0), 0}) +
                       Frame({(dir_ / "job2/nccl_trace_rank_1").string(), Dump(1), 0}) +
                       Frame({(dir_ / "job/.cache/nccl_trace_rank_2").string(), Dump(2), 0}) +
                       Frame({(dir_ / "job/notes.txt").string(), "hello\n", 0});
  EarlyReads early(/*jobs=*/1);
  Send(early, stream);
  LoadedTrace trace = Load(dir_ / "job", &early);
  ASSERT_EQ(trace.ranks.size(), 1u);
  EXPECT_EQ(trace.ranks[0].path, (dir_ / "job/nccl_trace_rank_0").string());
  std::vector<std::string> skipped;
  for (const SkippedFile& file : trace.skipped) skipped.push_back(file.path);
  EXPECT_THAT(skipped,
              ::testing::UnorderedElementsAre((dir_ / "job/.cache/nccl_trace_rank_2").string(),
                                              (dir_ / "job/notes.txt").string()));
}

TEST_F(HeldFilesTest, AHeldFileOverTheSizeLimitIsThatFilesErrorAlone) {
  // One bad member among many is reported, and the others analysed, as on disk.
  fs::path job = dir_ / "job";
  fs::create_directories(job);
  std::string small = Dump(1, 20);
  std::string large = Dump(0, 400);
  ASSERT_GT(large.size(), small.size() + 100);
  ReadOptions read;
  read.max_decompressed_bytes = small.size() + 100;
  EarlyReads early(/*jobs=*/1, /*background=*/false, DiscoverOptions(), read);
  Send(early, Frame({(job / "nccl_trace_rank_0").string(), large, 0}) +
                  Frame({(job / "nccl_trace_rank_1").string(), small, 0}));
  LoadedTrace trace = Load(job, &early);
  ASSERT_EQ(trace.ranks.size(), 1u);
  EXPECT_EQ(trace.ranks[0].rank, 1);
  ASSERT_EQ(trace.rejected.size(), 1u);
  EXPECT_THAT(trace.rejected[0].path, HasSubstr("nccl_trace_rank_0"));
  EXPECT_THAT(trace.rejected[0].error, HasSubstr("more than"));
}

TEST_F(HeldFilesTest, APipeThatEndsInsideAFileFailsTheLoadAndSaysSo) {
  fs::create_directories(dir_ / "job");
  std::string stream = Frame({(dir_ / "job/nccl_trace_rank_0").string(), Dump(0), 0});
  stream.resize(stream.size() - 10);  // the server died mid-member
  EarlyReads early(/*jobs=*/1);
  Send(early, stream);
  absl::Status failed = FailedLoad(dir_ / "job", early);
  EXPECT_THAT(failed.message(), HasSubstr("ended inside"));
  EXPECT_THAT(failed.message(), HasSubstr("nccl_trace_rank_0"));
}

TEST_F(HeldFilesTest, AFrameClaimingAnAbsurdPathIsRefused) {
  fs::create_directories(dir_ / "job");
  std::string stream = "\xff\xff\xff\x7f" + std::string(64, 'x');
  EarlyReads early(/*jobs=*/1);
  Send(early, stream);
  EXPECT_THAT(FailedLoad(dir_ / "job", early).message(), HasSubstr("claims a path of"));
}

TEST_F(HeldFilesTest, StoppingWhileFilesStillArriveReturnsPromptly) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  auto started = std::chrono::steady_clock::now();
  {
    EarlyReads early(/*jobs=*/1);
    early.ReadHeld(ends[0]);
    std::string half = Frame({"job/nccl_trace_rank_0", Dump(0), 0}).substr(0, 1000);
    ASSERT_EQ(::write(ends[1], half.data(), half.size()), static_cast<ssize_t>(half.size()));
  }  // the upload was refused while the writer still holds the pipe open
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  ::close(ends[1]);
}

}  // namespace
}  // namespace fr
