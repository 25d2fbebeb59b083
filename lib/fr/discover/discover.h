// Finding the dumps of one job in a directory tree and the global rank of each.
//
//   FR_ASSIGN_OR_RETURN(Discovery found, DiscoverDumps("/checkpoints/job42/fr", {}));
//   for (const DiscoveredFile& file : found.files) { ... file.rank ... }
//   // found.skipped and found.conflicts say what was left out, and why.
//
// Real directories are messy (shared design, dump-format.md section 1): a common prefix
// (nccl_trace_rank_12), host names inside names (nccl_trace_rank_node02_12), per-host
// subfolders, rank_12.json from Ray, compressed copies (.zst, .gz), and files that are not dumps
// (.pipe triggers, logs, core files). Discovery only looks at names and file types, plus at most
// one 4-byte read for a file whose name alone does not decide; it never parses a dump. A file
// that is named like a dump but is empty or corrupt IS returned: the loader rejects it with an
// error the user sees, instead of it silently vanishing here.
//
// How a name becomes a rank (default: no prefix, no pattern):
//   1. Format and compression extensions are removed from the end, case-insensitively, as many
//      as there are: .zst .zstd .gz .json .pkl .pickle ("rank_3.json.zst" -> "rank_3").
//   2. Not dumps: hidden names (".x"), ".pipe" triggers, logs (.log .txt .out .err .stdout
//      .stderr, also rotated "x.log.1" and compressed "x.log.gz"), core files ("core",
//      "core.<anything>").
//   3. The rank is the run of digits that ENDS the remaining name, so it is the last run of
//      digits ("nccl_trace_rank_container-node02_5" -> 5). A name with anything else after its
//      last digits ("rank_3.pt", "rank_3.bak") is skipped: an unknown extension means another
//      tool's file, and taking its digits would invent conflicts with the real dump. So is a
//      name whose final digits belong to a short extension ("trace.bz2", "x.h5").
//   4. Names that start with a known dump prefix (nccl_trace_rank_, comm_lib_trace_rank_,
//      rank_) or carry a dump extension are decided by the name. Any other name ("worker_3",
//      "python3.10") is confirmed by its first 4 bytes: ELF (core file, executable) or bytes
//      that start no pickle, JSON, zstd or gzip stream are skipped; an empty file is kept.
// Only regular files (or symlinks to them) are dumps. Symlinks to directories are not followed
// and hidden directories (.git, .ipynb_checkpoints) are not entered; both are listed in
// `skipped`. A directory reached twice (bind mounts) is walked once.
#ifndef FR_DISCOVER_DISCOVER_H_
#define FR_DISCOVER_DISCOVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fr {

struct DiscoverOptions {
  // Only files whose name is `prefix`, then the rank digits, then optional format and
  // compression extensions (.zst .zstd .gz .json .pkl .pickle) are dumps; nothing else may follow
  // the digits. A directory part is ignored, so the value of TORCH_NCCL_DEBUG_INFO_TEMP_FILE
  // ("/tmp/nccl_trace_rank_") works as is. Empty: the default rules above.
  std::string prefix;
  // An ECMAScript regular expression with exactly one capture group, the rank (decimal digits).
  // It must match the WHOLE path relative to the root ("host3/trace_7", '/' separators) or, when
  // it does not, the whole file name ("trace_7"); std::regex_match, not search, so a pattern
  // never half-matches a longer name. Overrides `prefix` and the name rules: among regular files,
  // the pattern alone decides. Empty: not used.
  std::string rank_pattern;
  // Larger numbers in names are not ranks (dates, pids, timestamps): such files are skipped.
  int64_t max_rank = 999'999;
};

struct DiscoveredFile {
  std::string path;  // as found under the root (root joined with the relative path)
  int64_t rank = -1;
  uint64_t size = 0;  // bytes on disk; 0 for an empty file (the loader rejects it)
};

struct SkippedFile {
  std::string path;
  std::string reason;  // "trigger pipe", "log file", "no rank in the name", ...
};

// Two or more files claim the same rank: none of them is used, and the rank is reported. Paths
// that are the same file (a symlink or hard link to it) are not a conflict: the first path in
// byte order is used, the others are skipped as "same file as P".
struct RankConflict {
  int64_t rank = -1;
  std::vector<std::string> paths;  // sorted
};

struct Discovery {
  std::vector<DiscoveredFile> files;    // ascending rank
  std::vector<SkippedFile> skipped;     // ascending path
  std::vector<RankConflict> conflicts;  // ascending rank
};

// Walks `root` recursively (a single file is accepted too and judged by the same rules; its
// relative path is its name). The result does not depend on directory order. Errors: NotFound
// when `root` does not exist, PermissionDenied when the root directory cannot be read,
// InvalidArgument when `root` is neither a directory nor a regular file, or for a bad
// `rank_pattern` (not a regex, or not exactly one capture group), naming the pattern.
// Unreadable subfolders are reported in `skipped` and the walk goes on.
absl::StatusOr<Discovery> DiscoverDumps(const std::string& root, const DiscoverOptions& options);

}  // namespace fr

#endif  // FR_DISCOVER_DISCOVER_H_
