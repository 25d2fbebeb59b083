// Writes a simulated job's dumps to disk the way real jobs leave them: pickle or JSON, optionally
// compressed (.zst / .gz, as users do when copying dumps off node-local disks), under any of the
// file-naming schemes seen in the wild. Crashed ranks get no file.
//
//   FR_ASSIGN_OR_RETURN(SimulatedJob job, SimulateJob(options));
//   JobWriteOptions write;
//   write.naming = DumpNaming::kHostSubdirectory;  // node03/nccl_trace_rank_27
//   write.compression = DumpCompression::kZstd;    // ... .zst
//   FR_ASSIGN_OR_RETURN(JobWriteStats stats, WriteSimulatedJob(job, "/tmp/job", write));
#ifndef FR_SIMULATE_JOB_WRITER_H_
#define FR_SIMULATE_JOB_WRITER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fr/simulate/job_simulator.h"

namespace fr {

enum class DumpEncoding { kPickle, kJson };
enum class DumpCompression { kNone, kZstd, kGzip };

enum class DumpNaming {
  kPrefix,            // <prefix><rank>                    nccl_trace_rank_5
  kHostInName,        // <prefix><host>_<rank>             nccl_trace_rank_node00_5
  kHostSubdirectory,  // <host>/<prefix><rank>             node00/nccl_trace_rank_5
  kRankJson,          // rank_<rank>.json (.pkl for pickle) as Ray and other tools write them
};

struct JobWriteOptions {
  DumpEncoding encoding = DumpEncoding::kPickle;
  DumpCompression compression = DumpCompression::kNone;
  DumpNaming naming = DumpNaming::kPrefix;
  // TORCH_NCCL_DEBUG_INFO_TEMP_FILE's basename.
  std::string prefix = "nccl_trace_rank_";
  // Dump version to write ("2.10", "1.4", "" for the 2023 bare list); nullopt keeps the
  // simulation's (JobSimulatorOptions::version).
  std::optional<std::string> version;
  int zstd_level = 3;
  int gzip_level = 6;
  // Set each file's modification time to the dump time (GroundTruth::dump_time_ns on the rank's
  // host clock), as if the rank had written it then; false leaves the time of writing.
  bool set_mtime_to_dump_time = true;
  // Ranks serialised in parallel; 0: the machine's hardware threads.
  int threads = 0;
};

struct JobWriteStats {
  int64_t files = 0;
  uint64_t bytes_written = 0;  // on disk, after compression
  uint64_t bytes_encoded = 0;  // before compression
};

// The path of `rank`'s dump relative to the job's directory under `options`.
std::string DumpFileName(const SimulatedJob& job, int64_t rank, const JobWriteOptions& options);

// Writes every rank's dump (except crashed ranks) under `directory`, creating it and any host
// subdirectories. Errors: InvalidArgument when a directory cannot be created, Unavailable when a
// file cannot be written, Internal when compression fails.
absl::StatusOr<JobWriteStats> WriteSimulatedJob(const SimulatedJob& job,
                                                const std::string& directory,
                                                const JobWriteOptions& options = {});

// Compresses `bytes` as one zstd frame / one gzip member.
absl::StatusOr<std::string> CompressZstd(std::string_view bytes, int level);
absl::StatusOr<std::string> CompressGzip(std::string_view bytes, int level);

}  // namespace fr

#endif  // FR_SIMULATE_JOB_WRITER_H_
