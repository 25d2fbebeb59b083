#include "fr/monitor/monitor_snapshots.h"

#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The header `nvidia-smi --query-gpu=timestamp,name,pci.bus_id,index,utilization.gpu,
// memory.used,memory.total,power.draw --format=csv` prints, and one of its rows.
constexpr char kHeader[] =
    "timestamp, name, pci.bus_id, index, utilization.gpu [%], memory.used [MiB], "
    "memory.total [MiB], power.draw [W]\n";
constexpr char kRow[] =
    "2024/05/01 10:00:05.123, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 0, 100 %, 70000 MiB, "
    "81559 MiB, 612.50 W\n";

// `gpus` GPUs sampled every 5 s for `samples` samples; `row(gpu, sample)` gives (util %, W, MiB).
template <typename Row>
std::string Log(int gpus, int samples, Row row) {
  std::string text = kHeader;
  for (int s = 0; s < samples; ++s) {
    for (int g = 0; g < gpus; ++g) {
      auto [util, watts, mib] = row(g, s);
      text += fmt::format(
          "2024/05/01 10:{:02}:{:02}.000, NVIDIA H100 80GB HBM3, 00000000:{:02X}:00.0, "
          "{}, {} %, {} MiB, 81559 MiB, {:.2f} W\n",
          s * 5 / 60, s * 5 % 60, 0x18 + g, g, util, mib, watts);
    }
  }
  return text;
}

TEST(MonitorSnapshotsTest, ReadsNvidiaSmiCsvWithUnitsAndWithout) {
  MonitorSnapshots monitor;
  std::string text = std::string(kHeader) + kRow +
                     "timestamp, index, pci.bus_id, utilization.gpu [%], power.draw [W]\n"
                     "2024/05/01 10:00:10.5, 1, 00000000:2A:00.0, 37, [N/A]\n"
                     "this line fits no header\n";
  ASSERT_TRUE(LooksLikeNvidiaSmiCsv(text));
  ASSERT_TRUE(ParseNvidiaSmiCsv("node01/gpu.csv", text, "node01", &monitor).ok());
  ASSERT_EQ(monitor.gpus.size(), 2u);
  const GpuSeries& first = monitor.gpus[0];
  EXPECT_EQ(first.host, "node01");
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.bus_id, "00000000:18:00.0");
  ASSERT_EQ(first.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(first.samples[0].utilization_pct, 100);
  EXPECT_DOUBLE_EQ(first.samples[0].memory_used_mib, 70000);
  EXPECT_DOUBLE_EQ(first.samples[0].memory_total_mib, 81559);
  EXPECT_DOUBLE_EQ(first.samples[0].power_w, 612.5);
  EXPECT_EQ(first.samples[0].line, 2);
  // 2024-05-01 10:00:05.123 as read (host-local clock, kept as printed).
  EXPECT_EQ(first.samples[0].time_ns, 1714557605123000000);
  const GpuSample& second = monitor.gpus[1].samples.at(0);
  EXPECT_DOUBLE_EQ(second.utilization_pct, 37);
  EXPECT_LT(second.power_w, 0) << "[N/A] is not recorded";
  EXPECT_EQ(second.time_ns, 1714557610500000000);
  EXPECT_EQ(monitor.unparsed_lines, 1);
}

TEST(MonitorSnapshotsTest, AFileWithoutAHeaderIsNotAMonitorLog) {
  MonitorSnapshots monitor;
  EXPECT_FALSE(LooksLikeNvidiaSmiCsv("[rank0]: epoch 3, loss 1.25, lr 0.1\n"));
  absl::Status status = ParseNvidiaSmiCsv("x/notes.csv", "a, b, c\n1, 2, 3\n", "", &monitor);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(status.message(), HasSubstr("x/notes.csv"));
}

TEST(MonitorSnapshotsTest, GpusSpinningAtIdlePowerAreTheHangSignatureAndAnIdleOneStandsOut) {
  // 8 GPUs train at ~650 W for 10 samples, then 7 spin at 100% drawing ~120 W (NCCL kernels
  // waiting) while GPU 5 sits at 0%: its rank never joined.
  MonitorSnapshots monitor;
  std::string text = Log(8, 16, [](int g, int s) {
    if (s < 10) return std::tuple{98, 650.0 + g, 70000};
    if (g == 5) return std::tuple{0, 95.0, 70000};
    return std::tuple{100, 120.0 + g, 70000};
  });
  ASSERT_TRUE(ParseNvidiaSmiCsv("node03/gpu.csv", text, "node03", &monitor).ok());
  std::vector<MonitorFinding> findings = FindMonitorAnomalies(monitor);
  std::vector<std::string> kinds;
  for (const MonitorFinding& f : findings) kinds.push_back(f.kind);
  // All eight are not spinning (GPU 5 is idle), so no hang signature for the host as a whole;
  // the idle GPU is the finding.
  EXPECT_THAT(kinds, ElementsAre("gpu_idle_while_peers_busy"));
  ASSERT_EQ(findings[0].evidence.size(), 1u);
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("node03 GPU 5 (00000000:1D:00.0)"));
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("0% busy"));
  EXPECT_THAT(findings[0].hosts, ElementsAre("node03"));

  // On another host every GPU spins at idle power: that host shows the hang signature.
  std::string spinning = Log(8, 16, [](int g, int s) {
    return s < 10 ? std::tuple{98, 650.0 + g, 70000} : std::tuple{100, 120.0 + g, 70000};
  });
  ASSERT_TRUE(ParseNvidiaSmiCsv("node04/gpu.csv", spinning, "node04", &monitor).ok());
  findings = FindMonitorAnomalies(monitor);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, "gpu_hang_signature");
  EXPECT_THAT(findings[0].hosts, ElementsAre("node04"));
  EXPECT_EQ(findings[0].evidence.size(), 8u);
}

TEST(MonitorSnapshotsTest, BusyGpusAtFullPowerAreHealthy) {
  MonitorSnapshots monitor;
  std::string text = Log(8, 16, [](int g, int) { return std::tuple{99, 640.0 + g, 70000 + g}; });
  ASSERT_TRUE(ParseNvidiaSmiCsv("gpu.csv", text, "", &monitor).ok());
  EXPECT_TRUE(FindMonitorAnomalies(monitor).empty());
}

TEST(MonitorSnapshotsTest, OneGpuFarFromTheMedianMemoryIsUneven) {
  MonitorSnapshots monitor;
  std::string text = Log(8, 4, [](int g, int) {
    return std::tuple{99, 640.0, g == 2 ? 79000 : 52000};
  });
  ASSERT_TRUE(ParseNvidiaSmiCsv("node01/gpu.csv", text, "node01", &monitor).ok());
  std::vector<MonitorFinding> findings = FindMonitorAnomalies(monitor);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "gpu_memory_uneven");
  ASSERT_EQ(findings[0].evidence.size(), 1u);
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("GPU 2"));
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("79000 MiB used of 81559 (median 52000)"));
}

// One `nvidia-smi -q` report of a host's GPUs, as driver 535 and later print it (GPU Power
// Readings with instantaneous and average draw) or as older drivers do (Power Readings, Power
// Draw). `gpus[i]` is (util %, W, MiB used).
std::string QueryReport(const std::string& when,
                        const std::vector<std::tuple<int, double, int>>& gpus, bool new_driver) {
  std::string text = fmt::format(
      "\n==============NVSMI LOG==============\n\n"
      "Timestamp                                 : {}\n"
      "Driver Version                            : {}\n"
      "CUDA Version                              : 12.2\n\n"
      "Attached GPUs                             : {}\n",
      when, new_driver ? "535.104.05" : "470.82.01", gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    auto [util, watts, mib] = gpus[g];
    text += fmt::format(
        "GPU 00000000:{:02X}:00.0\n"
        "    Product Name                          : NVIDIA H100 80GB HBM3\n"
        "    Minor Number                          : {}\n"
        "    FB Memory Usage\n"
        "        Total                             : 81559 MiB\n"
        "        Reserved                          : 328 MiB\n"
        "        Used                              : {} MiB\n"
        "        Free                              : {} MiB\n"
        "    BAR1 Memory Usage\n"
        "        Total                             : 131072 MiB\n"
        "        Used                              : 1 MiB\n"
        "    Compute Mode                          : Default\n"
        "    Utilization\n"
        "        Gpu                               : {} %\n"
        "        Memory                            : 0 %\n",
        0x18 + g, g, mib, 81559 - mib, util);
    if (new_driver) {
      text += fmt::format(
          "    GPU Power Readings\n"
          "        Power Draw                        : N/A\n"
          "        Instantaneous Power Draw          : {:.2f} W\n"
          "        Average Power Draw                : {:.2f} W\n"
          "        Current Power Limit               : 700.00 W\n",
          watts, watts + 3);
    } else {
      text += fmt::format(
          "    Power Readings\n"
          "        Power Management                  : Supported\n"
          "        Power Draw                        : {:.2f} W\n"
          "        Power Limit                       : 700.00 W\n",
          watts);
    }
    text +=
        "    Processes\n"
        "        GPU instance ID                   : N/A\n"
        "        Process ID                        : 4242\n"
        "            Type                          : C\n"
        "            Name                          : /usr/bin/python3\n"
        "            Used GPU Memory               : 1000 MiB\n";
  }
  return text;
}

TEST(MonitorSnapshotsTest, ReadsNvidiaSmiQueryReportsOfOldAndNewDrivers) {
  for (bool new_driver : {false, true}) {
    MonitorSnapshots monitor;
    std::string text =
        QueryReport("Tue Mar 14 11:21:20 2026", {{100, 118.5, 70000}, {3, 95, 512}}, new_driver) +
        QueryReport("Tue Mar 14 11:21:25 2026", {{99, 119, 70001}, {0, 94, 512}}, new_driver);
    ASSERT_EQ(MonitorFormatOf(text), MonitorFormat::kNvidiaSmiQuery);
    ASSERT_TRUE(ParseMonitorFile("node02/smi-q.txt", text, "node02", &monitor).ok());
    ASSERT_EQ(monitor.gpus.size(), 2u);
    const GpuSeries& first = monitor.gpus[0];
    EXPECT_EQ(first.bus_id, "00000000:18:00.0");
    EXPECT_EQ(first.index, 0);
    EXPECT_EQ(first.host, "node02");
    ASSERT_EQ(first.samples.size(), 2u);
    EXPECT_EQ(first.samples[0].utilization_pct, 100);
    EXPECT_EQ(first.samples[0].memory_used_mib, 70000);
    EXPECT_EQ(first.samples[0].memory_total_mib, 81559);
    // The instantaneous draw, not the average; "N/A" for the plain draw is no reading.
    EXPECT_DOUBLE_EQ(first.samples[0].power_w, 118.5);
    // 2026-03-14 11:21:20, the host's clock read as UTC; the second report 5 s later.
    EXPECT_EQ(first.samples[0].time_ns, int64_t{1773487280} * 1'000'000'000);
    EXPECT_EQ(first.samples[1].time_ns - first.samples[0].time_ns, int64_t{5'000'000'000});
    EXPECT_EQ(monitor.gpus[1].bus_id, "00000000:19:00.0");
    EXPECT_EQ(monitor.gpus[1].samples[1].utilization_pct, 0);
  }
}

TEST(MonitorSnapshotsTest, ReadsDcgmiDmonRowsOfGpusOnly) {
  // dcgmi dmon -e 203,252,250,155: the header, the ID line, then a row per GPU and sample; other
  // entities (a GPU instance) and garbled rows are counted, not read.
  std::string text =
      "#Entity   GPUTL  FBUSD  FBTTL  POWER\n"
      "ID\n"
      "GPU 0     98     70000  81559  650.120\n"
      "GPU 1     97     70100  81559  648.000\n"
      "GPU-I 3   0      0      0      N/A\n"
      "GPU 0     100    70000  81559  120.500\n"
      "GPU 1     0      70100  81559  N/A\n"
      "GPU 1     0\n";
  ASSERT_EQ(MonitorFormatOf(text), MonitorFormat::kDcgmiDmon);
  MonitorSnapshots monitor;
  ASSERT_TRUE(ParseMonitorFile("node05/dmon.txt", text, "node05", &monitor).ok());
  ASSERT_EQ(monitor.gpus.size(), 2u);
  EXPECT_EQ(monitor.gpus[0].index, 0);
  ASSERT_EQ(monitor.gpus[0].samples.size(), 2u);
  EXPECT_DOUBLE_EQ(monitor.gpus[0].samples[1].power_w, 120.5);
  EXPECT_EQ(monitor.gpus[0].samples[1].memory_used_mib, 70000);
  EXPECT_EQ(monitor.gpus[0].samples[1].memory_total_mib, 81559);
  EXPECT_EQ(monitor.gpus[0].samples[1].time_ns, -1);  // dmon prints no times
  EXPECT_LT(monitor.gpus[1].samples[1].power_w, 0);   // N/A
  EXPECT_EQ(monitor.unparsed_lines, 2);
}

TEST(MonitorSnapshotsTest, TheHangSignatureIsFoundInQueryReportsAndDmonAlike) {
  // Four GPUs train at ~650 W, then spin at 100% drawing ~120 W for the last samples.
  std::string reports, dmon = "# Entity  GPUTL  FBUSD  POWER\n      ID\n";
  for (int s = 0; s < 8; ++s) {
    std::vector<std::tuple<int, double, int>> gpus;
    for (int g = 0; g < 4; ++g) {
      gpus.push_back(s < 4 ? std::tuple{97, 650.0 + g, 70000} : std::tuple{100, 120.0 + g, 70000});
      auto [util, watts, mib] = gpus.back();
      dmon += fmt::format("    GPU {}  {}  {}  {:.3f}\n", g, util, mib, watts);
    }
    reports += QueryReport(fmt::format("Tue Mar 14 11:21:{:02} 2026", 5 * s), gpus, true);
  }
  for (const std::string& text : {reports, dmon}) {
    MonitorSnapshots monitor;
    ASSERT_TRUE(ParseMonitorFile("node07/monitor.txt", text, "node07", &monitor).ok());
    std::vector<MonitorFinding> findings = FindMonitorAnomalies(monitor);
    ASSERT_FALSE(findings.empty());
    EXPECT_EQ(findings[0].kind, "gpu_hang_signature");
    EXPECT_THAT(findings[0].hosts, ElementsAre("node07"));
    EXPECT_EQ(findings[0].evidence.size(), 4u);
  }
  // Only the -q reports are timed: the signature is marked where it began on each GPU, at the
  // first of the last three samples (sample 5, 25 s in).
  MonitorSnapshots timed;
  ASSERT_TRUE(ParseMonitorFile("node07/q.txt", reports, "node07", &timed).ok());
  MonitorFinding hang = FindMonitorAnomalies(timed)[0];
  ASSERT_EQ(hang.marks.size(), 4u);
  EXPECT_EQ(hang.marks[0].host, "node07");
  EXPECT_EQ(hang.marks[0].host_ns, (int64_t{1773487260} + 25) * 1'000'000'000);
}

TEST(MonitorSnapshotsTest, NcclInitBusIdsTieGpusToRanks) {
  // Rank 13's NCCL init line on node01 names busId 1b000 (bus 0x1b): GPU 3 of node01 in the
  // CSV log. The same bus id on another host is another GPU.
  MonitorSnapshots monitor;
  std::string text = Log(8, 16, [](int g, int s) {
    if (s < 10) return std::tuple{98, 650.0 + g, 70000};
    if (g == 3) return std::tuple{0, 95.0, 70000};
    return std::tuple{100, 120.0 + g, 70000};
  });
  ASSERT_TRUE(ParseNvidiaSmiCsv("node01/gpu.csv", text, "node01", &monitor).ok());
  LogSet logs;
  for (auto [host, rank, bus] :
       {std::tuple{"node01", 13, "0000:1b:00"}, std::tuple{"node00", 3, "0000:1b:00"},
        std::tuple{"node01", 12, "0000:1a:00"}}) {
    LogEvent& init = logs.events.emplace_back();
    init.kind = LogEventKind::kNcclInit;
    init.host = host;
    init.rank = rank;
    init.bus_id = bus;
  }
  AssignGpuRanks(logs, &monitor);
  EXPECT_EQ(monitor.gpus[3].rank, 13);
  EXPECT_EQ(monitor.gpus[2].rank, 12);
  EXPECT_EQ(monitor.gpus[0].rank, -1);
  std::vector<MonitorFinding> findings = FindMonitorAnomalies(monitor);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "gpu_idle_while_peers_busy");
  EXPECT_THAT(findings[0].ranks, ElementsAre(13));
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("node01 GPU 3 (00000000:1B:00.0), rank 13"));
  EXPECT_THAT(findings[0].summary, HasSubstr("rank(s) 13"));
  ASSERT_EQ(findings[0].marks.size(), 1u);
  EXPECT_EQ(findings[0].marks[0].rank, 13);
}

// `ps -eo pid,ppid,stat,etime,args` of a host where the launcher (pid 4100) started 4 workers.
std::string Ps(bool launcher_alive, int64_t workers_parent) {
  std::string text =
      "    PID    PPID STAT     ELAPSED COMMAND\n"
      "      1       0 Ss      3-02:11:09 /sbin/init\n"
      "    812       1 Ss      3-02:11:01 /usr/sbin/sshd -D\n";
  if (launcher_alive) {
    text +=
        "   4100     812 Sl         42:10 /usr/bin/python3 /usr/local/bin/torchrun "
        "--nproc-per-node=4 train.py --config big.yaml\n";
  }
  for (int w = 0; w < 4; ++w) {
    text +=
        fmt::format("   {}    {} Rl         42:08 /usr/bin/python3 -u train.py --config big.yaml\n",
                    4101 + w, workers_parent);
  }
  text += "   5000     812 R+          0:00 ps -eo pid,ppid,stat,etime,args\n";
  return text;
}

TEST(MonitorSnapshotsTest, WorkersWhoseLauncherIsGoneAreFound) {
  MonitorSnapshots monitor;
  // The launcher died; its workers were reparented to init.
  std::string text = "Tue Dec  1 12:03:04 UTC 2026\n" + Ps(false, 1);
  ASSERT_EQ(MonitorFormatOf(text), MonitorFormat::kProcessListing);
  ASSERT_TRUE(ParseMonitorFile("node02/ps.txt", text, "node02", &monitor).ok());
  ASSERT_EQ(monitor.process_listings.size(), 1u);
  const ProcessListing& listing = monitor.process_listings[0];
  EXPECT_TRUE(listing.has_parents);
  ASSERT_EQ(listing.processes.size(), 7u);
  EXPECT_EQ(listing.processes[2].pid, 4101);
  EXPECT_EQ(listing.processes[2].ppid, 1);
  EXPECT_EQ(listing.processes[2].state, "Rl");
  EXPECT_EQ(listing.processes[2].command, "/usr/bin/python3 -u train.py --config big.yaml");
  std::vector<MonitorFinding> findings = FindMonitorAnomalies(monitor);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "launcher_gone_workers_alive");
  EXPECT_THAT(findings[0].hosts, ElementsAre("node02"));
  ASSERT_EQ(findings[0].evidence.size(), 4u);
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("node02/ps.txt:5: pid 4101 (parent 1 is init)"));
  EXPECT_THAT(findings[0].summary, HasSubstr("4 worker process(es) on 1 host(s)"));
}

TEST(MonitorSnapshotsTest, WorkersOfALiveLauncherOrWithoutParentsListedAreNotOrphans) {
  struct Case {
    const char* what;
    std::string text;
  };
  std::vector<Case> cases = {
      {"the launcher alive, the workers its children", Ps(true, 4100)},
      // In a container torchrun can be pid 1 itself.
      {"torchrun as pid 1",
       "  PID  PPID STAT COMMAND\n"
       "    1     0 Ssl  /usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node=2 train.py\n"
       "   20     1 Rl   /usr/bin/python3 -u train.py\n"
       "   21     1 Rl   /usr/bin/python3 -u train.py\n"},
      // ps aux has no parents: nothing can be said.
      {"ps aux",
       "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
       "alice       4101 99.0  2.1 9999999 999 ?        Rl   11:20  42:08 python -u train.py\n"
       "alice       4102 99.0  2.1 9999999 999 ?        Rl   11:20  42:08 python -u train.py\n"},
      // One orphaned Python process is not a job's workers.
      {"a lone orphan",
       "  PID  PPID STAT COMMAND\n"
       "    1     0 Ss   /sbin/init\n"
       "  300     1 Sl   /usr/bin/python3 /opt/jupyter/bin/jupyter-lab\n"},
      // Zombies are dead already.
      {"zombies",
       "  PID  PPID STAT COMMAND\n"
       "    1     0 Ss   /sbin/init\n"
       "   20     1 Z    [python3] <defunct>\n"
       "   21     1 Z    [python3] <defunct>\n"},
  };
  for (const Case& c : cases) {
    MonitorSnapshots monitor;
    ASSERT_TRUE(ParseMonitorFile("node00/ps.txt", c.text, "node00", &monitor).ok()) << c.what;
    EXPECT_TRUE(FindMonitorAnomalies(monitor).empty()) << c.what;
  }
}

TEST(MonitorSnapshotsTest, LogsDumpsAndReportsAreNoMonitorSnapshot) {
  for (std::string_view head : {
           std::string_view("[rank0]:[E1201 12:03:04.123456 1234 ProcessGroupNCCL.cpp:616] "
                            "[Rank 0] Watchdog caught collective operation timeout\n"),
           std::string_view("{\"version\": \"2.10\", \"pg_config\": {}}"),
           std::string_view("\x80\x02}q\x00(X\x07\x00\x00\x00version"),
           std::string_view("fr-analyze: missing_participant (confidence high)\n"),
       }) {
    EXPECT_EQ(MonitorFormatOf(head), MonitorFormat::kNone) << head;
  }
  MonitorSnapshots monitor;
  absl::Status status = ParseMonitorFile("notes.txt", "hello, world\n", "", &monitor);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("notes.txt"));
}

}  // namespace
}  // namespace fr
