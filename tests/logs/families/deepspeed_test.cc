// The DeepSpeed launcher family (lib/fr/logs/families/deepspeed.cc), on real lines from
// public issues (tests/data/logs/real/deepspeed_launcher.log).
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::ParseReal;

// DeepSpeed's launcher (lines quoted in DeepSpeed issues #618, #3232, #5302).
TEST(RealLogs, DeepSpeedLauncherReportsTheFirstExitButNoRank) {
  LogSet logs = ParseReal("deepspeed_launcher.log");
  EXPECT_EQ(logs.files[0].launchers, LauncherBit(Launcher::kDeepSpeed));
  std::vector<const LogEvent*> exits, kills;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kWorkerFailed) exits.push_back(&e);
    if (e.kind == LogEventKind::kSignalSent) kills.push_back(&e);
  }
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0]->exit_code, 1);
  EXPECT_EQ(exits[0]->signal, -1);
  EXPECT_EQ(exits[1]->exit_code, -9);
  EXPECT_EQ(exits[1]->signal, 9);
  for (const LogEvent* e : exits) {
    EXPECT_EQ(e->launcher, Launcher::kDeepSpeed);
    // The quoted command is the last-spawned worker's ('--local_rank=4'), not the failed one's.
    EXPECT_EQ(e->rank, -1) << e->text;
    EXPECT_EQ(e->local_rank, -1) << e->text;
    EXPECT_EQ(e->raw_time.kind, LogTime::Kind::kLocal) << e->text;
  }
  // "Killing subprocess N" is the launcher's own doing, for every worker: never a death.
  ASSERT_EQ(kills.size(), 3u);
  EXPECT_EQ(kills[0]->pid, 3353707);
}

}  // namespace
}  // namespace fr
