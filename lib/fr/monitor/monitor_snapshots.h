// Monitor snapshots, as the people who watch training jobs collect them beside the job, and what
// they show that the dumps cannot:
//
//   - GPU samples, from `nvidia-smi --query-gpu=timestamp,index,pci.bus_id,utilization.gpu,
//     memory.used,memory.total,power.draw --format=csv -l 5 > gpu.csv`, from `nvidia-smi -q`
//     reports (one or many, `-q -l 5`), and from DCGM's `dcgmi dmon -e 155,203,252,250` output;
//   - process listings, from `ps -eo pid,ppid,stat,etime,args` or `ps -ef` (`ps aux` too, though
//     without parents it can say less).
//
// Findings:
//   - the NCCL hang signature: every GPU of a host busy (a kernel spinning in a collective that
//     cannot finish) while drawing idle power, for the last several samples;
//   - one GPU idle while its peers spin: its rank is not in the collective the others wait in;
//   - GPU memory far from the job's median (a leak, a rank on another code path);
//   - workers outliving their launcher: copies of one Python program whose parent (torchrun, the
//     elastic agent) is gone, so nothing will restart or reap them.
//
//   MonitorSnapshots snapshots;
//   ParseMonitorFile("node03/gpu.csv", text, "node03", &snapshots);  // the format by content
//   AssignGpuRanks(logs, &snapshots);  // ranks from the NCCL init lines' bus ids
//   for (const MonitorFinding& finding : FindMonitorAnomalies(snapshots)) { ... }
//
// Every parser takes lines by the header they follow, skips what it does not know and counts
// lines that do not fit, never failing on one. Times are the host's own clock (nvidia-smi and ps
// print local time), only compared within a host; the timeline corrects them with the host's
// offset from the logs.
#ifndef FR_MONITOR_MONITOR_SNAPSHOTS_H_
#define FR_MONITOR_MONITOR_SNAPSHOTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "fr/logs/log_event.h"

namespace fr {

struct GpuSample {
  int64_t time_ns = -1;         // host-local, as printed; -1 when the source has no time
  double utilization_pct = -1;  // < 0: not recorded
  double memory_used_mib = -1;
  double memory_total_mib = -1;
  double power_w = -1;
  int64_t line = 0;  // 1-based, in its file
};

// One GPU of one host, its samples in file order.
struct GpuSeries {
  std::string path;  // the file it came from
  std::string host;  // "" when neither the path nor the caller names it
  int32_t index = -1;
  std::string bus_id;  // "00000000:18:00.0", as printed
  int64_t rank = -1;   // the rank using it, when the logs tie its bus id to one (AssignGpuRanks)
  std::vector<GpuSample> samples;
};

struct ProcessInfo {
  int64_t pid = -1;
  int64_t ppid = -1;    // -1: the listing has no parent column
  std::string state;    // "S", "Sl", "D", "Z+"; "" when not listed
  std::string command;  // the whole command line, as listed
  int64_t line = 0;
};

// One `ps` listing of one host.
struct ProcessListing {
  std::string path;
  std::string host;
  bool has_parents = false;  // a PPID column: orphans can be told
  std::vector<ProcessInfo> processes;
};

struct MonitorSnapshots {
  std::vector<GpuSeries> gpus;  // in the order first seen
  std::vector<ProcessListing> process_listings;
  int64_t lines = 0;
  int64_t unparsed_lines = 0;  // lines that fit no header (counted, never fatal)
  std::vector<std::string> files;
};

enum class MonitorFormat {
  kNone,
  kNvidiaSmiCsv,    // nvidia-smi --query-gpu=... --format=csv[,nounits]
  kNvidiaSmiQuery,  // nvidia-smi -q
  kDcgmiDmon,       // dcgmi dmon
  kProcessListing,  // ps
};

// The format of a file from its first bytes; kNone for anything else (logs, dumps, reports).
MonitorFormat MonitorFormatOf(std::string_view head);

// Adds what one file holds, by its format. InvalidArgument (naming the file) when `text` is
// none of the formats; lines that fit nothing are counted in `unparsed_lines`.
absl::Status ParseMonitorFile(const std::string& path, std::string_view text,
                              const std::string& host, MonitorSnapshots* snapshots);

// The parsers ParseMonitorFile chooses among, and how it tells their formats.
bool LooksLikeNvidiaSmiCsv(std::string_view head);
bool LooksLikeNvidiaSmiQuery(std::string_view head);
bool LooksLikeDcgmiDmon(std::string_view head);
bool LooksLikeProcessListing(std::string_view head);
absl::Status ParseNvidiaSmiCsv(const std::string& path, std::string_view text,
                               const std::string& host, MonitorSnapshots* snapshots);
absl::Status ParseNvidiaSmiQuery(const std::string& path, std::string_view text,
                                 const std::string& host, MonitorSnapshots* snapshots);
absl::Status ParseDcgmiDmon(const std::string& path, std::string_view text, const std::string& host,
                            MonitorSnapshots* snapshots);
absl::Status ParseProcessListing(const std::string& path, std::string_view text,
                                 const std::string& host, MonitorSnapshots* snapshots);

// Gives each GPU the rank whose NCCL init line (after the clock stage has named its host) names
// the GPU's PCI bus id on the GPU's host.
void AssignGpuRanks(const LogSet& logs, MonitorSnapshots* snapshots);

// A moment a finding points at, for the timeline: on `host`'s clock, ns since the epoch.
struct MonitorMark {
  std::string host;
  int64_t rank = -1;  // -1: the host as a whole
  int64_t host_ns = -1;
  std::string label;  // "GPU 2 idle (9% busy)"
};

struct MonitorFinding {
  // "gpu_hang_signature" | "gpu_idle_while_peers_busy" | "gpu_memory_uneven" |
  // "launcher_gone_workers_alive"
  std::string kind;
  std::string summary;
  std::vector<std::string> evidence;  // "node03 GPU 2 (00000000:3B:00.0) at gpu.csv:41: ..."
  std::vector<std::string> hosts;     // ascending
  std::vector<int32_t> ranks;         // ascending; those the GPUs' bus ids tie to ranks
  std::vector<MonitorMark> marks;     // timed moments only
};

// What the snapshots show at their last samples, in the order of the kinds above.
std::vector<MonitorFinding> FindMonitorAnomalies(const MonitorSnapshots& snapshots);

// The parts FindMonitorAnomalies joins.
std::vector<MonitorFinding> FindGpuAnomalies(const MonitorSnapshots& snapshots);
std::vector<MonitorFinding> FindProcessAnomalies(const MonitorSnapshots& snapshots);

}  // namespace fr

#endif  // FR_MONITOR_MONITOR_SNAPSHOTS_H_
