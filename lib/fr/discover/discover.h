// Finding the dumps of one job in a directory tree and the global rank of each.
//
//   FR_ASSIGN_OR_RETURN(Discovery found, DiscoverDumps("/checkpoints/job42/fr", {}));
//   for (const DiscoveredFile& file : found.files) { ... file.rank ... }
//
// Real directories are messy (shared design, dump-format.md section 1): a common prefix
// (nccl_trace_rank_12), host names inside names (nccl_trace_rank_node02_12), per-host
// subfolders, rank_12.json from Ray, compressed copies (.zst, .gz), and files that are not dumps
// (.pipe triggers, logs, core files). The rank is the last run of digits in the file name once
// compression and format extensions are removed, unless the caller gives a prefix or a pattern.
#ifndef FR_DISCOVER_DISCOVER_H_
#define FR_DISCOVER_DISCOVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fr {

struct DiscoverOptions {
  // Only files whose name starts with `prefix`, followed by the rank (and optional extensions),
  // are dumps. Empty: any name with a rank in it.
  std::string prefix;
  // An ECMAScript regular expression with one capture group, the rank, matched against the path
  // relative to the root ("host3/trace_7"). Overrides `prefix`. Empty: not used.
  std::string rank_pattern;
};

struct DiscoveredFile {
  std::string path;  // as found under the root (root joined with the relative path)
  int64_t rank = -1;
  uint64_t size = 0;
};

struct SkippedFile {
  std::string path;
  std::string reason;  // "trigger pipe", "log file", "no rank in the name", ...
};

// Two or more files claim the same rank: none of them is used, and the rank is reported.
struct RankConflict {
  int64_t rank = -1;
  std::vector<std::string> paths;  // sorted
};

struct Discovery {
  std::vector<DiscoveredFile> files;   // ascending rank
  std::vector<SkippedFile> skipped;    // ascending path
  std::vector<RankConflict> conflicts; // ascending rank
};

// Walks `root` recursively (a single file is accepted too). Errors: NotFound when `root` does not
// exist, InvalidArgument for a bad `rank_pattern`. Unreadable subfolders are reported as skipped.
absl::StatusOr<Discovery> DiscoverDumps(const std::string& root, const DiscoverOptions& options);

}  // namespace fr

#endif  // FR_DISCOVER_DISCOVER_H_
