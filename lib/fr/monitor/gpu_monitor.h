// GPU monitor logs, as people who watch training jobs collect them beside the job:
// `nvidia-smi --query-gpu=timestamp,index,pci.bus_id,utilization.gpu,memory.used,memory.total,
// power.draw --format=csv -l 5 > gpu.csv` on every host. From them, what the dumps cannot show:
//
//   - the NCCL hang signature: every GPU of a host busy (a kernel spinning in a collective that
//     cannot finish) while drawing idle power, for the last several samples;
//   - one GPU idle while its peers spin: its rank is not in the collective the others wait in;
//   - GPU memory far from the job's median (a leak, a rank on another code path).
//
//   GpuMonitor monitor;
//   FR_RETURN_IF_ERROR(ParseNvidiaSmiCsv("node03/gpu.csv", text, "node03", &monitor));
//   for (const GpuFinding& finding : FindGpuAnomalies(monitor)) { ... finding.summary ... }
//
// Lines are parsed by the header they follow (columns in any order, any subset; `csv` or
// `csv,nounits`; a repeated header starts a new table); a line that does not fit its header is
// counted, never fatal. Times are the host's own clock (nvidia-smi prints local time), only
// compared within a host.
#ifndef FR_MONITOR_GPU_MONITOR_H_
#define FR_MONITOR_GPU_MONITOR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace fr {

struct GpuSample {
  int64_t time_ns = -1;         // host-local, as printed; -1 when the table has no timestamp
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
  std::vector<GpuSample> samples;
};

struct GpuMonitor {
  std::vector<GpuSeries> gpus;  // in the order first seen
  int64_t lines = 0;
  int64_t unparsed_lines = 0;  // lines that fit no header (counted, never fatal)
  std::vector<std::string> files;
};

// True when `head` (the first bytes of a file) is an nvidia-smi `--query-gpu ... --format=csv`
// table: a header naming at least one GPU field nvidia-smi prints.
bool LooksLikeNvidiaSmiCsv(std::string_view head);

// Adds the GPUs of one nvidia-smi CSV log. InvalidArgument (naming the file and line) only when
// no line at all is a header; bad rows are counted in `unparsed_lines`.
absl::Status ParseNvidiaSmiCsv(const std::string& path, std::string_view text,
                               const std::string& host, GpuMonitor* monitor);

struct GpuFinding {
  // "gpu_hang_signature" | "gpu_idle_while_peers_busy" | "gpu_memory_uneven"
  std::string kind;
  std::string summary;
  std::vector<std::string> evidence;  // "node03 GPU 2 (00000000:3B:00.0) at gpu.csv:41: ..."
  std::vector<std::string> hosts;     // ascending
};

// What the monitors show at their last samples, in the order of the kinds above.
std::vector<GpuFinding> FindGpuAnomalies(const GpuMonitor& monitor);

}  // namespace fr

#endif  // FR_MONITOR_GPU_MONITOR_H_
