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
#include "fr/load/early_reads.h"
#include "fr/model/loaded_trace.h"
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
  // Files of the folder already read while it was written (early_reads.h): LoadTrace uses
  // their results instead of reading them again. May be null.
  EarlyReads* early = nullptr;
};

// Reads, decodes and normalizes one file. Errors name the path.
absl::StatusOr<RankDump> LoadDumpFile(const std::string& path, int64_t rank,
                                      const ReadOptions& options = {});

// Loads every dump under `root` (a directory or one file). Errors only when nothing can be
// attempted: `root` missing, a bad rank pattern, or cancellation. A directory with no dump at all
// gives an empty trace; callers decide whether that is an error.
absl::StatusOr<LoadedTrace> LoadTrace(const std::string& root, const LoadOptions& options = {});

// Spreading the reading over a cluster (python/fr_analyze/dask.py): discovery where the
// analysis runs, each file summarized where it lives (lib/fr/summary: the normalized dump as
// bytes), the trace assembled from the summaries exactly as LoadTrace assembles it from the
// files, so the report is the same.
//
//   FR_ASSIGN_OR_RETURN(Discovery discovery, DiscoverDumps(root, options.discover));
//   std::vector<std::string> summaries;
//   for (const SummaryTask& task : PlanSummaries(discovery))
//     summaries.push_back(SummarizeDumpFile(task));             // on any worker
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, AssembleTrace(root, discovery, summaries));
struct SummaryTask {
  DiscoveredFile file;
  bool hash_content = false;  // its rank is claimed by other files too
};
std::vector<SummaryTask> PlanSummaries(const Discovery& discovery);
// Never fails: a file that cannot be used is summarized as its error.
std::string SummarizeDumpFile(const SummaryTask& task, const ReadOptions& options = {});
// `summaries[i]` is the summary of `discovery.files[i]`. A summary that cannot be read, or is of
// another file, is that file's error (rejected), never a crash. Summaries are read back on `jobs`
// threads (0: one per core).
absl::StatusOr<LoadedTrace> AssembleTrace(const std::string& root, Discovery discovery,
                                          const std::vector<std::string>& summaries, int jobs = 0);

// Loads in-memory dumps keyed by global rank (dumps fetched over HTTP).
absl::StatusOr<LoadedTrace> LoadTraceFromBytes(
    const std::map<int64_t, std::shared_ptr<const Buffer>>& dumps, const LoadOptions& options = {});

}  // namespace fr

#endif  // FR_LOAD_LOAD_H_
