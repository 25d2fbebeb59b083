#include "fr/monitor/gpu_monitor.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "fmt/format.h"

namespace fr {
namespace {

// The fields nvidia-smi prints under these names in the header (a unit in brackets may follow).
enum class Column {
  kTimestamp,
  kIndex,
  kBusId,
  kUtilization,
  kMemoryUsed,
  kMemoryTotal,
  kPower,
  kOther
};

Column ColumnOf(std::string_view name) {
  if (size_t bracket = name.find(" ["); bracket != std::string_view::npos) {
    name = name.substr(0, bracket);
  }
  if (name == "timestamp") return Column::kTimestamp;
  if (name == "index") return Column::kIndex;
  if (name == "pci.bus_id") return Column::kBusId;
  if (name == "utilization.gpu") return Column::kUtilization;
  if (name == "memory.used") return Column::kMemoryUsed;
  if (name == "memory.total") return Column::kMemoryTotal;
  if (name == "power.draw" || name == "power.draw.instant" || name == "power.draw.average") {
    return Column::kPower;
  }
  return Column::kOther;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    fields.push_back(
        Trim(line.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

// "100 %", "70123 MiB", "112.34 W", "100" (nounits); -1 for "[N/A]", "N/A" or garbage.
double Number(std::string_view text) {
  if (size_t space = text.find(' '); space != std::string_view::npos) text = text.substr(0, space);
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0) {
    return -1;
  }
  return value;
}

// Days since 1970-01-01 of a civil date (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "2026/03/14 11:21:20.770" (nvidia-smi's timestamp) as ns, the host's wall clock read as UTC.
std::optional<int64_t> Timestamp(std::string_view text) {
  int y, mo, d, h, mi, s, ms = 0;
  char frac[4] = {0};
  std::string copy(text);
  int got = std::sscanf(copy.c_str(), "%d/%d/%d %d:%d:%d.%3[0-9]", &y, &mo, &d, &h, &mi, &s, frac);
  if (got < 6 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1970 ||
      y > 9999) {
    return std::nullopt;
  }
  if (got == 7) {
    ms = std::atoi(frac);
    for (size_t digits = std::string_view(frac).size(); digits < 3; ++digits) ms *= 10;
  }
  int64_t seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  return seconds * 1'000'000'000 + int64_t{ms} * 1'000'000;
}

bool IsHeader(const std::vector<std::string_view>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](std::string_view f) {
    Column c = ColumnOf(f);
    return c == Column::kUtilization || c == Column::kMemoryUsed || c == Column::kPower ||
           c == Column::kBusId;
  });
}

std::string Where(const GpuSeries& gpu) {
  std::string where = gpu.host.empty() ? "GPU" : gpu.host + " GPU";
  if (gpu.index >= 0) where += fmt::format(" {}", gpu.index);
  if (!gpu.bus_id.empty()) where += fmt::format(" ({})", gpu.bus_id);
  return where;
}

std::string Describe(const GpuSeries& gpu, const GpuSample& sample) {
  std::string text = fmt::format("{} at {}:{}:", Where(gpu), gpu.path, sample.line);
  if (sample.utilization_pct >= 0) text += fmt::format(" {:.0f}% busy", sample.utilization_pct);
  if (sample.power_w >= 0) text += fmt::format(", {:.0f} W", sample.power_w);
  if (sample.memory_used_mib >= 0) {
    text += fmt::format(", {:.0f} MiB used", sample.memory_used_mib);
    if (sample.memory_total_mib > 0) text += fmt::format(" of {:.0f}", sample.memory_total_mib);
  }
  return text;
}

// Samples for the hang signature: the last few of a GPU must all show it.
constexpr size_t kHangSamples = 3;
constexpr double kBusyPct = 90;
constexpr double kIdlePct = 10;
// Idle power: at most this share of the most the GPU drew in the log.
constexpr double kIdlePowerShare = 0.5;

bool SpinsAtIdlePower(const GpuSeries& gpu) {
  if (gpu.samples.size() < kHangSamples + 1) return false;
  double peak = 0;
  for (const GpuSample& s : gpu.samples) peak = std::max(peak, s.power_w);
  if (peak <= 0) return false;
  for (size_t i = gpu.samples.size() - kHangSamples; i < gpu.samples.size(); ++i) {
    const GpuSample& s = gpu.samples[i];
    if (s.utilization_pct < kBusyPct || s.power_w < 0 || s.power_w > kIdlePowerShare * peak) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool LooksLikeNvidiaSmiCsv(std::string_view head) {
  size_t end = head.find('\n');
  std::string_view first = head.substr(0, end);
  return first.find(',') != std::string_view::npos && IsHeader(SplitCsv(first));
}

absl::Status ParseNvidiaSmiCsv(const std::string& path, std::string_view text,
                               const std::string& host, GpuMonitor* monitor) {
  std::vector<Column> columns;
  bool any_header = false;
  std::map<std::tuple<std::string, int32_t>, size_t> series_of;  // (bus id, index) -> gpus index
  int64_t line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? end : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++line_number;
    ++monitor->lines;
    if (Trim(line).empty()) continue;
    std::vector<std::string_view> fields = SplitCsv(line);
    if (IsHeader(fields)) {
      columns.clear();
      for (std::string_view f : fields) columns.push_back(ColumnOf(f));
      any_header = true;
      continue;
    }
    if (columns.empty() || fields.size() != columns.size()) {
      ++monitor->unparsed_lines;
      continue;
    }
    GpuSample sample;
    sample.line = line_number;
    std::string bus_id;
    int32_t index = -1;
    bool bad = false;
    for (size_t i = 0; i < fields.size(); ++i) {
      switch (columns[i]) {
        case Column::kTimestamp:
          if (std::optional<int64_t> t = Timestamp(fields[i])) {
            sample.time_ns = *t;
          } else {
            bad = true;
          }
          break;
        case Column::kIndex: {
          double value = Number(fields[i]);
          if (value < 0 || value > 1024) bad = true;
          index = static_cast<int32_t>(value);
          break;
        }
        case Column::kBusId:
          bus_id = std::string(fields[i].substr(0, 32));
          break;
        case Column::kUtilization:
          sample.utilization_pct = std::min(Number(fields[i]), 100.0);
          break;
        case Column::kMemoryUsed:
          sample.memory_used_mib = Number(fields[i]);
          break;
        case Column::kMemoryTotal:
          sample.memory_total_mib = Number(fields[i]);
          break;
        case Column::kPower:
          sample.power_w = Number(fields[i]);
          break;
        case Column::kOther:
          break;
      }
    }
    if (bad || (bus_id.empty() && index < 0)) {
      ++monitor->unparsed_lines;
      continue;
    }
    auto [it, added] = series_of.try_emplace({bus_id, index}, monitor->gpus.size());
    if (added) {
      GpuSeries& gpu = monitor->gpus.emplace_back();
      gpu.path = path;
      gpu.host = host;
      gpu.index = index;
      gpu.bus_id = bus_id;
    }
    monitor->gpus[it->second].samples.push_back(sample);
  }
  if (!any_header) {
    return absl::InvalidArgumentError(
        fmt::format("{}: no nvidia-smi --query-gpu header (line 1 names no GPU field)", path));
  }
  monitor->files.push_back(path);
  return absl::OkStatus();
}

std::vector<GpuFinding> FindGpuAnomalies(const GpuMonitor& monitor) {
  std::vector<GpuFinding> findings;
  // 1. Per host: every GPU spinning at idle power for its last samples.
  std::map<std::string, std::vector<const GpuSeries*>> by_host;
  for (const GpuSeries& gpu : monitor.gpus) {
    if (!gpu.samples.empty()) by_host[gpu.host].push_back(&gpu);
  }
  GpuFinding hang;
  hang.kind = "gpu_hang_signature";
  size_t spinning_gpus = 0;
  for (const auto& [host, gpus] : by_host) {
    if (!std::all_of(gpus.begin(), gpus.end(),
                     [](const GpuSeries* g) { return SpinsAtIdlePower(*g); })) {
      continue;
    }
    hang.hosts.push_back(host);
    spinning_gpus += gpus.size();
    for (const GpuSeries* gpu : gpus) hang.evidence.push_back(Describe(*gpu, gpu->samples.back()));
  }
  if (!hang.hosts.empty()) {
    hang.summary = fmt::format(
        "{} GPU(s) on {} host(s) were {:.0f}% or more busy at no more than half their peak power "
        "for their last {} samples: kernels spinning in a collective that cannot finish (the "
        "NCCL hang signature), not computing.",
        spinning_gpus, hang.hosts.size(), kBusyPct, kHangSamples);
    findings.push_back(std::move(hang));
  }
  // 2. One GPU idle while the others spin, at the last samples.
  std::vector<const GpuSeries*> busy, idle;
  for (const GpuSeries& gpu : monitor.gpus) {
    if (gpu.samples.empty()) continue;
    double util = gpu.samples.back().utilization_pct;
    if (util >= kBusyPct) busy.push_back(&gpu);
    if (util >= 0 && util <= kIdlePct) idle.push_back(&gpu);
  }
  if (!idle.empty() && busy.size() >= 3 * idle.size()) {
    GpuFinding odd;
    odd.kind = "gpu_idle_while_peers_busy";
    std::set<std::string> hosts;
    for (const GpuSeries* gpu : idle) {
      odd.evidence.push_back(Describe(*gpu, gpu->samples.back()));
      hosts.insert(gpu->host);
    }
    odd.hosts.assign(hosts.begin(), hosts.end());
    odd.summary = fmt::format(
        "{} GPU(s) idle at the last samples while {} others were busy: their rank(s) ran no "
        "kernel, so they are not in the collective their peers spin in (stuck before it, in data "
        "loading or host code).",
        idle.size(), busy.size());
    findings.push_back(std::move(odd));
  }
  // 3. Memory far from the median of every GPU's last sample.
  std::vector<double> used;
  for (const GpuSeries& gpu : monitor.gpus) {
    if (!gpu.samples.empty() && gpu.samples.back().memory_used_mib >= 0) {
      used.push_back(gpu.samples.back().memory_used_mib);
    }
  }
  if (used.size() >= 4) {
    std::nth_element(used.begin(), used.begin() + used.size() / 2, used.end());
    double median = used[used.size() / 2];
    GpuFinding uneven;
    uneven.kind = "gpu_memory_uneven";
    std::set<std::string> hosts;
    for (const GpuSeries& gpu : monitor.gpus) {
      if (gpu.samples.empty() || gpu.samples.back().memory_used_mib < 0) continue;
      const GpuSample& last = gpu.samples.back();
      double margin = std::max(2048.0, 0.1 * std::max(last.memory_total_mib, 0.0));
      if (std::abs(last.memory_used_mib - median) <= margin) continue;
      uneven.evidence.push_back(Describe(gpu, last) + fmt::format(" (median {:.0f})", median));
      hosts.insert(gpu.host);
    }
    if (!uneven.evidence.empty() && uneven.evidence.size() * 4 <= used.size()) {
      uneven.hosts.assign(hosts.begin(), hosts.end());
      uneven.summary = fmt::format(
          "{} GPU(s) hold far more or less memory than the median GPU ({:.0f} MiB): a leak, or a "
          "rank on another code path than its peers.",
          uneven.evidence.size(), median);
      findings.push_back(std::move(uneven));
    }
  }
  return findings;
}

}  // namespace fr
