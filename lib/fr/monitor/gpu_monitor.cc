// The GPU monitors: nvidia-smi CSV logs and -q reports, dcgmi dmon output, and their findings.
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
#include "fmt/ranges.h"
#include "fr/base/lines.h"
#include "fr/monitor/monitor_snapshots.h"

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
// Years past 2200 are refused: their nanoseconds do not fit in 64 bits.
std::optional<int64_t> Timestamp(std::string_view text) {
  int y, mo, d, h, mi, s, ms = 0;
  char frac[4] = {0};
  std::string copy(text);
  int got = std::sscanf(copy.c_str(), "%d/%d/%d %d:%d:%d.%3[0-9]", &y, &mo, &d, &h, &mi, &s, frac);
  if (got < 6 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      s < 0 || s > 60 || y < 1970 || y > 2200) {
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
  if (gpu.rank >= 0) where += fmt::format(", rank {}", gpu.rank);
  return where;
}

// The GPU of `host` with this bus id or index, added on first sight.
GpuSeries& SeriesOf(const std::string& path, const std::string& host, const std::string& bus_id,
                    int32_t index, std::map<std::tuple<std::string, int32_t>, size_t>* series_of,
                    MonitorSnapshots* snapshots) {
  auto [it, added] = series_of->try_emplace({bus_id, index}, snapshots->gpus.size());
  if (added) {
    GpuSeries& gpu = snapshots->gpus.emplace_back();
    gpu.path = path;
    gpu.host = host;
    gpu.index = index;
    gpu.bus_id = bus_id;
  }
  return snapshots->gpus[it->second];
}

size_t Indent(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// "Tue Aug 15 16:00:35 2017" (nvidia-smi -q's Timestamp), the host's wall clock read as UTC.
std::optional<int64_t> CTimeStamp(std::string_view text) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char weekday[4] = {0}, month[4] = {0};
  int d, h, mi, s, y;
  std::string copy(text.substr(0, 64));
  if (std::sscanf(copy.c_str(), "%3s %3s %d %d:%d:%d %d", weekday, month, &d, &h, &mi, &s, &y) !=
      7) {
    return std::nullopt;
  }
  int mo = 0;
  for (int i = 0; i < 12; ++i) {
    if (kMonths[i] == month) mo = i + 1;
  }
  if (mo == 0 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60 ||
      y < 1970 || y > 2200) {
    return std::nullopt;
  }
  return (DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) * 1'000'000'000;
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
                               const std::string& host, MonitorSnapshots* monitor) {
  std::vector<Column> columns;
  bool any_header = false;
  std::map<std::tuple<std::string, int32_t>, size_t> series_of;  // (bus id, index) -> gpus index
  int64_t line_number = 0;
  for (std::string_view line : Lines(text)) {
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
          // Checked before the cast: converting a double out of int32's range is undefined.
          if (value < 0 || value > 1024) {
            bad = true;
          } else {
            index = static_cast<int32_t>(value);
          }
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
    SeriesOf(path, host, bus_id, index, &series_of, monitor).samples.push_back(sample);
  }
  if (!any_header) {
    return absl::InvalidArgumentError(
        fmt::format("{}: no nvidia-smi --query-gpu header (line 1 names no GPU field)", path));
  }
  monitor->files.push_back(path);
  return absl::OkStatus();
}

bool LooksLikeNvidiaSmiQuery(std::string_view head) {
  return head.find("==NVSMI LOG==") != std::string_view::npos ||
         (head.find("Attached GPUs") != std::string_view::npos &&
          head.find("\nGPU ") != std::string_view::npos);
}

bool LooksLikeDcgmiDmon(std::string_view head) {
  for (std::string_view line : Lines(head.substr(0, 2048))) {
    std::string_view t = Trim(line);
    if (t.starts_with("#Entity") || t.starts_with("# Entity")) return true;
  }
  return false;
}

absl::Status ParseNvidiaSmiQuery(const std::string& path, std::string_view text,
                                 const std::string& host, MonitorSnapshots* monitor) {
  std::map<std::tuple<std::string, int32_t>, size_t> series_of;
  int64_t snapshot_ns = -1;  // the Timestamp line of the report being read
  int32_t gpus_in_snapshot = 0;
  GpuSeries* gpu = nullptr;  // the GPU whose section is being read
  GpuSample* sample = nullptr;
  std::string_view section;  // "FB Memory Usage", "Utilization", "GPU Power Readings", ...
  bool any_gpu = false;
  int64_t line_number = 0;
  for (std::string_view raw : Lines(text)) {
    ++line_number;
    ++monitor->lines;
    std::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;
    size_t indent = Indent(line);
    std::string_view body = Trim(line);
    size_t colon = body.find(" : ");
    std::string_view key = Trim(body.substr(0, colon));
    std::string_view value = colon == std::string_view::npos ? "" : Trim(body.substr(colon + 3));
    if (indent == 0) {
      section = {};
      gpu = nullptr;
      sample = nullptr;
      if (body.starts_with("==") && body.find("NVSMI LOG") != std::string_view::npos) {
        snapshot_ns = -1;  // a new report (nvidia-smi -q -l N repeats them)
        gpus_in_snapshot = 0;
      } else if (key == "Timestamp") {
        snapshot_ns = CTimeStamp(value).value_or(-1);
      } else if (body.starts_with("GPU ") && colon == std::string_view::npos) {
        // "GPU 00000000:3B:00.0": the GPUs follow in index order.
        std::string bus_id(Trim(body.substr(4)).substr(0, 32));
        gpu = &SeriesOf(path, host, bus_id, gpus_in_snapshot++, &series_of, monitor);
        sample = &gpu->samples.emplace_back();
        sample->line = line_number;
        sample->time_ns = snapshot_ns;
        any_gpu = true;
      }
      continue;
    }
    if (gpu == nullptr) continue;
    if (colon == std::string_view::npos) {
      if (indent == 4) section = body;  // a section title
      continue;
    }
    if (indent == 4) section = {};
    if (section == "FB Memory Usage") {
      if (key == "Used") sample->memory_used_mib = Number(value);
      if (key == "Total") sample->memory_total_mib = Number(value);
    } else if (section == "Utilization") {
      if (key == "Gpu") sample->utilization_pct = std::min(Number(value), 100.0);
    } else if (section == "Power Readings" || section == "GPU Power Readings") {
      // "Power Draw" until driver 535, then "Instantaneous Power Draw" and "Average Power Draw".
      if (key == "Power Draw" || key == "Instantaneous Power Draw" ||
          (key == "Average Power Draw" && sample->power_w < 0)) {
        sample->power_w = Number(value);
      }
    }
  }
  if (!any_gpu) {
    return absl::InvalidArgumentError(
        fmt::format("{}: no GPU section in an nvidia-smi -q report", path));
  }
  monitor->files.push_back(path);
  return absl::OkStatus();
}

absl::Status ParseDcgmiDmon(const std::string& path, std::string_view text, const std::string& host,
                            MonitorSnapshots* monitor) {
  // "#Entity   GPUTL   FBUSD   POWER" then, per sample and GPU, "GPU 0   98   71234   123.4":
  // DCGM's short field names (203 GPUTL, 252 FBUSD, 250 FBTTL, 155 POWER). No times: the rows'
  // order is the samples' order.
  enum class Field { kUtilization, kMemoryUsed, kMemoryTotal, kPower, kOther };
  std::vector<Field> fields;
  std::map<std::tuple<std::string, int32_t>, size_t> series_of;
  bool any_header = false;
  int64_t line_number = 0;
  for (std::string_view raw : Lines(text)) {
    ++line_number;
    ++monitor->lines;
    std::string_view line = Trim(raw);
    if (line.empty()) continue;
    std::vector<std::string_view> words;
    for (size_t at = 0; at < line.size();) {
      size_t end = line.find_first_of(" \t", at);
      if (end == std::string_view::npos) end = line.size();
      if (end > at) words.push_back(line.substr(at, end - at));
      at = end + 1;
    }
    if (words.front() == "#Entity" ||
        (words.front() == "#" && words.size() > 1 && words[1] == "Entity")) {
      fields.clear();
      for (size_t i = words.front() == "#" ? 2 : 1; i < words.size(); ++i) {
        std::string_view w = words[i];
        fields.push_back(w == "GPUTL"   ? Field::kUtilization
                         : w == "FBUSD" ? Field::kMemoryUsed
                         : w == "FBTTL" ? Field::kMemoryTotal
                         : w == "POWER" ? Field::kPower
                                        : Field::kOther);
      }
      any_header = true;
      continue;
    }
    if (words.front() == "ID" || words.front() == "Id" || words.front().starts_with("#")) continue;
    // Only GPU rows; DCGM also prints switches, links and GPU instances.
    if (words.front() != "GPU" || words.size() != fields.size() + 2) {
      ++monitor->unparsed_lines;
      continue;
    }
    double index = Number(words[1]);
    if (index < 0 || index > 1024) {
      ++monitor->unparsed_lines;
      continue;
    }
    GpuSample sample;
    sample.line = line_number;
    for (size_t i = 0; i < fields.size(); ++i) {
      double value = Number(words[i + 2]);
      switch (fields[i]) {
        case Field::kUtilization:
          sample.utilization_pct = std::min(value, 100.0);
          break;
        case Field::kMemoryUsed:
          sample.memory_used_mib = value;
          break;
        case Field::kMemoryTotal:
          sample.memory_total_mib = value;
          break;
        case Field::kPower:
          sample.power_w = value;
          break;
        case Field::kOther:
          break;
      }
    }
    SeriesOf(path, host, "", static_cast<int32_t>(index), &series_of, monitor)
        .samples.push_back(sample);
  }
  if (!any_header) {
    return absl::InvalidArgumentError(fmt::format("{}: no dcgmi dmon #Entity header", path));
  }
  monitor->files.push_back(path);
  return absl::OkStatus();
}

namespace {

// Ranks and timed marks of the GPUs a finding names, at the sample it names.
void AddGpu(const GpuSeries& gpu, const GpuSample& sample, std::string label,
            std::set<int64_t>* ranks, MonitorFinding* finding) {
  if (gpu.rank >= 0) ranks->insert(gpu.rank);
  if (sample.time_ns >= 0) {
    MonitorMark mark;
    mark.host = gpu.host;
    mark.rank = gpu.rank;
    mark.host_ns = sample.time_ns;
    mark.label = std::move(label);
    finding->marks.push_back(std::move(mark));
  }
}

std::string GpuLabel(const GpuSeries& gpu) {
  return gpu.index >= 0 ? fmt::format("GPU {}", gpu.index) : "GPU " + gpu.bus_id;
}

}  // namespace

std::vector<MonitorFinding> FindGpuAnomalies(const MonitorSnapshots& monitor) {
  std::vector<MonitorFinding> findings;
  // 1. Per host: every GPU spinning at idle power for its last samples.
  std::map<std::string, std::vector<const GpuSeries*>> by_host;
  for (const GpuSeries& gpu : monitor.gpus) {
    if (!gpu.samples.empty()) by_host[gpu.host].push_back(&gpu);
  }
  MonitorFinding hang;
  hang.kind = "gpu_hang_signature";
  std::set<int64_t> ranks;
  size_t spinning_gpus = 0;
  for (const auto& [host, gpus] : by_host) {
    if (!std::all_of(gpus.begin(), gpus.end(),
                     [](const GpuSeries* g) { return SpinsAtIdlePower(*g); })) {
      continue;
    }
    hang.hosts.push_back(host);
    spinning_gpus += gpus.size();
    for (const GpuSeries* gpu : gpus) {
      hang.evidence.push_back(Describe(*gpu, gpu->samples.back()));
      // Marked where the signature begins: the first of the samples that show it.
      AddGpu(*gpu, gpu->samples[gpu->samples.size() - kHangSamples],
             GpuLabel(*gpu) + " spinning at idle power", &ranks, &hang);
    }
  }
  if (!hang.hosts.empty()) {
    hang.summary = fmt::format(
        "{} GPU(s) on {} host(s) were {:.0f}% or more busy at no more than half their peak power "
        "for their last {} samples: kernels spinning in a collective that cannot finish (the "
        "NCCL hang signature), not computing.",
        spinning_gpus, hang.hosts.size(), kBusyPct, kHangSamples);
    hang.ranks.assign(ranks.begin(), ranks.end());
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
    MonitorFinding odd;
    odd.kind = "gpu_idle_while_peers_busy";
    std::set<std::string> hosts;
    std::set<int64_t> idle_ranks;
    for (const GpuSeries* gpu : idle) {
      odd.evidence.push_back(Describe(*gpu, gpu->samples.back()));
      hosts.insert(gpu->host);
      AddGpu(*gpu, gpu->samples.back(),
             fmt::format("{} idle ({:.0f}% busy)", GpuLabel(*gpu),
                         gpu->samples.back().utilization_pct),
             &idle_ranks, &odd);
    }
    odd.hosts.assign(hosts.begin(), hosts.end());
    odd.ranks.assign(idle_ranks.begin(), idle_ranks.end());
    odd.summary = fmt::format(
        "{} GPU(s) idle at the last samples while {} others were busy: their rank(s) ran no "
        "kernel, so they are not in the collective their peers spin in (stuck before it, in data "
        "loading or host code).",
        idle.size(), busy.size());
    if (!odd.ranks.empty()) {
      odd.summary +=
          fmt::format(" The idle GPU(s) belong to rank(s) {}.", fmt::join(odd.ranks, ", "));
    }
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
    MonitorFinding uneven;
    uneven.kind = "gpu_memory_uneven";
    std::set<std::string> hosts;
    std::set<int64_t> uneven_ranks;
    for (const GpuSeries& gpu : monitor.gpus) {
      if (gpu.samples.empty() || gpu.samples.back().memory_used_mib < 0) continue;
      const GpuSample& last = gpu.samples.back();
      double margin = std::max(2048.0, 0.1 * std::max(last.memory_total_mib, 0.0));
      if (std::abs(last.memory_used_mib - median) <= margin) continue;
      uneven.evidence.push_back(Describe(gpu, last) + fmt::format(" (median {:.0f})", median));
      hosts.insert(gpu.host);
      AddGpu(gpu, last,
             fmt::format("{} holds {:.0f} MiB (median {:.0f})", GpuLabel(gpu), last.memory_used_mib,
                         median),
             &uneven_ranks, &uneven);
    }
    if (!uneven.evidence.empty() && uneven.evidence.size() * 4 <= used.size()) {
      uneven.hosts.assign(hosts.begin(), hosts.end());
      uneven.ranks.assign(uneven_ranks.begin(), uneven_ranks.end());
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
