// Loading a job's dumps: discover files, then read, decode and normalize each one in parallel.
// One bad file among thousands is reported as rejected and the rest are loaded. Files are judged
// by content: a file that is no dump at all (another kind of file, an fr-analyze report) is
// skipped, not rejected, and says nothing about which ranks exist; of several files for one rank,
// identical ones are one dump and otherwise the newest by its own records is used.
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

  std::vector<RankDump> ranks;         // ascending rank
  std::vector<RejectedFile> rejected;  // damaged dumps of the job's ranks, ascending rank
  // Files not used, ascending path: files that are not dumps (rank -1), and dumps set aside with
  // the rank their name claims and why: a copy or an older dump of a rank read from another file,
  // a dump whose own process groups do not list its rank, a rank far beyond all others.
  std::vector<SkippedFile> skipped;
  // Ranks with several files of which none could be used. LoadTrace settles every such conflict
  // by content (what it set aside is in `skipped`), so it leaves this empty; it stays for callers
  // that build a LoadedTrace themselves.
  std::vector<RankConflict> conflicts;
  // Ranks the readable dumps say the job has (members of the groups their pg_config lists, and
  // every rank up to the highest loaded one) that have no usable file. Rejected ranks are not
  // included. A name alone never adds ranks here: see SettleWorld in load.cc.
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
