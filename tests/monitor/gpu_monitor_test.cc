#include "fr/monitor/gpu_monitor.h"

#include <string>
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

TEST(GpuMonitorTest, ReadsNvidiaSmiCsvWithUnitsAndWithout) {
  GpuMonitor monitor;
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

TEST(GpuMonitorTest, AFileWithoutAHeaderIsNotAMonitorLog) {
  GpuMonitor monitor;
  EXPECT_FALSE(LooksLikeNvidiaSmiCsv("[rank0]: epoch 3, loss 1.25, lr 0.1\n"));
  absl::Status status = ParseNvidiaSmiCsv("x/notes.csv", "a, b, c\n1, 2, 3\n", "", &monitor);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(status.message(), HasSubstr("x/notes.csv"));
}

TEST(GpuMonitorTest, GpusSpinningAtIdlePowerAreTheHangSignatureAndAnIdleOneStandsOut) {
  // 8 GPUs train at ~650 W for 10 samples, then 7 spin at 100% drawing ~120 W (NCCL kernels
  // waiting) while GPU 5 sits at 0%: its rank never joined.
  GpuMonitor monitor;
  std::string text = Log(8, 16, [](int g, int s) {
    if (s < 10) return std::tuple{98, 650.0 + g, 70000};
    if (g == 5) return std::tuple{0, 95.0, 70000};
    return std::tuple{100, 120.0 + g, 70000};
  });
  ASSERT_TRUE(ParseNvidiaSmiCsv("node03/gpu.csv", text, "node03", &monitor).ok());
  std::vector<GpuFinding> findings = FindGpuAnomalies(monitor);
  std::vector<std::string> kinds;
  for (const GpuFinding& f : findings) kinds.push_back(f.kind);
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
  findings = FindGpuAnomalies(monitor);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, "gpu_hang_signature");
  EXPECT_THAT(findings[0].hosts, ElementsAre("node04"));
  EXPECT_EQ(findings[0].evidence.size(), 8u);
}

TEST(GpuMonitorTest, BusyGpusAtFullPowerAreHealthy) {
  GpuMonitor monitor;
  std::string text = Log(8, 16, [](int g, int) { return std::tuple{99, 640.0 + g, 70000 + g}; });
  ASSERT_TRUE(ParseNvidiaSmiCsv("gpu.csv", text, "", &monitor).ok());
  EXPECT_TRUE(FindGpuAnomalies(monitor).empty());
}

TEST(GpuMonitorTest, OneGpuFarFromTheMedianMemoryIsUneven) {
  GpuMonitor monitor;
  std::string text = Log(8, 4, [](int g, int) {
    return std::tuple{99, 640.0, g == 2 ? 79000 : 52000};
  });
  ASSERT_TRUE(ParseNvidiaSmiCsv("node01/gpu.csv", text, "node01", &monitor).ok());
  std::vector<GpuFinding> findings = FindGpuAnomalies(monitor);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "gpu_memory_uneven");
  ASSERT_EQ(findings[0].evidence.size(), 1u);
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("GPU 2"));
  EXPECT_THAT(findings[0].evidence[0], HasSubstr("79000 MiB used of 81559 (median 52000)"));
}

}  // namespace
}  // namespace fr
