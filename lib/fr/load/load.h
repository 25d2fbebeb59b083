// Loading a job's dumps: discover files, then read, decode and normalize each one in parallel.
// One bad file among thousands is reported as rejected and the rest are loaded.
//
//   LoadOptions options;
//   options.jobs = 8;
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, LoadTrace("/checkpoints/job42/fr", options));
//   for (const RankDump& dump : trace.ranks) { ... }
//   for (const RejectedFile& bad : trace.rejected) { ... bad.path, bad.error ... }
#ifndef FR_LOAD_LOAD_H_
#define FR_LOAD_LOAD_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fr/base/buffer.h"
#include "fr/discover/discover.h"
#include "fr/model/rank_dump.h"
#include "fr/read/input_file.h"

namespace fr {

struct LoadOptions {
  // Which files are dumps and how ranks are named.
  DiscoverOptions discover;
  // Decompression limits.
  ReadOptions read;
  // Worker threads for reading and decoding; 0 means one per hardware thread.
  int jobs = 0;
  // Called from worker threads after each file with (files done, files total); may be empty.
  std::function<void(size_t, size_t)> progress;
  // Set to true from any thread to stop early; LoadTrace then returns Cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

struct RejectedFile {
  std::string path;
  int64_t rank = kUnknown;
  std::string error;  // names the file, the byte offset or key, and what was expected
};

// Time spent per stage, summed over worker threads.
struct LoadTimings {
  int64_t discover_ns = 0;
  int64_t read_ns = 0;  // mapping and decompression
  int64_t decode_ns = 0;
  int64_t normalize_ns = 0;
  int64_t wall_ns = 0;
};

struct LoadedTrace {
  LoadedTrace() = default;
  LoadedTrace(LoadedTrace&&) = default;
  LoadedTrace& operator=(LoadedTrace&&) = default;
  // RankDumps are move-only; say so here so that generic code (pybind11) sees it too.
  LoadedTrace(const LoadedTrace&) = delete;
  LoadedTrace& operator=(const LoadedTrace&) = delete;

  std::vector<RankDump> ranks;          // ascending rank
  std::vector<RejectedFile> rejected;   // ascending rank
  std::vector<SkippedFile> skipped;     // files that are not dumps
  std::vector<RankConflict> conflicts;  // ranks with several files: none of them loaded
  // Ranks that some loaded dump names as a process-group member (or that lie below the highest
  // rank found) but for which no file was found. Rejected and conflicting ranks are not included.
  std::vector<int64_t> missing_ranks;
  std::vector<std::string> versions;  // distinct dump versions, ascending
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_decoded = 0;  // after decompression
  LoadTimings timings;
};

// Reads, decodes and normalizes one file. Errors name the path.
absl::StatusOr<RankDump> LoadDumpFile(const std::string& path, int64_t rank,
                                      const ReadOptions& options = {});

// The same for bytes in memory; `name` stands for the path in messages.
absl::StatusOr<RankDump> LoadDumpBytes(std::shared_ptr<const Buffer> bytes, int64_t rank,
                                       const std::string& name, const ReadOptions& options = {});

// Loads every dump under `root` (a directory or one file). Errors only when nothing can be
// attempted: `root` missing, a bad rank pattern, or cancellation. A directory with no dump at all
// gives an empty trace; callers decide whether that is an error.
absl::StatusOr<LoadedTrace> LoadTrace(const std::string& root, const LoadOptions& options = {});

// Loads in-memory dumps keyed by global rank (dumps fetched over HTTP).
absl::StatusOr<LoadedTrace> LoadTraceFromBytes(
    const std::map<int64_t, std::shared_ptr<const Buffer>>& dumps, const LoadOptions& options = {});

}  // namespace fr

#endif  // FR_LOAD_LOAD_H_
