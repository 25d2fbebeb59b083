#include "fr/discover/discover.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The first bytes of a real pickle dump: PROTO 2, EMPTY_DICT.
constexpr std::string_view kPickleStart("\x80\x02}q\x00.", 6);

// A fresh directory per test under testing::TempDir(), removed afterwards.
class DiscoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ =
        fs::path(::testing::TempDir()) / DirName(info->test_suite_name(), info->name(), ::getpid());
    fs::remove_all(root_);
    ASSERT_TRUE(fs::create_directories(root_)) << root_;
  }

  void TearDown() override {
    std::error_code error;
    // Give back permissions a test took away, or remove_all cannot get in.
    for (const fs::path& path : locked_) {
      fs::permissions(path, fs::perms::owner_all, error);
    }
    fs::remove_all(root_, error);
  }

  static std::string DirName(std::string_view suite, std::string_view test, int pid) {
    return std::string(suite) + "." + std::string(test) + "." + std::to_string(pid);
  }

  // Writes `content` to `relative` under the root, creating folders.
  fs::path Write(const std::string& relative, std::string_view content = kPickleStart) {
    fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    EXPECT_TRUE(out.good()) << path;
    return path;
  }

  fs::path MakeFifo(const std::string& relative) {
    fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    return path;
  }

  fs::path MakeSymlink(const std::string& target, const std::string& relative) {
    fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    fs::create_symlink(target, path);
    return path;
  }

  std::string Path(const std::string& relative) const { return (root_ / relative).string(); }

  Discovery Discover(const DiscoverOptions& options = {}) {
    absl::StatusOr<Discovery> found = DiscoverDumps(root_.string(), options);
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? *std::move(found) : Discovery{};
  }

  // (rank, path relative to the root) of every discovered file, in the order returned.
  std::vector<std::pair<int64_t, std::string>> RankedFiles(const Discovery& found) const {
    std::vector<std::pair<int64_t, std::string>> ranked;
    for (const DiscoveredFile& file : found.files) {
      ranked.emplace_back(file.rank, fs::path(file.path).lexically_relative(root_).string());
    }
    return ranked;
  }

  // The reason `relative` was skipped, or "<not skipped>".
  std::string SkipReason(const Discovery& found, const std::string& relative) const {
    for (const SkippedFile& skipped : found.skipped) {
      if (skipped.path == Path(relative)) return skipped.reason;
    }
    return "<not skipped>";
  }

  // Whether a skipped file may be opened as other evidence (a log, a snapshot); nullopt when
  // the file was not skipped.
  std::optional<bool> MayReadSkipped(const Discovery& found, const std::string& relative) const {
    for (const SkippedFile& skipped : found.skipped) {
      if (skipped.path == Path(relative)) return MayReadAsOtherEvidence(skipped.kind);
    }
    return std::nullopt;
  }

  fs::path root_;
  std::vector<fs::path> locked_;
};

using Ranked = std::vector<std::pair<int64_t, std::string>>;

DiscoverOptions WithPrefix(std::string prefix) {
  DiscoverOptions options;
  options.prefix = std::move(prefix);
  return options;
}

DiscoverOptions WithPattern(std::string pattern) {
  DiscoverOptions options;
  options.rank_pattern = std::move(pattern);
  return options;
}

TEST_F(DiscoverTest, FindsEveryNamingSeenInRealDirectories) {
  Write("nccl_trace_rank_0");
  Write("comm_lib_trace_rank_1");
  Write("nccl_trace_rank_container-node02_2");
  Write("node03/nccl_trace_rank_3");
  Write("rank_4.json", "{}");
  Write("nccl_trace_rank_5.zst", "\x28\xb5\x2f\xfd");
  Write("nccl_trace_rank_6.gz", "\x1f\x8b");
  Write("nccl_trace_rank_7.json.zst", "\x28\xb5\x2f\xfd");
  Write("nccl_trace_rank_8.pkl");
  Write("rank_9.pickle");
  Write("RANK_10.JSON.GZ", "\x1f\x8b");
  Write("nccl_trace_rank_gpu-07.cluster_11");
  Write("rank_012.json", "{}");

  Discovery found = Discover();

  EXPECT_EQ(RankedFiles(found), (Ranked{{0, "nccl_trace_rank_0"},
                                        {1, "comm_lib_trace_rank_1"},
                                        {2, "nccl_trace_rank_container-node02_2"},
                                        {3, "node03/nccl_trace_rank_3"},
                                        {4, "rank_4.json"},
                                        {5, "nccl_trace_rank_5.zst"},
                                        {6, "nccl_trace_rank_6.gz"},
                                        {7, "nccl_trace_rank_7.json.zst"},
                                        {8, "nccl_trace_rank_8.pkl"},
                                        {9, "rank_9.pickle"},
                                        {10, "RANK_10.JSON.GZ"},
                                        {11, "nccl_trace_rank_gpu-07.cluster_11"},
                                        {12, "rank_012.json"}}));
  EXPECT_THAT(found.skipped, IsEmpty());
  EXPECT_THAT(found.conflicts, IsEmpty());
  EXPECT_EQ(found.files[0].size, kPickleStart.size());
}

TEST_F(DiscoverTest, DigitsInExtensionsOrAfterTheRankAreNotRanks) {
  Write("trace.bz2");
  Write("model.h5");
  Write("notes.json", "{}");
  Write("nccl_trace_rank_3.bak");
  Write("optim_rank_3.pt");
  Write("nccl_trace_rank_4.json.bz2");
  Write("trace_20240101");  // a date, not a rank
  Write("nccl_trace_rank_5_of_8x");

  Discovery found = Discover();

  EXPECT_THAT(found.files, IsEmpty());
  EXPECT_EQ(SkipReason(found, "trace.bz2"), "extension '.bz2' is not a dump format");
  EXPECT_EQ(SkipReason(found, "model.h5"), "extension '.h5' is not a dump format");
  EXPECT_EQ(SkipReason(found, "notes.json"), "no rank in the name");
  EXPECT_EQ(SkipReason(found, "nccl_trace_rank_3.bak"), "extension '.bak' is not a dump format");
  EXPECT_EQ(SkipReason(found, "optim_rank_3.pt"), "extension '.pt' is not a dump format");
  EXPECT_EQ(SkipReason(found, "nccl_trace_rank_4.json.bz2"),
            "extension '.bz2' is not a dump format");
  EXPECT_THAT(SkipReason(found, "trace_20240101"), HasSubstr("larger than any rank"));
  EXPECT_EQ(SkipReason(found, "nccl_trace_rank_5_of_8x"), "name does not end with a rank");
}

TEST_F(DiscoverTest, MaxRankIsAnOption) {
  Write("trace_20240101");
  DiscoverOptions max_rank_options;
  max_rank_options.max_rank = int64_t{1} << 40;
  Discovery found = Discover(max_rank_options);
  EXPECT_EQ(RankedFiles(found), (Ranked{{20240101, "trace_20240101"}}));
}

TEST_F(DiscoverTest, SkipsEverythingThatIsNotADumpInAMixedDirectory) {
  Write("node00/nccl_trace_rank_0");
  Write("node00/nccl_trace_rank_1.zst", "\x28\xb5\x2f\xfd");
  Write("node01/nccl_trace_rank_2");
  Write("node01/nccl_trace_rank_3", "");  // empty: the loader must reject it visibly
  MakeFifo("node00/nccl_trace_rank_0.pipe");
  MakeFifo("node01/trigger_2");
  Write("node01/nccl_trace_rank_3.pipe", "");  // a pipe trigger that is a regular file
  Write("train.log", "step 12\n");
  Write("node00/rank_1.log", "hello\n");
  Write("stdout_3.txt", "x");
  Write("job_4.out", "x");
  Write("job_4.err", "x");
  Write("train.log.1", "x");
  Write("train_5.log.gz", "\x1f\x8b");
  Write("core",
        "\x7f"
        "ELF");
  Write("core.1234",
        "\x7f"
        "ELF");
  Write("worker_7",
        "\x7f"
        "ELF\x02\x01");  // a core file without "core" in its name
  Write("python3.10",
        "\x7f"
        "ELF");
  Write(".nccl_trace_rank_9");
  Write(".ipynb_checkpoints/nccl_trace_rank_0");
  // A socket, as a running job's control channel would leave.
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string socket_path = Path("ctl_6");
  ASSERT_LT(socket_path.size(), sizeof(address.sun_path)) << socket_path;
  std::copy(socket_path.begin(), socket_path.end(), address.sun_path);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(sock);

  Discovery found = Discover();

  EXPECT_EQ(RankedFiles(found), (Ranked{{0, "node00/nccl_trace_rank_0"},
                                        {1, "node00/nccl_trace_rank_1.zst"},
                                        {2, "node01/nccl_trace_rank_2"},
                                        {3, "node01/nccl_trace_rank_3"}}));
  EXPECT_EQ(found.files[3].size, 0u);
  EXPECT_THAT(found.conflicts, IsEmpty());
  EXPECT_EQ(SkipReason(found, "node00/nccl_trace_rank_0.pipe"), "FIFO (trigger pipe)");
  EXPECT_EQ(SkipReason(found, "node01/trigger_2"), "FIFO (trigger pipe)");
  EXPECT_EQ(SkipReason(found, "node01/nccl_trace_rank_3.pipe"), "trigger pipe");
  EXPECT_EQ(SkipReason(found, "train.log"), "log file");
  EXPECT_EQ(SkipReason(found, "node00/rank_1.log"), "log file");
  EXPECT_EQ(SkipReason(found, "stdout_3.txt"), "log file");
  EXPECT_EQ(SkipReason(found, "job_4.out"), "log file");
  EXPECT_EQ(SkipReason(found, "job_4.err"), "log file");
  EXPECT_EQ(SkipReason(found, "train.log.1"), "log file");
  EXPECT_EQ(SkipReason(found, "train_5.log.gz"), "log file");
  EXPECT_EQ(SkipReason(found, "core"), "core file");
  EXPECT_EQ(SkipReason(found, "core.1234"), "core file");
  EXPECT_EQ(SkipReason(found, "worker_7"),
            "content is not a pickle, JSON, zstd or gzip stream: an ELF core file or executable");
  EXPECT_EQ(SkipReason(found, "python3.10"),
            "content is not a pickle, JSON, zstd or gzip stream: an ELF core file or executable");
  EXPECT_EQ(SkipReason(found, ".nccl_trace_rank_9"), "hidden file");
  EXPECT_EQ(SkipReason(found, ".ipynb_checkpoints"), "hidden directory (not searched)");
  EXPECT_EQ(SkipReason(found, "ctl_6"), "socket");
  EXPECT_EQ(found.skipped.size(), 17u);
  // What may be opened as a log or snapshot is decided by the kind, never by the wording: pipes
  // (a FIFO would block, a trigger file would fire), sockets, core files and hidden files never.
  for (const char* never :
       {"node00/nccl_trace_rank_0.pipe", "node01/trigger_2", "node01/nccl_trace_rank_3.pipe",
        "core", "core.1234", ".nccl_trace_rank_9", ".ipynb_checkpoints", "ctl_6"}) {
    EXPECT_EQ(MayReadSkipped(found, never), false) << never;
  }
  for (const char* may :
       {"train.log", "node00/rank_1.log", "job_4.err", "train_5.log.gz", "worker_7"}) {
    EXPECT_EQ(MayReadSkipped(found, may), true) << may;
  }
  EXPECT_TRUE(
      std::is_sorted(found.skipped.begin(), found.skipped.end(),
                     [](const SkippedFile& a, const SkippedFile& b) { return a.path < b.path; }));
}

TEST_F(DiscoverTest, ChecksTheFirstBytesOfNamesThatDoNotDecide) {
  Write("worker_5");                         // pickle
  Write("worker_6", "#!/bin/sh\n");          // a script
  Write("worker_7", "");                     // empty: kept for the loader to reject
  Write("worker_8", "\n {\"version\": 1}");  // JSON after whitespace
  Write("worker_9", "\x28\xb5\x2f\xfd");     // zstd

  Discovery found = Discover();

  EXPECT_EQ(RankedFiles(found),
            (Ranked{{5, "worker_5"}, {7, "worker_7"}, {8, "worker_8"}, {9, "worker_9"}}));
  EXPECT_EQ(SkipReason(found, "worker_6"),
            "content is not a pickle, JSON, zstd or gzip stream: text (a log or configuration "
            "file?)");
}

TEST_F(DiscoverTest, HeldFilesAreJudgedAsFilesOnDiskAre) {
  // An upload's members held in memory: the same names and first bytes decide, beside the
  // files that are on disk.
  Write("nccl_trace_rank_0");
  DiscoverOptions options;
  options.held = {{.relative_path = "nccl_trace_rank_1", .size = 10, .head = "\x80\x04}q"},
                  {.relative_path = "node1/worker_2", .size = 10, .head = "\x28\xb5\x2f\xfd"},
                  {.relative_path = "node1/worker_3", .size = 10, .head = "#!/b"},
                  {.relative_path = ".git/nccl_trace_rank_4", .size = 10, .head = "\x80\x04}q"},
                  {.relative_path = "train.log", .size = 10, .head = "step"}};
  Discovery found = Discover(options);
  EXPECT_EQ(RankedFiles(found),
            (Ranked{{0, "nccl_trace_rank_0"}, {1, "nccl_trace_rank_1"}, {2, "node1/worker_2"}}));
  EXPECT_THAT(SkipReason(found, "node1/worker_3"), HasSubstr("content is not a pickle"));
  EXPECT_EQ(SkipReason(found, ".git/nccl_trace_rank_4"), "hidden directory (not searched)");
  EXPECT_THAT(SkipReason(found, "train.log"), HasSubstr("log"));
  for (const DiscoveredFile& file : found.files) {
    EXPECT_EQ(file.held, file.rank != 0) << file.path;
  }
}

TEST_F(DiscoverTest, IsDumpByNameSaysWhichNamesNeedNoRead) {
  EXPECT_TRUE(IsDumpByName("job/nccl_trace_rank_3", {}));
  EXPECT_TRUE(IsDumpByName("job/node02/rank_3.json.zst", {}));
  EXPECT_FALSE(IsDumpByName("job/worker_3", {}));  // its first bytes decide
  EXPECT_FALSE(IsDumpByName("job/train.log", {}));
  EXPECT_FALSE(IsDumpByName("job/.cache/nccl_trace_rank_3", {}));
  EXPECT_FALSE(IsDumpByName("job/nccl_trace_rank_3.bak", {}));
  EXPECT_FALSE(IsDumpByName("", {}));
}

TEST_F(DiscoverTest, PrefixSelectsOneNaming) {
  Write("nccl_trace_rank_0");
  Write("nccl_trace_rank_1.json.zst", "\x28\xb5\x2f\xfd");
  Write("host/nccl_trace_rank_2");
  Write("comm_lib_trace_rank_3");
  Write("nccl_trace_rank_node02_4");
  Write("nccl_trace_rank_5.bak");
  Write("nccl_trace_rank_6.pipe", "");
  Write("rank_7.json", "{}");

  for (std::string prefix : {"nccl_trace_rank_", "/tmp/nccl_trace_rank_"}) {
    SCOPED_TRACE(prefix);
    Discovery found = Discover(WithPrefix(prefix));
    EXPECT_EQ(RankedFiles(found), (Ranked{{0, "nccl_trace_rank_0"},
                                          {1, "nccl_trace_rank_1.json.zst"},
                                          {2, "host/nccl_trace_rank_2"}}));
    EXPECT_EQ(SkipReason(found, "comm_lib_trace_rank_3"),
              "name does not start with prefix 'nccl_trace_rank_'");
    EXPECT_EQ(SkipReason(found, "rank_7.json"),
              "name does not start with prefix 'nccl_trace_rank_'");
    EXPECT_EQ(SkipReason(found, "nccl_trace_rank_node02_4"),
              "prefix 'nccl_trace_rank_' is not followed by a rank and only dump extensions");
    EXPECT_EQ(SkipReason(found, "nccl_trace_rank_5.bak"),
              "prefix 'nccl_trace_rank_' is not followed by a rank and only dump extensions");
    EXPECT_EQ(SkipReason(found, "nccl_trace_rank_6.pipe"), "trigger pipe");
  }

  // A prefix that includes the host name picks up that host's files.
  Discovery host = Discover(WithPrefix("nccl_trace_rank_node02_"));
  EXPECT_EQ(RankedFiles(host), (Ranked{{4, "nccl_trace_rank_node02_4"}}));
}

TEST_F(DiscoverTest, RankPatternMatchesTheRelativePathThenTheName) {
  Write("host3/trace_7");
  Write("host4/trace_8.zst", "\x28\xb5\x2f\xfd");
  Write("other/x_9");
  Write("host5/out_10.log", "x");

  Discovery by_path = Discover(WithPattern(R"(host\d+/trace_(\d+)(?:\.zst)?)"));
  EXPECT_EQ(RankedFiles(by_path), (Ranked{{7, "host3/trace_7"}, {8, "host4/trace_8.zst"}}));
  EXPECT_EQ(SkipReason(by_path, "other/x_9"),
            R"(does not match rank pattern 'host\d+/trace_(\d+)(?:\.zst)?')");

  // "trace_(\d+)" cannot match "host3/trace_7" as a whole; it matches the name.
  Discovery by_name = Discover(WithPattern(R"(trace_(\d+))"));
  EXPECT_EQ(RankedFiles(by_name), (Ranked{{7, "host3/trace_7"}}));

  // The pattern alone decides, even over the log rule, and overrides a prefix.
  DiscoverOptions pattern_and_prefix = WithPattern(R"(out_(\d+)\.log)");
  pattern_and_prefix.prefix = "trace_";
  Discovery logs = Discover(pattern_and_prefix);
  EXPECT_EQ(RankedFiles(logs), (Ranked{{10, "host5/out_10.log"}}));

  // A group that can capture something else than digits.
  Discovery letters = Discover(WithPattern(R"(.*/(\w+)_9)"));
  EXPECT_THAT(letters.files, IsEmpty());
  EXPECT_EQ(SkipReason(letters, "other/x_9"),
            R"(rank pattern '.*/(\w+)_9' captured 'x', not a rank)");
}

TEST_F(DiscoverTest, BadRankPatternIsInvalidArgumentNamingIt) {
  Write("trace_1");
  for (std::string pattern : {"trace_(\\d+", "trace_\\d+", "(trace)_(\\d+)"}) {
    SCOPED_TRACE(pattern);
    absl::StatusOr<Discovery> found = DiscoverDumps(root_.string(), WithPattern(pattern));
    EXPECT_EQ(found.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(found.status().message(), HasSubstr("'" + pattern + "'"));
  }
}

TEST_F(DiscoverTest, TwoFilesWithOneRankAreAllReturnedForTheLoaderToSettle) {
  Write("node00/nccl_trace_rank_3");
  Write("node01/nccl_trace_rank_3");
  Write("rank_3.json", "{}");
  Write("nccl_trace_rank_4");
  Write("nccl_trace_rank_5");
  fs::create_hard_link(root_ / "rank_3.json", root_ / "rank_3.pkl");

  Discovery found = Discover();

  EXPECT_EQ(RankedFiles(found), (Ranked{{3, "node00/nccl_trace_rank_3"},
                                        {3, "node01/nccl_trace_rank_3"},
                                        {3, "rank_3.json"},
                                        {4, "nccl_trace_rank_4"},
                                        {5, "nccl_trace_rank_5"}}));
  EXPECT_EQ(SkipReason(found, "rank_3.pkl"), "same file as " + Path("rank_3.json"));
  ASSERT_EQ(found.conflicts.size(), 1u);
  EXPECT_EQ(found.conflicts[0].rank, 3);
  EXPECT_THAT(found.conflicts[0].paths,
              ElementsAre(Path("node00/nccl_trace_rank_3"), Path("node01/nccl_trace_rank_3"),
                          Path("rank_3.json")));
}

TEST_F(DiscoverTest, LinksToTheSameFileAreNotAConflict) {
  Write("nccl_trace_rank_3");
  MakeSymlink("../nccl_trace_rank_3", "latest/rank_3");
  fs::create_hard_link(root_ / "nccl_trace_rank_3", root_ / "copy_rank_3");
  MakeSymlink("does_not_exist", "nccl_trace_rank_4");

  Discovery found = Discover();

  // "copy_rank_3" < "latest/rank_3" < "nccl_trace_rank_3" in byte order.
  EXPECT_EQ(RankedFiles(found), (Ranked{{3, "copy_rank_3"}}));
  EXPECT_THAT(found.conflicts, IsEmpty());
  EXPECT_EQ(SkipReason(found, "nccl_trace_rank_3"), "same file as " + Path("copy_rank_3"));
  EXPECT_EQ(SkipReason(found, "latest/rank_3"), "same file as " + Path("copy_rank_3"));
  EXPECT_THAT(SkipReason(found, "nccl_trace_rank_4"), HasSubstr("broken symlink"));
}

TEST_F(DiscoverTest, ResultDoesNotDependOnCreationOrder) {
  std::vector<std::string> names;
  for (int rank = 0; rank < 40; ++rank) {
    names.push_back("node" + std::to_string(rank % 4) + "/nccl_trace_rank_" + std::to_string(rank));
    names.push_back("logs/rank_" + std::to_string(rank) + ".log");
  }
  names.push_back("a/nccl_trace_rank_7");  // a conflict
  names.push_back("z/rank_7.json");

  auto relative = [](const Discovery& found, const fs::path& root) {
    std::vector<std::string> lines;
    for (const DiscoveredFile& file : found.files) {
      lines.push_back(std::to_string(file.rank) + " " +
                      fs::path(file.path).lexically_relative(root).string());
    }
    for (const SkippedFile& skipped : found.skipped) {
      lines.push_back("skip " + fs::path(skipped.path).lexically_relative(root).string() + " " +
                      skipped.reason);
    }
    for (const RankConflict& conflict : found.conflicts) {
      for (const std::string& path : conflict.paths) {
        lines.push_back("conflict " + std::to_string(conflict.rank) + " " +
                        fs::path(path).lexically_relative(root).string());
      }
    }
    return lines;
  };

  std::vector<std::vector<std::string>> results;
  std::mt19937 random(42);
  for (int round = 0; round < 3; ++round) {
    std::shuffle(names.begin(), names.end(), random);
    std::string folder = "round" + std::to_string(round);
    for (const std::string& name : names) Write(folder + "/" + name);
    absl::StatusOr<Discovery> found = DiscoverDumps(Path(folder), {});
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(found->files.size(), 42u);  // 40 ranks; rank 7's three files all returned
    EXPECT_EQ(found->conflicts.size(), 1u);
    results.push_back(relative(*found, root_ / folder));
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST_F(DiscoverTest, AcceptsASingleFile) {
  fs::path dump = Write("node03/nccl_trace_rank_4.zst", "\x28\xb5\x2f\xfd");
  fs::path log = Write("train.log", "x");

  absl::StatusOr<Discovery> found = DiscoverDumps(dump.string(), {});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->files.size(), 1u);
  EXPECT_EQ(found->files[0].path, dump.string());
  EXPECT_EQ(found->files[0].rank, 4);
  EXPECT_EQ(found->files[0].size, 4u);

  absl::StatusOr<Discovery> by_pattern =
      DiscoverDumps(dump.string(), WithPattern(R"(nccl_trace_rank_(\d+)\.zst)"));
  ASSERT_TRUE(by_pattern.ok()) << by_pattern.status();
  ASSERT_EQ(by_pattern->files.size(), 1u);
  EXPECT_EQ(by_pattern->files[0].rank, 4);

  absl::StatusOr<Discovery> not_a_dump = DiscoverDumps(log.string(), {});
  ASSERT_TRUE(not_a_dump.ok()) << not_a_dump.status();
  EXPECT_THAT(not_a_dump->files, IsEmpty());
  ASSERT_EQ(not_a_dump->skipped.size(), 1u);
  EXPECT_EQ(not_a_dump->skipped[0].reason, "log file");
}

TEST_F(DiscoverTest, SymlinkLoopsDoNotHang) {
  Write("a/nccl_trace_rank_0");
  MakeSymlink("..", "a/up");
  MakeSymlink(".", "self");
  MakeSymlink(root_.string(), "a/b/root");

  Discovery found = Discover();

  EXPECT_EQ(RankedFiles(found), (Ranked{{0, "a/nccl_trace_rank_0"}}));
  EXPECT_EQ(SkipReason(found, "a/up"), "symlink to a directory (not followed)");
  EXPECT_EQ(SkipReason(found, "self"), "symlink to a directory (not followed)");
  EXPECT_EQ(SkipReason(found, "a/b/root"), "symlink to a directory (not followed)");
}

TEST_F(DiscoverTest, LinksOutOfTheDirectoryAreSkippedUnlessAllowed) {
  fs::path outside = root_.string() + ".outside";
  fs::create_directories(outside);
  {
    std::ofstream secret(outside / "shadow", std::ios::binary);
    secret << kPickleStart;
  }
  Write("nccl_trace_rank_0");
  MakeSymlink((outside / "shadow").string(), "nccl_trace_rank_1");
  MakeSymlink("../nccl_trace_rank_0", "latest/rank_0_link");
  MakeSymlink("nccl_trace_rank_0", "rank_2");  // inside: followed

  DiscoverOptions stay_inside;  // what the command line asks without --follow-links
  stay_inside.follow_links_out_of_root = false;
  Discovery found = Discover(stay_inside);
  EXPECT_EQ(RankedFiles(found), (Ranked{{0, "nccl_trace_rank_0"}, {2, "rank_2"}}));
  EXPECT_EQ(SkipReason(found, "nccl_trace_rank_1"),
            "symlink to a file outside the input directory (not followed; fr-analyze "
            "--follow-links follows it)");
  EXPECT_EQ(MayReadSkipped(found, "nccl_trace_rank_1"), false) << "never opened, not even as a log";
  // What the loader opens: the link's target as resolved now, never the link again.
  std::string real_root = fs::canonical(root_).string();
  EXPECT_EQ(found.files[0].open_path, Path("nccl_trace_rank_0"));
  EXPECT_EQ(found.files[1].open_path, real_root + "/nccl_trace_rank_0");

  Discovery followed = Discover();  // the library's default follows them
  EXPECT_EQ(RankedFiles(followed),
            (Ranked{{0, "nccl_trace_rank_0"}, {1, "nccl_trace_rank_1"}, {2, "rank_2"}}));
  EXPECT_EQ(followed.files[1].open_path, fs::canonical(outside / "shadow").string());
  fs::remove_all(outside);
}

TEST_F(DiscoverTest, ABacktrackingPatternOnALongNameStillFinishesAtOnce) {
  // Nested quantifiers that fail late: a backtracking engine (std::regex) tries every way of
  // splitting the name among them, 2^n for a name of n letters.
  Write("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!");  // 36 letters, then what the pattern refuses
  Write("aaaa_7");
  Write("aaaaaaaa_12");
  auto started = std::chrono::steady_clock::now();
  Discovery found = Discover(WithPattern(R"((?:a+)+_(\d+))"));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(RankedFiles(found), (Ranked{{7, "aaaa_7"}, {12, "aaaaaaaa_12"}}));
  EXPECT_EQ(SkipReason(found, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"),
            R"(does not match rank pattern '(?:a+)+_(\d+)')");
}

TEST_F(DiscoverTest, PatternsThatNeedBacktrackingAreRefusedNamingThePattern) {
  Write("trace_1");
  for (std::string pattern : {R"((\d)\1)", R"(trace_(?=1)(\d+))"}) {
    SCOPED_TRACE(pattern);
    absl::StatusOr<Discovery> found = DiscoverDumps(root_.string(), WithPattern(pattern));
    EXPECT_EQ(found.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(found.status().message(), HasSubstr("'" + pattern + "'"));
    EXPECT_THAT(found.status().message(), HasSubstr("RE2 syntax"));
  }
}

TEST_F(DiscoverTest, FollowsALinkedRoot) {
  Write("real/nccl_trace_rank_2");
  MakeSymlink("real", "link");
  absl::StatusOr<Discovery> found = DiscoverDumps(Path("link"), {});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->files.size(), 1u);
  EXPECT_EQ(found->files[0].path, Path("link/nccl_trace_rank_2"));
}

TEST_F(DiscoverTest, MissingRootIsNotFoundNamingIt) {
  std::string missing = Path("no/such/dir");
  absl::StatusOr<Discovery> found = DiscoverDumps(missing, {});
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(found.status().message(), HasSubstr(missing));
}

TEST_F(DiscoverTest, FifoRootIsInvalidArgument) {
  fs::path fifo = MakeFifo("nccl_trace_rank_0.pipe");
  absl::StatusOr<Discovery> found = DiscoverDumps(fifo.string(), {});
  EXPECT_EQ(found.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(found.status().message(), HasSubstr(fifo.string()));
}

TEST_F(DiscoverTest, UnreadableSubfolderIsSkippedAndTheWalkGoesOn) {
  Write("locked/nccl_trace_rank_0");
  Write("open/nccl_trace_rank_1");
  fs::permissions(root_ / "locked", fs::perms::none);
  locked_.push_back(root_ / "locked");

  auto check = [&] {
    absl::StatusOr<Discovery> found = DiscoverDumps(root_.string(), {});
    if (!found.ok()) {
      std::cerr << found.status() << "\n";
      return false;
    }
    bool ok = RankedFiles(*found) == Ranked{{1, "open/nccl_trace_rank_1"}} &&
              SkipReason(*found, "locked").find("cannot read directory") != std::string::npos;
    if (!ok) std::cerr << "locked: " << SkipReason(*found, "locked") << "\n";
    return ok;
  };
  if (::geteuid() != 0) {
    EXPECT_TRUE(check());
    return;
  }
  // Root reads every folder: check as "nobody" in a forked child.
  EXPECT_EXIT(
      {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) std::_Exit(2);
        std::_Exit(check() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(DiscoverTest, DiscoversFiveThousandFiles) {
  constexpr int kRanks = 5000;
  for (int rank = 0; rank < kRanks; ++rank) {
    std::string host = "node" + std::to_string(rank / 8);
    Write(host + "/nccl_trace_rank_" + host + "_" + std::to_string(rank));
  }
  Write("node0/nccl_trace_rank_0.pipe", "");
  Write("node0/train.log", "x");

  Discovery found = Discover();

  ASSERT_EQ(found.files.size(), static_cast<size_t>(kRanks));
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(found.files[rank].rank, rank);
    std::string host = "node" + std::to_string(rank / 8);
    ASSERT_EQ(found.files[rank].path,
              Path(host + "/nccl_trace_rank_" + host + "_" + std::to_string(rank)));
  }
  EXPECT_EQ(found.skipped.size(), 2u);
  EXPECT_THAT(found.conflicts, IsEmpty());
}

// The host a report shows for a dump comes from its path with discovery's own name rules: the
// rank digits and every dump extension are not part of it.
TEST(HostOfDumpPathTest, HostsFromFoldersAndNamesWithoutRankOrExtensions) {
  EXPECT_EQ(HostOfDumpPath("/jobs/42/nccl_trace_rank_node02_0.zstd", "/jobs/42"), "node02");
  EXPECT_EQ(HostOfDumpPath("/jobs/42/nccl_trace_rank_container-node02_5.json.gz", "/jobs/42"),
            "container-node02");
  EXPECT_EQ(HostOfDumpPath("/jobs/42/node03/nccl_trace_rank_5", "/jobs/42"), "node03");
  EXPECT_EQ(HostOfDumpPath("/jobs/42/a/node04/rank_7.json", "/jobs/42"), "node04");
  EXPECT_EQ(HostOfDumpPath("/jobs/42/nccl_trace_rank_5", "/jobs/42"), "");
  EXPECT_EQ(HostOfDumpPath("/jobs/42/comm_lib_trace_rank_12.zst", "/jobs/42/"), "");
  EXPECT_EQ(HostOfDumpPath("rank_3", ""), "");
}

}  // namespace
}  // namespace fr
