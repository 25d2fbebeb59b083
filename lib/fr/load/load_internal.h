// The loader's own parts, shared by its four files and by nothing else (not installed, not
// included outside lib/fr/load): one file's result on its way to the trace (FileResult) and the
// steps that settle what the results mean. read_dump_file.cc reads one file into a RankDump,
// settle_ranks.cc settles which file is each rank's dump and which ranks the job has,
// separate_jobs.cc tells the dumps of several jobs or attempts in one directory apart, and
// load.cc runs them in order behind the public entry points of load.h.
//
//   std::vector<FileResult> results(files.size());
//   results[i] = LoadDiscovered(files[i], read, /*hash_content=*/false);   // in parallel
//   if (SeveralAttempts(files) || SeveralWorlds(results)) SeparateJobs(files, results, &trace);
//   std::optional<size_t> kept = SettleRank(results, files, begin, end, &trace);   // per rank
//   SettleWorld(/*check_own_rank=*/true, &trace);
#ifndef FR_LOAD_LOAD_INTERNAL_H_
#define FR_LOAD_LOAD_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fr/discover/discover.h"
#include "fr/load/early_reads.h"
#include "fr/model/loaded_trace.h"
#include "fr/model/rank_dump.h"
#include "fr/model/shared_ranks.h"
#include "fr/read/input_file.h"

namespace fr::load_internal {

// One file's way from bytes to RankDump, timed per stage. Errors do not name the file yet.
struct FileResult {
  std::optional<absl::StatusOr<RankDump>> dump;
  // Of the decompressed bytes, when asked for: files that claim one rank are compared by them.
  size_t content_hash = 0;
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_decoded = 0;
  int64_t read_ns = 0;
  int64_t decode_ns = 0;
  int64_t normalize_ns = 0;
};

// Reading one file (read_dump_file.cc).

// Now on the steady clock, in ns: what the per-stage timings are measured with.
int64_t NowNs();

// `status` with `path` in front of its message; payloads (IsNotADump) are kept.
absl::Status WithPath(const absl::Status& status, const std::string& path);

// The file's error when reading it ran out of memory; names `path`.
absl::Status OutOfMemory(const std::string& path);

// Decodes and normalizes `input` (already read, or its read error) as rank `rank`'s dump, known
// by `name`; `read_started` is when reading began. Hashes the decompressed bytes when
// `hash_content`.
FileResult DecodeAndNormalize(absl::StatusOr<InputFile> input, int64_t rank,
                              const std::string& name, int64_t read_started, bool hash_content);

// Reads `open_path`; `name` is the path the file is known by (a symlink's own path).
FileResult LoadOneFile(const std::string& open_path, const std::string& name, int64_t rank,
                       const ReadOptions& options, bool hash_content);

// Reads a discovered file as LoadOneFile does; running out of memory is the file's error.
FileResult LoadDiscovered(const DiscoveredFile& file, const ReadOptions& read, bool hash_content);

// What a job holds per rank, made small as soon as the dump is read: its rank lists become the
// pool's (a job's dumps all list the default group's every rank, and a copy per dump would be
// quadratic), its strings one exact block without their lookup index, which nothing after
// loading uses, and its entries packed rows (about a quarter of their size; entry_store.h).
void KeepCompactly(RankListPool* pool, FileResult* result);

// Adds a file's bytes and per-stage times to the trace's.
void AddTimings(const FileResult& result, LoadedTrace* trace);

// Files read while their folder was still being written (early_reads.cc).

// The early result of `open_path` if it was read early and its file is unchanged since (same
// inode, size and modification time), already made compact; else nothing, and the caller reads
// the file. A read still queued is taken back (the caller, about to read it, is sooner), one
// under way is waited for. A dump in it has rank -1 and the path the writer named: the caller
// sets both to what discovery found. Each result is handed out once.
std::optional<FileResult> TakeEarlyResult(EarlyReads& early, const std::string& open_path);

// The result of the held file `path` (as framed: EarlyReads::ReadHeld), decoded here when no
// thread has begun it, waited for when one has. Its content is always hashed (the file cannot
// be read again to compare it with another claiming its rank). Called once HeldFiles() is known,
// once per held file; a path never held is an error result.
FileResult TakeHeldResult(EarlyReads& early, const std::string& path);

// Which file is each rank's dump, and which ranks the job has (settle_ranks.cc).

// Sorts the results of the files discovered for one rank ([begin, end) of `files`) into the
// trace: files that are not dumps are skipped; of several dumps, identical ones (after
// decompression) are one dump, and of different ones the newest by its own records is used; the
// others are set aside with the reason. Only when no file of the rank is a readable dump are the
// damaged ones rejected. Returns the index of the file whose dump is kept, or nothing.
std::optional<size_t> SettleRank(std::vector<FileResult>& results,
                                 const std::vector<DiscoveredFile>& files, size_t begin, size_t end,
                                 LoadedTrace* trace);

// Which ranks the job has, from its readable dumps (the rules are at the definition): sets aside
// dumps and damaged files that are not ranks of this job, and fills `claimed_ranks` and
// `missing_ranks`. `check_own_rank`: files only, set aside a dump whose own groups do not list
// its rank.
void SettleWorld(bool check_own_rank, LoadedTrace* trace);

// Several jobs in one directory (separate_jobs.cc).

// Whether the dumps lie in more than one attempt of one run.
bool SeveralAttempts(const std::vector<DiscoveredFile>& files);

// Whether the dumps name worlds of different sizes: a run of 8 ranks, then one of 4 that wrote
// into the same folder and left ranks 4-7 of the first run there.
bool SeveralWorlds(const std::vector<FileResult>& results);

// One job at a time. Where two files claim one rank with different contents, or the dumps lie in
// several attempt_<n> folders of one run, the directory may
// hold more than one job (a previous run in prev_run/, a second job in a subfolder): settling
// rank by rank would mix them (the newest file of each rank wins, so a culprit that stopped
// early loses to the other job's healthy copy). So the readable dumps are grouped by folder, the
// folders into jobs (never two different files of one rank in a job; side-by-side folders or
// overlapping times join), and the job kept is the newest complete one (every rank its dumps
// claim has a file), else the one with the most ranks; of attempts of one run, the first: its
// failure caused the restarts (a retry's failure, often another rank's, is what the job's last
// error names, which buries the first). The others' files are set aside, listed in
// `trace->other_jobs`, unless they are a few ranks from within the kept job's time.
void SeparateJobs(const std::vector<DiscoveredFile>& files, std::vector<FileResult>& results,
                  LoadedTrace* trace);

}  // namespace fr::load_internal

#endif  // FR_LOAD_LOAD_INTERNAL_H_
