// The Open MPI family (lib/fr/logs/families/open_mpi.cc), on real captures of mpirun
// --tag-output (tests/data/mpirun/4.1.4, Open MPI 4.1.4).
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::Parse;
using log_test::ReadAll;

std::string MpirunConsole(const std::string& scenario) {
  return ReadAll(std::string(FR_TEST_DATA_DIR) + "/mpirun/4.1.4/" + scenario + "/console.log");
}

TEST(OpenMpi, TaggedLinesAreALogAndCarryTheirRank) {
  std::string console = MpirunConsole("exception");
  EXPECT_TRUE(LooksLikeLog(console));
  LogSet logs = Parse(console, "console.log");
  ASSERT_EQ(logs.files.size(), 1u);
  EXPECT_EQ(logs.files[0].format, "openmpi");
  const LogEvent* exception = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException) exception = &e;
  }
  ASSERT_NE(exception, nullptr);
  EXPECT_EQ(exception->rank, 2);
  EXPECT_NE(exception->text.find("ValueError: bad batch at step 3"), std::string::npos);
}

TEST(OpenMpi, MpirunNamesTheRankThatDiedOfASignal) {
  LogSet logs = Parse(MpirunConsole("segfault"), "console.log");
  const LogEvent* noticed = nullptr;
  const LogEvent* fatal = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kWorkerFailed) noticed = &e;
    if (e.kind == LogEventKind::kSegfault && fatal == nullptr) fatal = &e;
  }
  ASSERT_NE(noticed, nullptr);
  EXPECT_EQ(noticed->rank, 2);
  EXPECT_EQ(noticed->signal, 11);
  EXPECT_EQ(noticed->host, "vm");
  // faulthandler's "Fatal Python error: Segmentation fault" in tagged fragments.
  ASSERT_NE(fatal, nullptr);
  EXPECT_EQ(fatal->rank, 2);
}

TEST(OpenMpi, TheFirstProcessToExitAndItsCode) {
  // In a hang the first rank to exit is a victim whose collective timed out (rank 1 here); the
  // event says only what mpirun saw.
  LogSet logs = Parse(MpirunConsole("hang"), "console.log");
  const LogEvent* first = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kWorkerFailed) first = &e;
  }
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->exit_code, 1);
  EXPECT_GE(first->rank, 0);
  EXPECT_NE(first->rank, 2);
}

TEST(OpenMpi, TagsInsideALineAreTakenOut) {
  // A write without its newline runs into the next tag; faulthandler writes a frame in pieces.
  LogSet logs = Parse(
      "[1,2]<stderr>:Fatal Python error: [1,2]<stderr>:Segmentation fault\n"
      "[1,0]<stdout>:step 3 loss nan[1,0]<stdout>:\n",
      "console.log");
  ASSERT_FALSE(logs.events.empty());
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kSegfault);
  EXPECT_EQ(logs.events[0].rank, 2);
  // The line keeps its own tag; the one inside it is gone.
  EXPECT_EQ(logs.events[0].text, "[1,2]<stderr>:Fatal Python error: Segmentation fault");
}

TEST(OpenMpi, AWorkersLineQuotingMpirunIsNotMpirunsReport) {
  // mpirun's real line, printed by rank 0 itself (tagged): a worker's words, not the launcher's.
  std::string console = MpirunConsole("segfault");
  size_t at = console.find("mpirun noticed that process rank 2");
  ASSERT_NE(at, std::string::npos);
  std::string noticed = console.substr(at, console.find('\n', at) - at + 1);
  for (const std::string& tagged :
       {"[1,0]<stdout>:" + noticed, "[default0]:" + noticed, "[rank0]:" + noticed}) {
    LogSet logs = Parse(tagged, "console.log");
    for (const LogEvent& e : logs.events) {
      EXPECT_NE(e.kind, LogEventKind::kWorkerFailed) << tagged;
    }
  }
  LogSet own = Parse(noticed, "console.log");
  ASSERT_EQ(own.events.size(), 1u);
  EXPECT_EQ(own.events[0].kind, LogEventKind::kWorkerFailed);
}

}  // namespace
}  // namespace fr
