// The kernel family (lib/fr/logs/families/kernel.cc): Xid errors, the OOM killer and the boot
// clock, as dmesg, kern.log and syslog print them, on real lines from public issues
// (tests/data/logs/real) and lines of the documented shapes.
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "fr/logs/xid_catalog.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::Kinds;
using log_test::Parse;
using log_test::ParseReal;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;

TEST(RealLogs, KernelOomOneEventPerKill) {
  LogSet logs = ParseReal("kernel_oom.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_oom"));
  EXPECT_EQ(logs.events[0].pid, 22213);
  EXPECT_EQ(logs.events[0].bytes, 25348912LL * 1024);
  LogSet dmesg = ParseReal("dmesg_t_oom.log");
  ASSERT_THAT(Kinds(dmesg), ElementsAre("host_oom"));
  EXPECT_EQ(dmesg.events[0].reason, "python");
  EXPECT_EQ(dmesg.events[0].raw_time.kind, LogTime::Kind::kLocal);
  LogSet syslog = ParseReal("syslog_kernel.log");
  EXPECT_THAT(Kinds(syslog), IsEmpty());
  EXPECT_EQ(syslog.files[0].format, "syslog");
}

TEST(RealLogs, Xid) {
  LogSet logs = ParseReal("xid.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid"));
  EXPECT_EQ(logs.events[0].xid, 79);
  EXPECT_EQ(logs.events[0].bus_id, "0000:44:00");
  EXPECT_EQ(logs.events[0].reason, "GPU has fallen off the bus");
}

TEST(Recognizers, XidWithProcess) {
  LogSet logs = Parse(
      "[ 1234.567890] NVRM: Xid (PCI:0000:3B:00): 79, pid=1234, name=python, GPU has fallen off "
      "the bus.\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid"));
  EXPECT_EQ(logs.events[0].bus_id, "0000:3b:00");
  EXPECT_EQ(logs.events[0].pid, 1234);
  EXPECT_EQ(logs.events[0].reason, "GPU has fallen off the bus.");
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kSinceBoot);
  EXPECT_EQ(logs.events[0].raw_time.ns, 1234567890000LL);
}

TEST(Recognizers, KernLogHostAndTime) {
  LogSet logs = Parse(
      "Dec  1 12:03:04 node05 kernel: [1234.56] NVRM: Xid (PCI:0000:3b:00): 48, pid=7, name=x, "
      "DBE\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid"));
  EXPECT_EQ(logs.events[0].host, "node05");
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kNoYear);
  EXPECT_EQ(logs.events[0].raw_time.month, 12);
  EXPECT_EQ(logs.events[0].raw_time.day, 1);
}

TEST(Recognizers, Rfc3339SyslogIsUtc) {
  LogSet logs = Parse(
      "2026-12-01T12:03:04.123456+01:00 node05 kernel: Memory cgroup out of memory: Killed process "
      "1234 (python) total-vm:100kB, anon-rss:2048kB, file-rss:0kB\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_oom"));
  const LogEvent& e = logs.events[0];
  EXPECT_EQ(e.host, "node05");
  EXPECT_EQ(e.bytes, 2048 * 1024);
  EXPECT_EQ(e.raw_time.kind, LogTime::Kind::kUtc);
  // 2026-12-01T11:03:04.123456Z
  EXPECT_EQ(e.raw_time.ns, 1796122984123456000LL);
}

TEST(RealLogs, XidWithoutAKnownProcess) {
  // dmesg --ctime, and a driver that cannot name the process (pid='<unknown>').
  LogSet logs = ParseReal("xid13_application.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid", "xid"));
  EXPECT_EQ(logs.events[0].xid, 13);
  EXPECT_EQ(logs.events[0].bus_id, "0000:cb:00");
  EXPECT_EQ(logs.events[0].pid, -1);
  EXPECT_EQ(logs.events[0].reason,
            "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter");
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logs.files[0].format, "dmesg");
}

TEST(RealLogs, XidWithAPidButNoName) {
  LogSet logs = ParseReal("xid63_notice.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid"));
  EXPECT_EQ(logs.events[0].xid, 63);
  EXPECT_EQ(logs.events[0].bus_id, "0000:10:1c");
  EXPECT_EQ(logs.events[0].pid, 1896);
  EXPECT_EQ(logs.events[0].reason,
            "Row Remapper: New row marked for remapping, reset gpu to activate.");
}

TEST(Kernel, BootClockStatesTheWallClock) {
  // With the epoch seconds in parentheses, and without (the ISO time then).
  LogSet logs = Parse(
      "[    1.234567] rtc_cmos 00:04: setting system clock to 2025-03-16T06:31:14 UTC "
      "(1742106674)\n"
      "[    1.234567] rtc_cmos 00:04: setting system clock to 2025-03-16T06:31:14 UTC\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("boot_clock", "boot_clock"));
  EXPECT_EQ(logs.events[0].stated_ns, 1742106674LL * 1000000000);
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kSinceBoot);
  EXPECT_EQ(logs.events[0].raw_time.ns, 1234567000);
  EXPECT_EQ(logs.events[1].stated_ns, 1742106674LL * 1000000000);
}

TEST(Kernel, OomKillsOfTwoProcessesAreTwoEvents) {
  LogSet logs = Parse(
      "[ 100.000001] oom-kill:constraint=CONSTRAINT_NONE,task=python,pid=1234,uid=1000\n"
      "[ 100.000002] Out of memory: Killed process 1234 (python) total-vm:100kB, "
      "anon-rss:2048kB, file-rss:0kB\n"
      "[ 100.000003] oom-kill:constraint=CONSTRAINT_NONE,task=python,pid=1235,uid=1000\n"
      "[ 100.000004] Out of memory: Killed process 1235 (python) total-vm:100kB, "
      "anon-rss:4096kB, file-rss:0kB\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_oom", "host_oom"));
  EXPECT_EQ(logs.events[0].pid, 1234);
  EXPECT_EQ(logs.events[0].bytes, 2048 * 1024);
  EXPECT_EQ(logs.events[1].pid, 1235);
  EXPECT_EQ(logs.events[1].bytes, 4096 * 1024);
  EXPECT_EQ(logs.events[1].line, 3);
}

TEST(WorldLogs, AnXidCausedByAPreviousXidIsThatXid) {
  LogSet logs = log_test::ParseWorld("xid45_after_xid149_nvlink");
  ASSERT_THAT(Kinds(logs), Each(Eq("xid")));
  ASSERT_GE(logs.events.size(), 2u);
  EXPECT_EQ(logs.events[0].xid, 149);
  EXPECT_EQ(logs.events[0].bus_id, "0000:dc:00");
  EXPECT_EQ(logs.events[1].xid, 145);
  EXPECT_EQ(LookUpXid(149).severity, XidSeverity::kHardware);
}
}  // namespace
}  // namespace fr
