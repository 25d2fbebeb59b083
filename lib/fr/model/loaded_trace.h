// What the analysis reads: the dumps of one job as loaded (lib/fr/load builds it from files or
// bytes; tests and other callers may build one themselves), with every file that could not be
// used and why. The analysis stages (index, match, waitfor, verdict, report, timeline, html)
// take this type and nothing from the loader, so they neither read files nor depend on how the
// dumps were found.
//
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, LoadTrace("/checkpoints/job42/fr"));  // load.h
//   JobIndex index = BuildJobIndex(trace);                                      // index stage
#ifndef FR_MODEL_LOADED_TRACE_H_
#define FR_MODEL_LOADED_TRACE_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fr/model/rank_dump.h"

namespace fr {

// Why a file was set aside, as a kind that decides whether it may be opened as other evidence
// (a log, a monitor or debug-server snapshot); `SkippedFile::reason` words it for people.
enum class SetAsideKind : uint8_t {
  kNotADump,     // a regular file of the input that is no dump, by its name or its content
  kLogByName,    // ... named like a log ("train.log", "slurm-123.out")
  kDumpNotUsed,  // a dump, or a damaged one, not used: its rank is read from another file, or it
                 // belongs to another job
  kHidden,       // a hidden file or directory: never opened
  kLink,         // a symlink not followed (out of the input, to a directory, broken)
  kSpecial,      // a FIFO (the recorder's trigger pipe), socket or device, or a file named as the
                 // trigger pipe: opening could block or fire the trigger
  kCore,         // a core file: large, and may hold the process's secrets
  kSameFile,     // another path to a file or directory already listed
  kUnreadable,   // could not be listed or stat'ed
};

// Only a regular file of the input that is no dump may be opened as other evidence.
inline bool MayReadAsOtherEvidence(SetAsideKind kind) {
  return kind == SetAsideKind::kNotADump || kind == SetAsideKind::kLogByName;
}

struct SkippedFile {
  std::string path;
  std::string reason;  // "trigger pipe", "log file", "no rank in the name", ...
  // For a dump that was read and set aside (another file of its rank was preferred, or its rank
  // is not one of the job's): the rank its name claims. -1 for files that are not dumps.
  int64_t rank = -1;
  SetAsideKind kind = SetAsideKind::kNotADump;
};

// A job whose dumps lie beside the analysed one's: the folders that hold them, how many ranks,
// and its newest record (ns since the epoch; kUnknown when none is timed).
struct OtherJob {
  std::vector<std::string> folders;  // ascending
  int64_t ranks = 0;
  int64_t newest_ns = -1;
};

// Two or more distinct files claim the same rank. Discovery returns every one of them in `files`
// and lists the rank here; the loader decides by content which one is the rank's dump. Paths
// that are the same file (a symlink or hard link to it) are not a conflict: the first path in
// byte order is used, the others are skipped as "same file as P".
struct RankConflict {
  int64_t rank = -1;
  std::vector<std::string> paths;  // sorted
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

inline constexpr size_t kMaxClaimedRanksListed = 1000;

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
  // included. A name alone never adds ranks here: see SettleWorld in lib/fr/load/settle_ranks.cc.
  std::vector<int64_t> missing_ranks;
  // Ranks that one dump's process groups list while the other dumps' groups do not, above every
  // rank with a file: a claim (a damaged or forged pg_config, a dump of another job), not ranks
  // of the job, so neither missing nor expected. Ascending, at most kMaxClaimedRanksListed of
  // them; claimed_ranks_count counts them all.
  std::vector<int64_t> claimed_ranks;
  int64_t claimed_ranks_count = 0;
  // Other jobs whose dumps were found beside this one's (a previous run, a second job in a
  // subfolder): never mixed with it rank by rank, their files set aside (see SeparateJobs in
  // lib/fr/load/separate_jobs.cc). Newest first.
  std::vector<OtherJob> other_jobs;
  std::vector<std::string> versions;  // distinct dump versions, ascending
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_decoded = 0;  // after decompression
  LoadTimings timings;
};

// The job's world size as far as its files tell: one past the highest rank loaded, damaged, in
// conflict or missing, and of `more_ranks` (ranks other evidence says the job had: the logs'
// deaths, members the groups' strides imply). 0 when no rank is known.
inline int64_t JobWorldSize(const LoadedTrace& trace, const std::vector<int64_t>& more_ranks = {}) {
  int64_t highest = -1;
  for (const RankDump& dump : trace.ranks) highest = std::max(highest, dump.rank);
  for (const RejectedFile& file : trace.rejected) highest = std::max(highest, file.rank);
  for (const RankConflict& conflict : trace.conflicts) highest = std::max(highest, conflict.rank);
  for (int64_t rank : trace.missing_ranks) highest = std::max(highest, rank);
  for (int64_t rank : more_ranks) highest = std::max(highest, rank);
  return highest + 1;
}

// Every file of the input an output must never replace: the dumps read (loaded, damaged, or set
// aside as another file's rank or another job's), files named as logs, and core files. Outputs
// of an earlier run (a report.json beside the dumps) are not among them, so a run can be
// repeated with the same -o.
inline std::vector<std::string> EvidencePaths(const LoadedTrace& trace) {
  std::vector<std::string> paths;
  for (const RankDump& dump : trace.ranks) paths.push_back(dump.path);
  for (const RejectedFile& file : trace.rejected) paths.push_back(file.path);
  for (const SkippedFile& file : trace.skipped) {
    if (file.rank >= 0 || file.kind == SetAsideKind::kLogByName ||
        file.kind == SetAsideKind::kCore) {
      paths.push_back(file.path);
    }
  }
  return paths;
}

}  // namespace fr

#endif  // FR_MODEL_LOADED_TRACE_H_
