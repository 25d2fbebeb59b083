#include "fr/stacks/python_stacks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A real frontend dump_dir: rank 2 sleeps in user code from the second snapshot on while ranks 0,
// 1 and 3 wait in all_reduce (tests/data/debug_server/2.13.0/hang/expected.json says how it was
// made).
std::string HangDir() {
  return std::string(FR_TEST_DATA_DIR) + "/debug_server/2.13.0/hang/dump_dir";
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> StacksFiles() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(HangDir())) {
    if (entry.path().filename().string().starts_with("stacks_")) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(PythonStacksTest, ReadsTheFrontendsSnapshotOfEveryRank) {
  std::string path = HangDir() + "/stacks_20261203_095248.txt";
  std::string text = Read(path);
  ASSERT_TRUE(LooksLikeStackSnapshot(text.substr(0, 4096), path));
  StackSnapshots stacks;
  ASSERT_TRUE(ParseStackSnapshot(path, text, &stacks).ok());
  ASSERT_EQ(stacks.snapshots.size(), 1u);
  const StackSnapshot& snapshot = stacks.snapshots[0];
  ASSERT_EQ(snapshot.ranks.size(), 4u);
  EXPECT_EQ(stacks.unparsed_lines, 0);
  // 2026-12-03 09:52:48, from the file name.
  EXPECT_EQ(snapshot.time_ns, int64_t{1796291568} * 1'000'000'000);
  for (const RankStacks& rank : snapshot.ranks) {
    EXPECT_EQ(rank.answer, RankAnswer::kAnswered);
    // The debug server's own thread (no Python frame), the job's SIGTERM watcher and main.
    ASSERT_EQ(rank.threads.size(), 3u) << rank.rank;
    EXPECT_TRUE(rank.threads[0].current);
    const PythonThread* main = MainThread(rank);
    ASSERT_NE(main, nullptr);
    EXPECT_EQ(main->frames.back().function, "<module>");
  }
  const PythonThread* held = MainThread(snapshot.ranks[2]);
  EXPECT_EQ(held->frames.front().function, "inject");
  EXPECT_THAT(held->frames.front().file, HasSubstr("torchrun_job.py"));
  EXPECT_EQ(PlaceOf(held), StackPlace::kOutside);
  const PythonThread* waiting = MainThread(snapshot.ranks[0]);
  EXPECT_EQ(waiting->frames.front().function, "all_reduce");
  EXPECT_EQ(PlaceOf(waiting), StackPlace::kCommunication);
  EXPECT_EQ(DescribeFrame(waiting->frames.front()),
            "all_reduce (torch/distributed/distributed_c10d.py:3252)");
}

TEST(PythonStacksTest, TheRankOutsideCommunicationHoldsEveryoneAcrossSnapshots) {
  StackSnapshots stacks;
  // Read newest first: the parser keeps them oldest first by their names' times.
  std::vector<std::string> paths = StacksFiles();
  ASSERT_EQ(paths.size(), 12u);
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
    ASSERT_TRUE(ParseStackSnapshot(*it, Read(*it), &stacks).ok()) << *it;
  }
  StackJudgement judged = JudgeStacks(stacks);
  EXPECT_EQ(judged.snapshots, 12);
  EXPECT_THAT(judged.newest_path, HasSubstr("stacks_20261203_095258.txt"));
  EXPECT_THAT(judged.held_by, ElementsAre(2));
  ASSERT_EQ(judged.held_at.size(), 1u);
  EXPECT_EQ(judged.held_at[0].function, "inject");
  EXPECT_THAT(judged.waiting, ElementsAre(0, 1, 3));
  EXPECT_EQ(judged.waiting_in, "all_reduce (torch/distributed/distributed_c10d.py:3252)");
  EXPECT_FALSE(judged.moving);
  // The first snapshot (09:52:33) precedes the fault: eleven from 09:52:38 to 09:52:58.
  EXPECT_EQ(judged.unchanged_snapshots, 11);
  EXPECT_EQ(judged.unchanged_ns, int64_t{20} * 1'000'000'000);
  EXPECT_TRUE(judged.no_answer.empty());
  // Groups by identical stacks: rank 0 waits in the DP all_reduce (line 214 of train), ranks 1
  // and 3 in the TP one (line 206), rank 2 in inject.
  ASSERT_EQ(judged.groups.size(), 3u);
  EXPECT_THAT(judged.groups[0].ranks, ElementsAre(1, 3));
}

// The frontend's wording when a worker does not answer (torch/distributed/debug/_frontend.py,
// format_fetch_summary and StacksHandler.dump; requests' ConnectionError text).
constexpr char kPartial[] =
    "PARTIAL DATA: 2/4 workers responded\n"
    "  Rank 1: Timeout: HTTPConnectionPool(host='vm', port=40001): Read timed out. (read "
    "timeout=60.0)\n"
    "  Rank 3: ConnectionError: HTTPConnectionPool(host='vm', port=40003): Max retries exceeded "
    "with url: /handler/dump_traceback? (Caused by NewConnectionError('<urllib3.connection."
    "HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] "
    "Connection refused'))\n"
    "\n"
    "=== Rank 0: http://vm:40000/handler/dump_traceback? ===\n"
    "Thread 0x00007f0000000001 (most recent call first):\n"
    "  File \"/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line "
    "4812 in barrier\n"
    "  File \"/job/train.py\", line 30 in <module>\n"
    "\n"
    "=== Rank 1: http://vm:40001/handler/dump_traceback? ===\n"
    "Error: 408\n"
    "=== Rank 2: http://vm:40002/handler/dump_traceback? ===\n"
    "Thread 0x00007f0000000002 (most recent call first):\n"
    "  File \"/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line "
    "4812 in barrier\n"
    "  File \"/job/train.py\", line 30 in <module>\n"
    "\n"
    "=== Rank 3: http://vm:40003/handler/dump_traceback? ===\n"
    "Error: 503\n";

TEST(PythonStacksTest, WorkersThatDidNotAnswerSayWhy) {
  ASSERT_TRUE(LooksLikeStackSnapshot(kPartial, "dbg/stacks_20261203_100000.txt"));
  StackSnapshots stacks;
  ASSERT_TRUE(ParseStackSnapshot("dbg/stacks_20261203_100000.txt", kPartial, &stacks).ok());
  StackJudgement judged = JudgeStacks(stacks);
  ASSERT_EQ(judged.no_answer.size(), 2u);
  EXPECT_EQ(judged.no_answer[0].rank, 1);
  EXPECT_EQ(judged.no_answer[0].answer, RankAnswer::kTimedOut);
  EXPECT_EQ(judged.no_answer[1].rank, 3);
  EXPECT_EQ(judged.no_answer[1].answer, RankAnswer::kRefused);
  EXPECT_THAT(judged.no_answer[1].error, HasSubstr("Connection refused"));
  EXPECT_THAT(judged.waiting, ElementsAre(0, 2));
  // Nobody that answered is outside communication.
  EXPECT_TRUE(judged.held_by.empty());
}

// Two snapshots of a job whose rank 1 computes (another line each time) while the others wait.
std::string Snapshot(int rank1_line) {
  std::string text;
  for (int rank = 0; rank < 4; ++rank) {
    text += "=== Rank " + std::to_string(rank) + ": http://vm:1/handler/dump_traceback? ===\n";
    text += "Thread 0x1 (most recent call first):\n";
    if (rank == 1) {
      text += "  File \"/job/model.py\", line " + std::to_string(rank1_line) + " in forward\n";
    } else {
      text +=
          "  File \"/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py\", line "
          "3252 in all_reduce\n";
    }
    text += "  File \"/job/train.py\", line 9 in <module>\n\n";
  }
  return text;
}

TEST(PythonStacksTest, ARankWhoseStackChangesIsMovingNotStuck) {
  StackSnapshots stacks;
  ASSERT_TRUE(ParseStackSnapshot("a/stacks_20261203_100000.txt", Snapshot(40), &stacks).ok());
  ASSERT_TRUE(ParseStackSnapshot("a/stacks_20261203_100030.txt", Snapshot(41), &stacks).ok());
  StackJudgement judged = JudgeStacks(stacks);
  EXPECT_THAT(judged.held_by, ElementsAre(1));
  EXPECT_TRUE(judged.moving);
  EXPECT_EQ(judged.unchanged_snapshots, 1);

  StackSnapshots still;
  ASSERT_TRUE(ParseStackSnapshot("a/stacks_20261203_100000.txt", Snapshot(40), &still).ok());
  ASSERT_TRUE(ParseStackSnapshot("a/stacks_20261203_100030.txt", Snapshot(40), &still).ok());
  judged = JudgeStacks(still);
  EXPECT_FALSE(judged.moving);
  EXPECT_EQ(judged.unchanged_snapshots, 2);
  EXPECT_EQ(judged.unchanged_ns, int64_t{30} * 1'000'000'000);
}

TEST(PythonStacksTest, BadInputIsAnErrorNamingTheFileAndLine) {
  StackSnapshots stacks;
  absl::Status none = ParseStackSnapshot("x/stacks_1.txt", "hello\nworld\n", &stacks);
  EXPECT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.message(), HasSubstr("x/stacks_1.txt"));
  absl::Status huge = ParseStackSnapshot(
      "x/stacks_2.txt", "\n=== Rank 99999999999: http://vm:1/handler/dump_traceback? ===\n",
      &stacks);
  EXPECT_EQ(huge.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.message(), HasSubstr("x/stacks_2.txt:2"));
  EXPECT_TRUE(stacks.snapshots.empty());
  // The frontend's other snapshots and logs are not stacks.
  EXPECT_FALSE(
      LooksLikeStackSnapshot(Read(HangDir() + "/torchcomms_health_check_20261203_095248.txt"),
                             "torchcomms_health_check_20261203_095248.txt"));
  EXPECT_FALSE(LooksLikeStackSnapshot("[rank0]: Traceback (most recent call last):\n", "x.log"));
}

// A snapshot of three ranks: each rank's main thread (its own thread id) in `where[rank]`, either
// "ckpt" (save_checkpoint in train.py) or "wait" (an all_reduce called from train).
std::string ThreeRanks(const std::vector<std::string>& where) {
  std::string text;
  for (size_t rank = 0; rank < where.size(); ++rank) {
    text +=
        fmt::format("=== Rank {}: http://vm:{}/handler/dump_traceback? ===\n", rank, 40000 + rank);
    text += fmt::format("Thread 0x00007f000000000{} (most recent call first):\n", rank);
    if (where[rank] == "wait") {
      text +=
          "  File \"/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", "
          "line 3252 in all_reduce\n";
    } else {
      text += "  File \"/job/train.py\", line 40 in save_checkpoint\n";
    }
    text += "  File \"/job/train.py\", line 90 in train\n";
    text += "  File \"/job/train.py\", line 99 in <module>\n\n";
  }
  return text;
}

TEST(PythonStacksTest, WorkEveryRankDidIsSharedNotAHold) {
  // Every rank writes its checkpoint; ranks 1 and 2 finish after about 40 s and wait in the next
  // all_reduce while rank 0, which writes the metadata too, goes on.
  StackSnapshots stacks;
  const std::vector<std::pair<std::string, std::vector<std::string>>> series = {
      {"100000", {"ckpt", "ckpt", "ckpt"}},
      {"100020", {"ckpt", "ckpt", "ckpt"}},
      {"100040", {"ckpt", "wait", "wait"}},
      {"100050", {"ckpt", "wait", "wait"}},
      {"100100", {"ckpt", "wait", "wait"}}};
  for (const auto& [time, where] : series) {
    ASSERT_TRUE(
        ParseStackSnapshot("x/stacks_20261204_" + time + ".txt", ThreeRanks(where), &stacks).ok());
  }
  StackJudgement judged = JudgeStacks(stacks);
  EXPECT_THAT(judged.held_by, ElementsAre(0));
  EXPECT_EQ(judged.unchanged_ns, int64_t{20} * 1'000'000'000);
  // They were seen in save_checkpoint from 10:00:00 and gone by 10:00:40.
  EXPECT_EQ(judged.peers_in_frame_ns, int64_t{40} * 1'000'000'000);
  // A rank in a frame its peers never entered: no shared work.
  StackSnapshots alone;
  for (const auto& [time, where] : series) {
    std::vector<std::string> held = where;
    held[1] = held[2] = "wait";
    ASSERT_TRUE(
        ParseStackSnapshot("x/stacks_20261204_" + time + ".txt", ThreeRanks(held), &alone).ok());
  }
  EXPECT_EQ(JudgeStacks(alone).peers_in_frame_ns, -1);
}

TEST(PythonStacksTest, AStaleSnapshotOfAnotherJobIsNoSeries) {
  // Today's one snapshot of the hang, and yesterday's copy of it left in the folder by another
  // run: its processes were others (every thread id differs), a day earlier.
  std::string today = Read(StacksFiles().back());
  std::string yesterday = today;
  for (size_t at = yesterday.find("Thread 0x00007f"); at != std::string::npos;
       at = yesterday.find("Thread 0x00007f", at + 1)) {
    yesterday[at + 15] = yesterday[at + 15] == 'e' ? 'd' : 'e';
  }
  ASSERT_NE(yesterday, today);
  StackSnapshots stacks;
  ASSERT_TRUE(ParseStackSnapshot("x/stacks_20261202_095258.txt", yesterday, &stacks).ok());
  ASSERT_TRUE(ParseStackSnapshot("x/stacks_20261203_095258.txt", today, &stacks).ok());
  StackJudgement judged = JudgeStacks(stacks);
  EXPECT_THAT(judged.held_by, ElementsAre(2));
  EXPECT_EQ(judged.unchanged_snapshots, 1);
  EXPECT_EQ(judged.unchanged_ns, 0);
  // The same processes an hour and more apart are no series either; seconds apart they are.
  StackSnapshots same_processes;
  ASSERT_TRUE(ParseStackSnapshot("x/stacks_20261203_084258.txt", today, &same_processes).ok());
  ASSERT_TRUE(ParseStackSnapshot("x/stacks_20261203_095258.txt", today, &same_processes).ok());
  EXPECT_EQ(JudgeStacks(same_processes).unchanged_snapshots, 1);
  StackSnapshots close;
  ASSERT_TRUE(ParseStackSnapshot("x/stacks_20261203_095248.txt", today, &close).ok());
  ASSERT_TRUE(ParseStackSnapshot("x/stacks_20261203_095258.txt", today, &close).ok());
  EXPECT_EQ(JudgeStacks(close).unchanged_snapshots, 2);
  EXPECT_EQ(JudgeStacks(close).unchanged_ns, int64_t{10} * 1'000'000'000);
}

TEST(PythonStacksTest, ASecondBlockOfOneRankIsAnErrorNotAMerge) {
  // A worker's answer quoting a header ("=== Rank 3: ...") inside rank 0's block claims to be
  // rank 3's stacks: the file is refused, and rank 3 is never blamed on rank 0's words.
  std::string snapshot = Read(StacksFiles().front());
  size_t rank1 = snapshot.find("=== Rank 1:");
  ASSERT_NE(rank1, std::string::npos);
  std::string planted = snapshot.substr(0, rank1) +
                        "=== Rank 3: http://vm:1/handler/dump_traceback? ===\n" +
                        "Thread 0x00007f1c25a8fb80 (most recent call first):\n" +
                        "  File \"train.py\", line 9 in load_batch\n\n" + snapshot.substr(rank1);
  StackSnapshots stacks;
  absl::Status status = ParseStackSnapshot("x/stacks_20261203_095248.txt", planted, &stacks);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("second \"=== Rank 3\" block"));
  EXPECT_TRUE(stacks.snapshots.empty());
  // The genuine snapshot still reads.
  EXPECT_TRUE(ParseStackSnapshot("x/stacks_20261203_095248.txt", snapshot, &stacks).ok());
}

}  // namespace
}  // namespace fr
