// Which monitor a file is, and the findings of all of them together.
#include "fr/monitor/monitor_snapshots.h"

#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/logs/log_parser.h"

namespace fr {

MonitorFormat MonitorFormatOf(std::string_view head) {
  // The -q report first: its free text can hold commas that look like a CSV header's.
  if (LooksLikeNvidiaSmiQuery(head)) return MonitorFormat::kNvidiaSmiQuery;
  if (LooksLikeNvidiaSmiCsv(head)) return MonitorFormat::kNvidiaSmiCsv;
  if (LooksLikeDcgmiDmon(head)) return MonitorFormat::kDcgmiDmon;
  if (LooksLikeProcessListing(head)) return MonitorFormat::kProcessListing;
  return MonitorFormat::kNone;
}

absl::Status ParseMonitorFile(const std::string& path, std::string_view text,
                              const std::string& host, MonitorSnapshots* snapshots) {
  switch (MonitorFormatOf(text.substr(0, 4096))) {
    case MonitorFormat::kNvidiaSmiCsv:
      return ParseNvidiaSmiCsv(path, text, host, snapshots);
    case MonitorFormat::kNvidiaSmiQuery:
      return ParseNvidiaSmiQuery(path, text, host, snapshots);
    case MonitorFormat::kDcgmiDmon:
      return ParseDcgmiDmon(path, text, host, snapshots);
    case MonitorFormat::kProcessListing:
      return ParseProcessListing(path, text, host, snapshots);
    case MonitorFormat::kNone:
      break;
  }
  return absl::InvalidArgumentError(fmt::format(
      "{}: not a monitor snapshot (nvidia-smi CSV or -q, dcgmi dmon, or ps listing)", path));
}

void AssignGpuRanks(const LogSet& logs, MonitorSnapshots* snapshots) {
  // NCCL's init line ties a rank to its GPU's PCI bus id on its host; a bus id seen with two
  // ranks on one host (two jobs in one log directory) names neither.
  std::map<std::pair<std::string, std::string>, int32_t> rank_of;
  for (const LogEvent& event : logs.events) {
    if (event.kind != LogEventKind::kNcclInit || event.rank < 0 || event.bus_id.empty()) continue;
    auto [it, added] = rank_of.try_emplace({event.host, event.bus_id}, event.rank);
    if (!added && it->second != event.rank) it->second = -1;
  }
  for (GpuSeries& gpu : snapshots->gpus) {
    std::string bus = NormalizeBusId(gpu.bus_id);
    if (bus.empty()) continue;
    auto it = rank_of.find({gpu.host, bus});
    if (it != rank_of.end()) gpu.rank = it->second;
  }
}

std::vector<MonitorFinding> FindMonitorAnomalies(const MonitorSnapshots& snapshots) {
  std::vector<MonitorFinding> findings = FindGpuAnomalies(snapshots);
  for (MonitorFinding& finding : FindProcessAnomalies(snapshots)) {
    findings.push_back(std::move(finding));
  }
  return findings;
}

}  // namespace fr
