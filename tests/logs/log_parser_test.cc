// The log parser's own work: splitting bytes into lines and their prefixes, the caps on hostile
// input, and telling logs from other files. What each log family's lines mean is tested beside
// it, in tests/logs/families/<family>_test.cc; the table's order in line_table_test.cc.
#include "fr/logs/log_parser.h"

#include <dirent.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::Kinds;
using log_test::Parse;
using log_test::ReadAll;
using log_test::RealDir;
using ::testing::ElementsAre;

TEST(LogEventKindName, LowerSnakeCase) {
  EXPECT_STREQ(LogEventKindName(LogEventKind::kXid), "xid");
  EXPECT_STREQ(LogEventKindName(LogEventKind::kWorkTimeoutSeqs), "work_timeout_seqs");
  EXPECT_STREQ(LogEventKindName(LogEventKind::kCollectiveEnqueue), "collective_enqueue");
}

// --- torchrun --tee: a line copied before its writer ended it -------------------------------

// torchrun's tail thread copies what it read so far, newline or not; faulthandler writes "Fatal
// Python error: " and "Segmentation fault" apart. The real capture's line, torn both ways the
// copy can tear it: continued by the same worker, or by another worker's line, or running on
// from another worker's torn line.
TEST(Ranks, ARankPrefixPastTheReportsRangeNamesNoRank) {
  // The watchdog line of tests/data/logs/real/watchdog_default_pg.log; its prefix's rank edited
  // past 2^31 - 1 (the report's rank fields are int32): the line is read, its rank unknown.
  const std::string watchdog =
      ":[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
      "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
      "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n";
  LogSet in_range = Parse("[rank2147483647]" + watchdog);
  ASSERT_THAT(Kinds(in_range), ElementsAre("watchdog_timeout"));
  EXPECT_EQ(in_range.events[0].rank, 2147483647);
  LogSet past = Parse("[rank2147483648]" + watchdog);
  for (const LogEvent& event : past.events) EXPECT_EQ(event.rank, -1);
}

TEST(TorchrunTee, ALineTornByTheCopyIsReadAsItsWriterPrintedIt) {
  std::string console =
      ReadAll(std::string(FR_TEST_DATA_DIR) + "/torchrun/2.13.0/segfault/console.log");
  const std::string whole = "[default2]:Fatal Python error: Segmentation fault\n";
  ASSERT_NE(console.find(whole), std::string::npos);
  for (const std::string& torn :
       {std::string("[default2]:Fatal Python error: [default2]:Segmentation fault\n"),
        std::string("[default2]:Fatal Python error: [default0]:step 3 loss 0.2931\n"
                    "[default2]:Segmentation fault\n"),
        std::string("[default0]:step 3 lo[default2]:Fatal Python error: Segmentation fault\n"
                    "[default0]:ss 0.2931\n")}) {
    std::string text = console;
    text.replace(text.find(whole), whole.size(), torn);
    LogSet logs = Parse(text, "console.log");
    int segfaults = 0;
    for (const LogEvent& e : logs.events) {
      if (e.kind != LogEventKind::kSegfault) continue;
      ++segfaults;
      EXPECT_EQ(e.local_rank, 2) << e.text;
      EXPECT_EQ(e.text.find("[default0]"), std::string::npos) << e.text;
    }
    EXPECT_GE(segfaults, 1) << torn;
  }
  // The same worker's line reads whole again.
  LogSet same = Parse("[default2]:Fatal Python error: [default2]:Segmentation fault\n");
  ASSERT_EQ(same.events.size(), 1u);
  EXPECT_EQ(same.events[0].text, "[default2]:Fatal Python error: Segmentation fault");
}

TEST(TorchrunTee, TorchsOwnRankPrefixAfterTheTagIsNotATear) {
  LogSet logs = Parse(
      "[default1]:[rank1]: Traceback (most recent call last):\n"
      "[default1]:[rank1]:   File \"/job.py\", line 9, in <module>\n"
      "[default1]:[rank1]: ValueError: injected fault on rank 1\n");
  ASSERT_EQ(logs.events.size(), 1u);
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kPythonException);
  EXPECT_EQ(logs.events[0].rank, 1);
  EXPECT_EQ(logs.events[0].local_rank, 1);
}

// --- Prefixes: who printed a line, and when ---------------------------------------------------

TEST(Launchers, EachLaunchersPrefixesMarkTheFile) {
  EXPECT_EQ(Parse("[1,2]<stderr>:step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kOpenMpi));
  EXPECT_EQ(Parse("[default3]:step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kTorchrun));
  // torch prints "[rank3]:" itself, whatever launched it.
  EXPECT_EQ(Parse("[rank3]:step 1\n", "a.log").files[0].launchers, 0u);
  EXPECT_EQ(Parse("12: [default0]:step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kSlurm) | LauncherBit(Launcher::kTorchrun));
  EXPECT_EQ(Parse("(RayTrainWorker pid=15904) step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kRay));
}

TEST(Recognizers, SrunPrefixAroundTorchrunAndGlog) {
  LogSet logs = Parse(
      "37: [rank37]:[E1201 12:03:04.123456 ProcessGroupNCCL.cpp:616] [Rank 37] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=1000) ran "
      "for 1001 milliseconds before timing out.\n"
      " 5: node05:1234:1234 [5] NCCL INFO comm 0x1 rank 5 nranks 8 cudaDev 5 busId 0000:3B:00.0 "
      "commId 0x2 - Init COMPLETE\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("watchdog_timeout", "nccl_init"));
  EXPECT_EQ(logs.events[0].rank, 37);
  EXPECT_EQ(logs.events[0].raw_time.month, 12);
  EXPECT_EQ(logs.events[0].raw_time.day, 1);
  EXPECT_EQ(logs.events[1].rank, 5);
  EXPECT_EQ(logs.events[1].bus_id, "0000:3b:00");
  EXPECT_EQ(logs.events[1].host, "node05");
}

TEST(Recognizers, LocalRankPrefixAndLogDirPath) {
  LogSet logs =
      Parse("[default3]:RuntimeError: CUDA error: an illegal memory access was encountered\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_error"));
  EXPECT_EQ(logs.events[0].local_rank, 3);
  EXPECT_EQ(logs.events[0].reason, "an illegal memory access was encountered");
  LogSet by_path =
      Parse("Fatal Python error: Segmentation fault\n", "/logs/run_1/attempt_0/6/stderr.log");
  ASSERT_THAT(Kinds(by_path), ElementsAre("segfault"));
  EXPECT_EQ(by_path.files[0].local_rank, 6);
  EXPECT_EQ(by_path.events[0].local_rank, 6);
}

TEST(Recognizers, IsoTimeForms) {
  LogSet logs = Parse(
      "2026-12-01T12:03:04.123Z rank 0 loss=nan\n"
      "2026-12-01 12:03:04,123 - loss = NaN\n");
  ASSERT_EQ(logs.events.size(), 2u);
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kUtc);
  EXPECT_EQ(logs.events[1].raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logs.events[0].raw_time.ns, logs.events[1].raw_time.ns);
}

// --- Hostile input -----------------------------------------------------------------------------

TEST(Hostile, HugeLinesNulsAndInvalidUtf8) {
  std::string text(10 << 20, 'x');
  text += " NVRM: Xid (PCI:0000:3b:00): 79, boom\r\n";
  static constexpr char kBinary[] = "\0\0\xff\xfe NVRM: Xid (PCI:0000:3b:00): 13, \xff\xc0 bad\r\n";
  text += std::string(kBinary, sizeof(kBinary) - 1);
  text += "no newline at the end: loss: nan";
  LogSet logs = Parse(text);
  // The first line is read in pieces of at most the line cap: its Xid, 10 MiB in, is seen, on
  // the line it is on.
  ASSERT_THAT(Kinds(logs), ElementsAre("xid", "xid", "non_finite_loss"));
  EXPECT_EQ(logs.events[0].xid, 79);
  EXPECT_EQ(logs.events[0].line, 1);
  EXPECT_EQ(logs.events[1].xid, 13);
  EXPECT_EQ(logs.events[1].line, 2);
  EXPECT_EQ(logs.files[0].long_lines, 1);
  EXPECT_EQ(logs.files[0].lines, 3);
  for (const LogEvent& e : logs.events) EXPECT_LE(e.text.size(), 512u);
}

TEST(Hostile, EventsCapped) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "loss: nan\n";
  LogSet logs;
  LogParseOptions options;
  options.max_events_per_file = 10;
  ASSERT_TRUE(ParseLogText("x", text, &logs, options).ok());
  EXPECT_EQ(logs.events.size(), 10u);
  EXPECT_EQ(logs.files[0].events_dropped, 990);
}

TEST(Hostile, ManyOpenTracebacksAndRandomBytes) {
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    text += "[rank" + std::to_string(i) + "]: Traceback (most recent call last):\n";
  }
  uint32_t state = 1;
  for (int i = 0; i < (1 << 20); ++i) {
    state = state * 1664525u + 1013904223u;
    text.push_back(static_cast<char>(state >> 24));
  }
  LogSet logs = Parse(text);
  EXPECT_LT(logs.events.size(), 1000u);
}

TEST(Hostile, ChunkedStreamMatchesWholeText) {
  std::string text = ReadAll(RealDir() + "watchdog_subgroup.log");
  FILE* stream = fmemopen(text.data(), text.size(), "r");
  ASSERT_NE(stream, nullptr);
  LogSet streamed;
  ASSERT_TRUE(ParseLogStream("-", stream, &streamed).ok());
  fclose(stream);
  LogSet whole = Parse(text);
  EXPECT_EQ(Kinds(streamed), Kinds(whole));
  EXPECT_EQ(streamed.files[0].path, "-");
}

// --- Recognizing logs by content ---------------------------------------------------------------

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") files.push_back(dir + "/" + name);
  }
  closedir(d);
  return files;
}

TEST(LooksLikeLog, FalseForDumps) {
  std::vector<std::string> dumps = FilesIn(std::string(FR_TEST_DATA_DIR) + "/fuzz/pickle");
  std::vector<std::string> json = FilesIn(std::string(FR_TEST_DATA_DIR) + "/fuzz/json");
  dumps.insert(dumps.end(), json.begin(), json.end());
  ASSERT_GT(dumps.size(), 10u);
  for (const std::string& path : dumps) {
    EXPECT_FALSE(LooksLikeLog(ReadAll(path).substr(0, 4096))) << path;
  }
}

TEST(LooksLikeLog, TrueForRealLogs) {
  std::vector<std::string> logs = FilesIn(RealDir());
  ASSERT_GT(logs.size(), 10u);
  for (const std::string& path : logs) EXPECT_TRUE(LooksLikeLog(ReadAll(path))) << path;
  EXPECT_TRUE(LooksLikeLog("[ 1234.567890] NVRM: Xid\n"));
  EXPECT_TRUE(LooksLikeLog("[2026-12-01 12:03:04,123] torch.distributed.run: [WARNING]\n"));
  EXPECT_TRUE(LooksLikeLog("[12:03:04] step 100 loss 2.5\n"));
  EXPECT_FALSE(LooksLikeLog("[12, 13]"));
  EXPECT_FALSE(LooksLikeLog("[1.5, 2]"));
  EXPECT_TRUE(LooksLikeLog("[rank0]: hello\n"));
  EXPECT_FALSE(LooksLikeLog(std::string("\x1f\x8b\x08\x00", 4)));
  EXPECT_FALSE(LooksLikeLog(std::string("\x28\xb5\x2f\xfd", 4)));
  EXPECT_FALSE(LooksLikeLog(""));
}

TEST(ParseLogFiles, UnreadableFileIsAnErrorOthersParsed) {
  absl::StatusOr<LogSet> logs = ParseLogFiles({"/nonexistent/fr/log.txt", RealDir() + "xid.log"});
  ASSERT_TRUE(logs.ok());
  ASSERT_EQ(logs->errors.size(), 1u);
  EXPECT_EQ(logs->errors[0].rfind("/nonexistent/fr/log.txt: ", 0), 0u);
  ASSERT_EQ(logs->files.size(), 1u);
  ASSERT_THAT(Kinds(*logs), ElementsAre("xid"));
  EXPECT_EQ(logs->events[0].file, 0);
}

}  // namespace
}  // namespace fr
