// Finding the dumps of one job in a directory tree and the global rank of each.
//
//   FR_ASSIGN_OR_RETURN(Discovery found, DiscoverDumps("/checkpoints/job42/fr", {}));
//   for (const DiscoveredFile& file : found.files) { ... file.rank ... }
//   // found.skipped and found.conflicts say what was left out, and why.
//
// Real directories are messy (docs/dump-format.md, "Files"): a common prefix
// (nccl_trace_rank_12), host names inside names (nccl_trace_rank_node02_12), per-host
// subfolders, rank_12.json from Ray, compressed copies (.zst, .gz), and files that are not dumps
// (.pipe triggers, logs, core files). Discovery only looks at names and file types, plus at most
// one 4-byte read for a file whose name alone does not decide; it never parses a dump. A file
// that is named like a dump but is empty or corrupt IS returned: the loader rejects it with an
// error the user sees, instead of it silently vanishing here. So are all the files that claim
// one rank (a .zst copy beside the original, a backup in a subfolder): only their content can
// say which is the dump, so the loader settles such conflicts.
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
// `skipped`. A directory reached twice (bind mounts) is walked once. Symlinks to files outside
// the root are followed only when `follow_links_out_of_root` says so; otherwise they are listed
// in `skipped`, so that a link to /etc/shadow is neither read nor quoted.
#ifndef FR_DISCOVER_DISCOVER_H_
#define FR_DISCOVER_DISCOVER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fr/model/loaded_trace.h"

namespace fr {

// A file the caller holds in memory instead of on disk: an archive's member handed straight to
// the analysis (the console writes it to disk only after answering). Judged by the same rules
// as a file found at `relative_path` under the root, as if it were there.
struct HeldFile {
  std::string relative_path;  // under the root, '/' separators
  uint64_t size = 0;
  std::string head;  // its first bytes (4 are enough): the content check of rule 4
};

struct DiscoverOptions {
  // Only files whose name is `prefix`, then the rank digits, then optional format and
  // compression extensions (.zst .zstd .gz .json .pkl .pickle) are dumps; nothing else may follow
  // the digits. A directory part is ignored, so the value of TORCH_NCCL_DEBUG_INFO_TEMP_FILE
  // ("/tmp/nccl_trace_rank_") works as is. Empty: the default rules above.
  std::string prefix;
  // A regular expression in RE2 syntax (Perl-like: \d, [a-z], (?:...), |, *, +, ?, {m,n}) with
  // exactly one capture group, the rank (decimal digits). It must match the WHOLE path relative
  // to the root ("host3/trace_7", '/' separators) or, when it does not, the whole file name
  // ("trace_7"), so a pattern never half-matches a longer name. RE2 matches in time linear in the
  // name whatever the pattern (a backtracking engine takes exponential time on "(a+)+b"-like
  // patterns), which is why backreferences and lookarounds are refused. Overrides `prefix` and
  // the name rules: among regular files, the pattern alone decides. Empty: not used.
  std::string rank_pattern;
  // Larger numbers in names are not ranks (dates, pids, timestamps): such files are skipped.
  int64_t max_rank = 999'999;
  // Whether a symlink to a file outside the root is followed. The command line passes false
  // unless --follow-links is given: a directory of dumps from a job is not a reason to read
  // whatever its links point to. The library default is true for compatibility with callers
  // that built directories of links; the Python package passes false and names files directly.
  bool follow_links_out_of_root = true;
  // When not empty, only these files are considered instead of walking the root (a list or a
  // glob a user gave): paths absolute or relative to the root, each read wherever a link in its
  // path leads, as a file named on its own is (the user chose it). Their path relative to the
  // root is what `rank_pattern` matches. A path that does not exist is NotFound.
  std::vector<std::string> files;
  // Files held in memory (HeldFile), judged beside those found when walking a root directory
  // (not with `files`, nor for a root that is a file). A held file under a hidden folder is
  // skipped as the walk skips the folder.
  std::vector<HeldFile> held;
};

struct DiscoveredFile {
  std::string path;  // as found under the root (root joined with the relative path)
  int64_t rank = -1;
  uint64_t size = 0;  // bytes on disk; 0 for an empty file (the loader rejects it)
  // What to open: `path` itself, or for a symlink the file it resolved to when discovered. Open
  // it without following links (ReadOptions::follow_symlinks = false): a link put in its place
  // later is then refused instead of followed out of the root.
  std::string open_path;
  // A HeldFile: not on disk (open_path is empty); its bytes are the caller's.
  bool held = false;
};

struct Discovery {
  std::vector<DiscoveredFile> files;    // ascending (rank, path); a conflict's files are all here
  std::vector<SkippedFile> skipped;     // ascending path
  std::vector<RankConflict> conflicts;  // ascending rank
};

// The host a dump's path names, or "": a per-host folder ("node03/nccl_trace_rank_5") or a host
// inside the file name ("nccl_trace_rank_container-node02_5.zst" is container-node02), with
// the extension and rank rules discovery uses. `root` (the directory searched) is not part of it.
std::string HostOfDumpPath(std::string_view path, std::string_view root);

// Whether the name alone makes a file at `relative_path` ('/' separators) a dump under
// `options`' rules (rules 1-4 above; no hidden folder on the way), with no need to read it: what
// the console holds in memory instead of writing before its answer. A name that needs its first
// bytes to decide, or that is no dump, is false.
bool IsDumpByName(std::string_view relative_path, const DiscoverOptions& options);

// Walks `root` recursively (a single file is accepted too and judged by the same rules; its
// relative path is its name). The result does not depend on directory order. Errors: NotFound
// when `root` does not exist, PermissionDenied when the root directory cannot be read,
// InvalidArgument when `root` is neither a directory nor a regular file, or for a bad
// `rank_pattern` (not a regex RE2 accepts, or not exactly one capture group), naming the pattern.
// Unreadable subfolders are reported in `skipped` and the walk goes on.
absl::StatusOr<Discovery> DiscoverDumps(const std::string& root, const DiscoverOptions& options);

}  // namespace fr

#endif  // FR_DISCOVER_DISCOVER_H_
