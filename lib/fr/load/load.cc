#include "fr/load/load.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <compare>
#include <cstdio>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <thread>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "fmt/format.h"
#include "fr/base/parallel_for.h"
#include "fr/base/status_macros.h"
#include "fr/decode/document.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/normalize/direct_pickle_reader.h"
#include "fr/normalize/normalize.h"
#include "fr/summary/rank_summary.h"

namespace fr {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// `status` with `path` in front of its message; payloads (IsNotADump) are kept.
absl::Status WithPath(const absl::Status& status, const std::string& path) {
  absl::Status out(status.code(), fmt::format("{}: {}", path, std::string(status.message())));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Whether a decoded document is a flight-recorder dump at all: every version's top level is a
// dict with at least one of the keys below, or (2023) a list of entry dicts. Anything else that
// decodes (an fr-analyze JSON report saved beside the dumps, some tool's config) is another kind
// of file, not a damaged dump. The message names the kind, never the content.
absl::Status CheckIsADump(const Document& document, Encoding encoding) {
  std::string_view format = encoding == Encoding::kJson ? "JSON" : "a pickle";
  ValueId root = document.root();
  switch (document.kind(root)) {
    case ValueKind::kDict:
      for (std::string_view key : {"version", "entries", "pg_config", "pg_status"}) {
        if (document.Find(root, key) != kNoValue) return absl::OkStatus();
      }
      if (document.Find(root, "verdict") != kNoValue && document.Find(root, "inputs") != kNoValue) {
        return NotADumpError(fmt::format("{} of an fr-analyze report", format));
      }
      return NotADumpError(
          fmt::format("{} without any flight-recorder key (version, entries, pg_config)", format));
    case ValueKind::kList: {
      std::span<const ValueId> items = document.items(root);
      if (items.empty() || document.kind(items.front()) == ValueKind::kDict) {
        return absl::OkStatus();
      }
      return NotADumpError(fmt::format("{} holding a list of other things than entries", format));
    }
    default:
      return NotADumpError(
          fmt::format("{} of a single {}", format, ValueKindName(document.kind(root))));
  }
}

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

FileResult DecodeAndNormalize(absl::StatusOr<InputFile> input, int64_t rank,
                              const std::string& name, int64_t read_started, bool hash_content) {
  FileResult result;
  int64_t decode_started = NowNs();
  result.read_ns = decode_started - read_started;
  if (!input.ok()) {
    result.dump = input.status();
    return result;
  }
  result.bytes_on_disk = input->size_on_disk;
  result.bytes_decoded = input->bytes->size();
  if (hash_content) result.content_hash = std::hash<std::string_view>{}(input->bytes->bytes());
  if (input->encoding == Encoding::kPickle) {
    // PyTorch's own layout is read straight into the RankDump (identical to the general path);
    // anything else it declines, and the general path below reads it. Its time, accepted or
    // not, counts as decoding: it reads the pickle and normalizes in one pass.
    DirectReadResult direct = ReadTorchPickleDirect(input->bytes->bytes(), rank);
    if (direct.dump.has_value()) {
      result.decode_ns = NowNs() - decode_started;
      direct.dump->path = name;
      result.dump = std::move(*direct.dump);
      return result;
    }
  }
  absl::StatusOr<Document> document =
      input->encoding == Encoding::kJson ? DecodeJson(input->bytes) : DecodePickle(input->bytes);
  int64_t normalize_started = NowNs();
  result.decode_ns = normalize_started - decode_started;
  if (!document.ok()) {
    result.dump = document.status();
    return result;
  }
  if (absl::Status status = CheckIsADump(*document, input->encoding); !status.ok()) {
    result.dump = status;
    return result;
  }
  absl::StatusOr<RankDump> dump = NormalizeDump(*document, rank);
  result.normalize_ns = NowNs() - normalize_started;
  if (!dump.ok()) {
    result.dump = dump.status();
    return result;
  }
  dump->path = name;
  result.dump = std::move(dump);
  return result;
}

int64_t ModificationTimeNs(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return kUnknown;
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
}

// Reads `open_path`; `name` is the path the file is known by (a symlink's own path).
FileResult LoadOneFile(const std::string& open_path, const std::string& name, int64_t rank,
                       const ReadOptions& options, bool hash_content) {
  int64_t started = NowNs();
  FileResult result =
      DecodeAndNormalize(ReadInputFile(open_path, options), rank, name, started, hash_content);
  if (result.dump.has_value() && result.dump->ok()) {
    (*result.dump)->file_mtime_ns = ModificationTimeNs(open_path);
  }
  return result;
}

void AddTimings(const FileResult& result, LoadedTrace* trace) {
  trace->bytes_on_disk += result.bytes_on_disk;
  trace->bytes_decoded += result.bytes_decoded;
  trace->timings.read_ns += result.read_ns;
  trace->timings.decode_ns += result.decode_ns;
  trace->timings.normalize_ns += result.normalize_ns;
}

void SetAside(const RankDump& dump, std::string reason, LoadedTrace* trace) {
  trace->skipped.push_back({.path = dump.path,
                            .reason = std::move(reason),
                            .rank = dump.rank,
                            .kind = SetAsideKind::kDumpNotUsed});
}

// How new a dump's records are: the newest entry's creation time, then how many entries it
// holds, then whether it carries stacks. A rank's later dump overwrites its file and holds every
// record of the earlier one that the ring buffer kept, plus newer ones.
struct Recency {
  int64_t newest_created_ns = kUnknown;
  size_t entries = 0;
  bool has_stacks = false;
  auto operator<=>(const Recency&) const = default;
};

Recency RecencyOf(const RankDump& dump) {
  Recency recency{.entries = dump.entries.size(), .has_stacks = dump.has_stacks};
  for (const Entry& entry : dump.entries) {
    recency.newest_created_ns = std::max(recency.newest_created_ns, entry.time_created_ns);
  }
  return recency;
}

std::string WhyPreferred(const RankDump& kept, const Recency& kept_recency, const Recency& other) {
  std::string head = fmt::format("rank {} is read from {}", kept.rank, kept.path);
  if (kept_recency.newest_created_ns != other.newest_created_ns) {
    return fmt::format(
        "{}, whose records are newer (newest entry created at {} ns; in this file at {} ns)", head,
        kept_recency.newest_created_ns, other.newest_created_ns);
  }
  if (kept_recency.entries != other.entries) {
    return fmt::format("{}, which holds more entries ({}; this file {})", head,
                       kept_recency.entries, other.entries);
  }
  if (kept_recency.has_stacks != other.has_stacks) {
    return fmt::format("{}, which holds the same records with their stacks", head);
  }
  return fmt::format("{}: both hold the same records, differently written; the first path is used",
                     head);
}

// Sorts the results of the files discovered for one rank ([begin, end) of `files`) into the
// trace: files that are not dumps are skipped; of several dumps, identical ones (after
// decompression) are one dump, and of different ones the newest by its own records is used; the
// others are set aside with the reason. Only when no file of the rank is a readable dump are the
// damaged ones rejected. Returns the index of the file whose dump is kept, or nothing.
std::optional<size_t> SettleRank(std::vector<FileResult>& results,
                                 const std::vector<DiscoveredFile>& files, size_t begin, size_t end,
                                 LoadedTrace* trace) {
  std::vector<size_t> readable;
  std::vector<size_t> damaged;
  for (size_t i = begin; i < end; ++i) {
    AddTimings(results[i], trace);
    if (!results[i].dump.has_value()) continue;
    const absl::StatusOr<RankDump>& dump = *results[i].dump;
    if (dump.ok()) {
      readable.push_back(i);
    } else if (IsNotADump(dump.status())) {
      trace->skipped.push_back({.path = files[i].path,
                                .reason = std::string(dump.status().message()),
                                .kind = SetAsideKind::kNotADump});
    } else {
      damaged.push_back(i);
    }
  }
  if (readable.empty()) {
    for (size_t i : damaged) {
      trace->rejected.push_back(
          {files[i].path, files[i].rank,
           std::string(WithPath(results[i].dump->status(), files[i].path).message())});
    }
    return std::nullopt;
  }
  size_t best = readable.front();
  // The usual case, one readable file: nothing to compare, and no pass over its entries.
  if (readable.size() == 1 && damaged.empty()) return best;
  Recency best_recency = RecencyOf(**results[best].dump);
  for (size_t i : readable) {
    Recency recency = RecencyOf(**results[i].dump);
    if (recency > best_recency) {
      best = i;
      best_recency = recency;
    }
  }
  const RankDump& kept = **results[best].dump;
  for (size_t i : readable) {
    if (i == best) continue;
    const RankDump& other = **results[i].dump;
    if (results[i].content_hash == results[best].content_hash &&
        results[i].bytes_decoded == results[best].bytes_decoded) {
      SetAside(other, fmt::format("same content as {} (after decompression): one dump", kept.path),
               trace);
    } else {
      SetAside(other, WhyPreferred(kept, best_recency, RecencyOf(other)), trace);
    }
  }
  for (size_t i : damaged) {
    trace->skipped.push_back(
        {.path = files[i].path,
         .reason = fmt::format("rank {} is read from {}; this other file of rank {} could not be "
                               "read: {}",
                               files[i].rank, kept.path, files[i].rank,
                               std::string(results[i].dump->status().message())),
         .rank = files[i].rank,
         .kind = SetAsideKind::kDumpNotUsed});
  }
  return best;
}

// Numeric version order: "2.9" before "2.10".
void CollectVersions(LoadedTrace* trace) {
  std::set<std::string> versions;
  for (const RankDump& dump : trace->ranks) versions.insert(dump.version);
  trace->versions.assign(versions.begin(), versions.end());
  std::sort(trace->versions.begin(), trace->versions.end(),
            [](const std::string& a, const std::string& b) {
              auto key = [](const std::string& v) {
                int major = 0, minor = 0;
                std::sscanf(v.c_str(), "%d.%d", &major, &minor);
                return std::make_pair(major, minor);
              };
              return key(a) != key(b) ? key(a) < key(b) : a < b;
            });
}

// Whether some group of `dump` with a known rank list (pg_config) lists its own rank. Nothing
// when the dump lists none (Gloo's placeholder pg_config, versions before 1.4).
std::optional<bool> ListsItsOwnRank(const RankDump& dump) {
  bool any_list = false;
  for (const ProcessGroup& group : dump.groups) {
    if (!group.ranks_known || group.ranks.empty()) continue;
    any_list = true;
    // The world group lists rank r at position r: check there before searching.
    std::span<const int64_t> ranks = group.ranks.view();
    if (dump.rank >= 0 && static_cast<uint64_t>(dump.rank) < ranks.size() &&
        ranks[dump.rank] == dump.rank) {
      return true;
    }
    if (std::find(ranks.begin(), ranks.end(), dump.rank) != ranks.end()) return true;
  }
  return any_list ? std::optional<bool>(false) : std::nullopt;
}

// Which ranks the job has, from readable dumps only: the members of every group some dump lists
// (pg_config), every rank up to the highest loaded one (the default group spans the world), and
// up to the ranks of damaged dumps that these allow. A damaged file or a name says nothing on its
// own: a stray file named rank 999999 must not make a healthy 8-rank job "8 of 1000000 ranks", nor
// cost memory per rank it implies. So, in this order:
//   - (files only) a dump whose own process groups list ranks but not its rank is a copy of
//     another rank's dump or a misnamed file: set aside;
//   - a damaged file whose rank no readable dump lists, above the highest loaded rank, is not a
//     rank of this job: set aside (without lists, as from Gloo, it still counts);
//   - ranks far beyond all others (a gap of more than kMaxRankGap, or 8 ranks per rank below)
//     are set aside: nothing but a name vouches for them;
//   - a rank above every file's rank that only one dump's groups list, while other dumps list
//     their groups too, is a claim (a forged or damaged pg_config, a dump of another job): it is
//     kept in `claimed_ranks`, not taken as a rank of the job. Every member of a group lists it,
//     so a group of the job is listed by each of its members that left a dump;
//   - what remains expected and has no file is missing.
// Everything here is proportional to the lists and files read, never to a rank number.
constexpr int64_t kMaxRankGap = 16384;

void SettleWorld(bool check_own_rank, LoadedTrace* trace) {
  if (check_own_rank) {
    // In place: a second vector of 100k dumps would be a transient copy of every dump's header.
    size_t kept = 0;
    for (RankDump& dump : trace->ranks) {
      if (ListsItsOwnRank(dump) == std::optional<bool>(false)) {
        SetAside(dump,
                 fmt::format("named rank {}, but none of its own process groups (pg_config) lists "
                             "rank {}: a copy of another rank's dump or a misnamed file",
                             dump.rank, dump.rank),
                 trace);
        continue;
      }
      if (&trace->ranks[kept] != &dump) trace->ranks[kept] = std::move(dump);
      ++kept;
    }
    trace->ranks.erase(trace->ranks.begin() + static_cast<std::ptrdiff_t>(kept),
                       trace->ranks.end());
  }

  // Every member of a group lists the same group: add each distinct rank list once, or a
  // 4096-rank world group would be inserted 4096 times. How many dumps list each one decides
  // whether its ranks are vouched for or only claimed.
  absl::flat_hash_map<SharedRanks, int64_t> listed_by;
  int64_t highest_loaded = -1;
  int64_t dumps_with_lists = 0;
  for (const RankDump& dump : trace->ranks) {
    highest_loaded = std::max(highest_loaded, dump.rank);
    absl::flat_hash_set<SharedRanks> own;
    for (const ProcessGroup& group : dump.groups) {
      if (group.ranks_known && own.insert(group.ranks).second) ++listed_by[group.ranks];
    }
    dumps_with_lists += own.empty() ? 0 : 1;
  }
  const int64_t vouching_dumps = std::min<int64_t>(2, dumps_with_lists);
  std::vector<int64_t> listed, claimed;
  for (const auto& [ranks, dumps] : listed_by) {
    for (int64_t rank : ranks) {
      if (rank >= 0) (dumps >= vouching_dumps ? listed : claimed).push_back(rank);
    }
  }
  std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  // A rank some file names, or at most the highest loaded one, is the job's whoever lists it.
  int64_t highest_file = highest_loaded;
  for (const RejectedFile& file : trace->rejected) {
    if (std::binary_search(listed.begin(), listed.end(), file.rank)) {
      highest_file = std::max(highest_file, file.rank);
    }
  }
  std::sort(claimed.begin(), claimed.end());
  claimed.erase(std::unique(claimed.begin(), claimed.end()), claimed.end());
  std::vector<int64_t> vouched_claims;
  trace->claimed_ranks.clear();
  trace->claimed_ranks_count = 0;
  std::vector<int64_t> with_files;
  for (const RejectedFile& file : trace->rejected) with_files.push_back(file.rank);
  std::sort(with_files.begin(), with_files.end());
  for (int64_t rank : claimed) {
    if (std::binary_search(listed.begin(), listed.end(), rank)) continue;
    if (rank <= highest_file || std::binary_search(with_files.begin(), with_files.end(), rank)) {
      vouched_claims.push_back(rank);
      continue;
    }
    if (trace->claimed_ranks.size() < kMaxClaimedRanksListed) trace->claimed_ranks.push_back(rank);
    ++trace->claimed_ranks_count;
  }
  if (!vouched_claims.empty()) {
    listed.insert(listed.end(), vouched_claims.begin(), vouched_claims.end());
    std::sort(listed.begin(), listed.end());
  }
  auto is_listed = [&](int64_t rank) {
    return std::binary_search(listed.begin(), listed.end(), rank);
  };

  std::vector<RejectedFile> rejected;
  for (RejectedFile& file : trace->rejected) {
    if (!listed.empty() && file.rank > highest_loaded && !is_listed(file.rank)) {
      trace->skipped.push_back(
          {.path = file.path,
           .reason = fmt::format("named rank {}, which no readable dump lists in its process "
                                 "groups: not a rank of this job. It could not be read either: {}",
                                 file.rank, file.error),
           .rank = file.rank,
           .kind = SetAsideKind::kDumpNotUsed});
      continue;
    }
    rejected.push_back(std::move(file));
  }
  trace->rejected = std::move(rejected);

  // The highest rank that the evidence below it makes plausible.
  std::vector<int64_t> evidence = listed;
  for (const RankDump& dump : trace->ranks) {
    if (dump.rank >= 0) evidence.push_back(dump.rank);
  }
  for (const RejectedFile& file : trace->rejected) {
    if (file.rank >= 0) evidence.push_back(file.rank);
  }
  std::sort(evidence.begin(), evidence.end());
  evidence.erase(std::unique(evidence.begin(), evidence.end()), evidence.end());
  int64_t plausible = -1;
  int64_t below = 0;
  for (int64_t rank : evidence) {
    if (rank - plausible > std::max(kMaxRankGap, 8 * below)) break;
    plausible = rank;
    ++below;
  }
  if (!evidence.empty() && plausible < evidence.back()) {
    auto far_beyond = [&](int64_t rank) {
      return fmt::format(
          "rank {} lies far beyond every other rank found (the highest below it is {}): nothing "
          "but its name says such a rank exists, so it is not taken as a rank of this job",
          rank, plausible < 0 ? std::string("none") : std::to_string(plausible));
    };
    std::vector<RankDump> kept;
    for (RankDump& dump : trace->ranks) {
      if (dump.rank > plausible) {
        SetAside(dump, far_beyond(dump.rank), trace);
      } else {
        kept.push_back(std::move(dump));
      }
    }
    trace->ranks = std::move(kept);
    std::vector<RejectedFile> near;
    for (RejectedFile& file : trace->rejected) {
      if (file.rank > plausible) {
        trace->skipped.push_back({.path = file.path,
                                  .reason = far_beyond(file.rank),
                                  .rank = file.rank,
                                  .kind = SetAsideKind::kDumpNotUsed});
      } else {
        near.push_back(std::move(file));
      }
    }
    trace->rejected = std::move(near);
    highest_loaded = -1;
    for (const RankDump& dump : trace->ranks) highest_loaded = std::max(highest_loaded, dump.rank);
  }

  std::vector<int64_t> present;
  for (const RankDump& dump : trace->ranks) present.push_back(dump.rank);
  for (const RejectedFile& file : trace->rejected) present.push_back(file.rank);
  std::sort(present.begin(), present.end());
  auto is_present = [&](int64_t rank) {
    return std::binary_search(present.begin(), present.end(), rank);
  };
  // A damaged dump that survived the rules above is a rank of the job: the world reaches it too.
  int64_t highest = highest_loaded;
  for (const RejectedFile& file : trace->rejected) highest = std::max(highest, file.rank);
  trace->missing_ranks.clear();
  for (int64_t rank = 0; rank <= highest; ++rank) {
    if (!is_present(rank)) trace->missing_ranks.push_back(rank);
  }
  for (auto it = std::upper_bound(listed.begin(), listed.end(), highest);
       it != listed.end() && *it <= plausible; ++it) {
    if (!is_present(*it)) trace->missing_ranks.push_back(*it);
  }
  std::sort(trace->skipped.begin(), trace->skipped.end(),
            [](const SkippedFile& a, const SkippedFile& b) {
              return std::tie(a.path, a.reason) < std::tie(b.path, b.reason);
            });
}

absl::Status OutOfMemory(const std::string& path) {
  return absl::ResourceExhaustedError(
      fmt::format("{}: ran out of memory reading this file (outside the decoders' budgets: "
                  "reading or decompressing it)",
                  path));
}

}  // namespace

absl::StatusOr<RankDump> LoadDumpFile(const std::string& path, int64_t rank,
                                      const ReadOptions& options) {
  FileResult result;
  try {
    result = LoadOneFile(path, path, rank, options, /*hash_content=*/false);
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path);
  }
  if (!result.dump->ok()) return WithPath(result.dump->status(), path);
  return *std::move(result.dump);
}

namespace {

// Ranks claimed by several files: their files' contents are hashed, to tell copies apart.
std::set<int64_t> ContestedRanks(const Discovery& discovery) {
  std::set<int64_t> contested;
  for (const RankConflict& conflict : discovery.conflicts) contested.insert(conflict.rank);
  return contested;
}

// Discovery resolved every link it accepted: open exactly that, and follow no link that has
// appeared since.
ReadOptions NoNewLinks(ReadOptions read) {
  read.follow_symlinks = false;
  return read;
}

FileResult LoadDiscovered(const DiscoveredFile& file, const ReadOptions& read, bool hash_content) {
  // Running out of memory on one file is that file's error: the others are still analysed.
  try {
    return LoadOneFile(file.open_path.empty() ? file.path : file.open_path, file.path, file.rank,
                       read, hash_content);
  } catch (const std::bad_alloc&) {
    FileResult result;
    result.dump = OutOfMemory(file.path);
    return result;
  }
}

// What a job holds per rank, made small as soon as the dump is read: its rank lists become the
// pool's (a job's dumps all list the default group's every rank, and a copy per dump would be
// quadratic), its strings one exact block without their lookup index, which nothing after
// loading uses, and its entries packed rows (about a quarter of their size; entry_store.h).
void KeepCompactly(RankListPool* pool, FileResult* result) {
  if (!result->dump.has_value() || !result->dump->ok()) return;
  RankDump& dump = **result->dump;
  for (ProcessGroup& group : dump.groups) pool->Intern(&group.ranks);
  dump.strings.Compact();
  dump.entries.Pack();
}

// Distinct ranks among discovered files (sorted by rank): what the trace reserves, so that
// 100k dumps are not moved and left with up to as many slots unused again as the vector grows.
size_t CountRanks(const std::vector<DiscoveredFile>& files) {
  size_t ranks = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i == 0 || files[i].rank != files[i - 1].rank) ++ranks;
  }
  return ranks;
}

// The restart a dump belongs to, from a folder named "attempt_<n>" on its path (torchelastic's
// own layout for restarts, `<log_dir>/<run_id>/attempt_<n>/`, which launchers and harnesses that
// keep each attempt's files apart follow): the path up to that folder and n; n = -1 for none.
struct Attempt {
  std::string root;
  int64_t number = -1;
  bool operator==(const Attempt&) const = default;
};

Attempt AttemptOf(std::string_view path) {
  Attempt attempt;
  size_t begin = 0;
  while (begin < path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string_view::npos) break;  // the file's own name is no folder
    std::string_view name = path.substr(begin, end - begin);
    constexpr std::string_view kWord = "attempt_";
    if (name.size() > kWord.size() && name.size() <= kWord.size() + 9 &&
        name.substr(0, kWord.size()) == kWord &&
        std::all_of(name.begin() + kWord.size(), name.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      attempt.root = std::string(path.substr(0, begin));
      attempt.number = std::stoll(std::string(name.substr(kWord.size())));
    }
    begin = end + 1;
  }
  return attempt;
}

// Whether the dumps lie in more than one attempt of one run.
bool SeveralAttempts(const std::vector<DiscoveredFile>& files) {
  std::optional<Attempt> first;
  for (const DiscoveredFile& file : files) {
    Attempt attempt = AttemptOf(file.path);
    if (attempt.number < 0) continue;
    if (!first.has_value()) {
      first = std::move(attempt);
    } else if (attempt.root == first->root && attempt.number != first->number) {
      return true;
    }
  }
  return false;
}

// The world a dump's own process groups say the job had: the largest group it names (its
// default group lists every rank); 0 when it names none (Gloo's dumps list no members).
int64_t ClaimedWorld(const RankDump& dump) {
  int64_t world = 0;
  for (const ProcessGroup& group : dump.groups) {
    world = std::max(world, static_cast<int64_t>(group.ranks.size()));
  }
  return world;
}

// Whether the dumps name worlds of different sizes: a run of 8 ranks, then one of 4 that wrote
// into the same folder and left ranks 4-7 of the first run there.
bool SeveralWorlds(const std::vector<FileResult>& results) {
  int64_t seen = 0;
  for (const FileResult& result : results) {
    if (!result.dump.has_value() || !result.dump->ok()) continue;
    int64_t world = ClaimedWorld(**result.dump);
    if (world == 0) continue;
    if (seen != 0 && world != seen) return true;
    seen = world;
  }
  return false;
}

// A folder's readable dumps of one claimed world, as one piece of a job.
struct FolderOfDumps {
  std::string folder;
  std::string parent;
  int64_t claimed_world = 0;  // ClaimedWorld of its dumps, 0 when they name no group
  Attempt attempt;
  std::vector<size_t> files;  // indices into results
  std::map<int64_t, size_t> by_rank;
  int64_t oldest_ns = kUnknown;
  int64_t newest_ns = kUnknown;
  int64_t world = 0;  // the most ranks its dumps say the job has
};

struct JobOfFolders {
  std::vector<const FolderOfDumps*> folders;
  Attempt attempt;  // its folders' (they never span two attempts)
  std::map<int64_t, size_t> by_rank;
  int64_t oldest_ns = kUnknown;
  int64_t newest_ns = kUnknown;
  int64_t world = 0;
};

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool SameContent(const FileResult& a, const FileResult& b) {
  return a.content_hash != 0 && a.content_hash == b.content_hash &&
         a.bytes_decoded == b.bytes_decoded;
}

// Whether `folder` can be part of `job`: no rank of both in files that differ, and the two either
// sit side by side (per-host folders of one job) or overlap in time.
bool FitsJob(const FolderOfDumps& folder, const JobOfFolders& job,
             const std::vector<FileResult>& results) {
  // Two attempts of one run are two jobs, whatever their ranks and times: a retry restarts every
  // rank, so its ops never match the failed attempt's.
  if (folder.attempt.root == job.attempt.root && folder.attempt.number != job.attempt.number) {
    return false;
  }
  for (const auto& [rank, file] : folder.by_rank) {
    auto other = job.by_rank.find(rank);
    if (other != job.by_rank.end() && !SameContent(results[file], results[other->second])) {
      return false;
    }
  }
  // Dumps that claim worlds of different sizes are one job only when their records overlap in
  // time: side by side in one folder they are two runs.
  bool other_world = false;
  for (const FolderOfDumps* member : job.folders) {
    other_world |= member->claimed_world != 0 && folder.claimed_world != 0 &&
                   member->claimed_world != folder.claimed_world;
  }
  for (const FolderOfDumps* member : job.folders) {
    if (!other_world && member->parent == folder.parent) return true;
  }
  return folder.oldest_ns != kUnknown && job.oldest_ns != kUnknown &&
         folder.oldest_ns <= job.newest_ns && job.oldest_ns <= folder.newest_ns;
}

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
                  LoadedTrace* trace) {
  std::map<std::string, FolderOfDumps> folders;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!results[i].dump.has_value() || !results[i].dump->ok()) continue;
    const RankDump& dump = **results[i].dump;
    std::string parent = ParentOf(files[i].path);
    int64_t claimed = ClaimedWorld(dump);
    // One folder's dumps of different worlds are pieces of different runs.
    FolderOfDumps& folder = folders[claimed == 0 ? parent : fmt::format("{}\n{}", parent, claimed)];
    folder.folder = parent;
    folder.parent = ParentOf(parent);
    folder.claimed_world = claimed;
    folder.attempt = AttemptOf(files[i].path);
    folder.files.push_back(i);
    if (!folder.by_rank.emplace(files[i].rank, i).second) continue;
    for (const Entry& entry : dump.entries) {
      if (entry.time_created_ns <= 0) continue;
      if (folder.oldest_ns == kUnknown || entry.time_created_ns < folder.oldest_ns) {
        folder.oldest_ns = entry.time_created_ns;
      }
      folder.newest_ns = std::max(folder.newest_ns, entry.time_created_ns);
    }
    folder.world = std::max(folder.world, files[i].rank + 1);
    for (const ProcessGroup& group : dump.groups) {
      folder.world = std::max(folder.world, static_cast<int64_t>(group.ranks.size()));
    }
  }
  if (folders.size() < 2) return;
  std::vector<const FolderOfDumps*> order;
  for (const auto& [name, folder] : folders) order.push_back(&folder);
  std::stable_sort(order.begin(), order.end(), [](const FolderOfDumps* a, const FolderOfDumps* b) {
    return a->newest_ns > b->newest_ns;
  });
  std::vector<JobOfFolders> jobs;
  for (const FolderOfDumps* folder : order) {
    JobOfFolders* home = nullptr;
    for (JobOfFolders& job : jobs) {
      if (FitsJob(*folder, job, results)) {
        home = &job;
        break;
      }
    }
    if (home == nullptr) {
      home = &jobs.emplace_back();
      home->attempt = folder->attempt;
    }
    home->folders.push_back(folder);
    for (const auto& [rank, file] : folder->by_rank) home->by_rank.emplace(rank, file);
    if (folder->oldest_ns != kUnknown &&
        (home->oldest_ns == kUnknown || folder->oldest_ns < home->oldest_ns)) {
      home->oldest_ns = folder->oldest_ns;
    }
    home->newest_ns = std::max(home->newest_ns, folder->newest_ns);
    home->world = std::max(home->world, folder->world);
  }
  if (jobs.size() < 2) return;
  auto complete = [](const JobOfFolders& job) {
    return static_cast<int64_t>(job.by_rank.size()) >= job.world;
  };
  // Attempts of one run: every job is one attempt_<n> of the same root.
  bool attempts = std::all_of(jobs.begin(), jobs.end(), [&](const JobOfFolders& job) {
    return job.attempt.number >= 0 && job.attempt.root == jobs.front().attempt.root;
  });
  size_t kept = 0;
  for (size_t j = 1; j < jobs.size(); ++j) {
    const JobOfFolders& a = jobs[j];
    const JobOfFolders& b = jobs[kept];
    bool better = attempts                               ? a.attempt.number < b.attempt.number
                  : complete(a) != complete(b)           ? complete(a)
                  : complete(a)                          ? a.newest_ns > b.newest_ns
                  : a.by_rank.size() != b.by_rank.size() ? a.by_rank.size() > b.by_rank.size()
                                                         : a.newest_ns > b.newest_ns;
    if (better) kept = j;
  }
  std::vector<std::string> kept_folders;
  for (const FolderOfDumps* folder : jobs[kept].folders) kept_folders.push_back(folder->folder);
  std::sort(kept_folders.begin(), kept_folders.end());
  auto overlaps = [](const JobOfFolders& a, const JobOfFolders& b) {
    return a.oldest_ns != kUnknown && b.oldest_ns != kUnknown && a.oldest_ns <= b.newest_ns &&
           b.oldest_ns <= a.newest_ns;
  };
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (j == kept) continue;
    // A few ranks' dumps from within the kept job's time (an earlier dump of those ranks kept in
    // backup/) are that job's, settled rank by rank as before; a complete set of ranks, or one
    // from another time, is another job.
    if (!attempts && !complete(jobs[j]) && overlaps(jobs[j], jobs[kept])) continue;
    OtherJob other;
    for (const FolderOfDumps* folder : jobs[j].folders) other.folders.push_back(folder->folder);
    std::sort(other.folders.begin(), other.folders.end());
    other.ranks = static_cast<int64_t>(jobs[j].by_rank.size());
    other.newest_ns = jobs[j].newest_ns;
    std::string why =
        attempts ? fmt::format(
                       "a later attempt's dump ({} with {} ranks{}); the attempt analysed is the "
                       "first, whose failure caused the restart, in {}; analyse this one with "
                       "`fr-analyze {}`",
                       fmt::join(other.folders, ", "), other.ranks,
                       complete(jobs[j]) ? "" : fmt::format(" of {}", jobs[j].world),
                       fmt::join(kept_folders, ", "), other.folders.front())
                 : fmt::format(
                       "another job's dump ({} with {} ranks{}); the job analysed is in {}; "
                       "analyse this one with `fr-analyze {}`",
                       fmt::join(other.folders, ", "), other.ranks,
                       complete(jobs[j]) ? "" : fmt::format(" of {}", jobs[j].world),
                       fmt::join(kept_folders, ", "), other.folders.front());
    for (const FolderOfDumps* folder : jobs[j].folders) {
      for (size_t file : folder->files) {
        trace->skipped.push_back({.path = files[file].path,
                                  .reason = why,
                                  .rank = files[file].rank,
                                  .kind = SetAsideKind::kDumpNotUsed});
        results[file].dump.reset();
      }
    }
    trace->other_jobs.push_back(std::move(other));
  }
  std::sort(trace->other_jobs.begin(), trace->other_jobs.end(),
            [](const OtherJob& a, const OtherJob& b) { return a.newest_ns > b.newest_ns; });
}

// The trace from every discovered file's result (`results[i]` is `discovery.files[i]`'s):
// settles each rank's files, then the world.
LoadedTrace Assemble(const std::string& root, Discovery discovery, std::vector<FileResult> results,
                     int64_t discover_ns, int64_t started) {
  LoadedTrace trace;
  trace.timings.discover_ns = discover_ns;
  trace.skipped = std::move(discovery.skipped);
  const std::vector<DiscoveredFile>& files = discovery.files;
  const size_t count = files.size();
  if (!discovery.conflicts.empty() || SeveralAttempts(files) || SeveralWorlds(results)) {
    SeparateJobs(files, results, &trace);
  }
  trace.ranks.reserve(CountRanks(files));
  for (size_t begin = 0, end = 0; begin < count; begin = end) {
    end = begin + 1;
    while (end < count && files[end].rank == files[begin].rank) ++end;
    if (std::optional<size_t> kept = SettleRank(results, files, begin, end, &trace)) {
      trace.ranks.push_back(**std::move(results[*kept].dump));
      trace.ranks.back().host = HostOfDumpPath(trace.ranks.back().path, root);
    }
  }
  SettleWorld(/*check_own_rank=*/true, &trace);
  CollectVersions(&trace);
  trace.timings.wall_ns = NowNs() - started;
  return trace;
}

std::string ToSummary(const DiscoveredFile& file, const FileResult& result) {
  summary::FileSummary out;
  out.set_path(file.path);
  out.set_rank(file.rank);
  if (result.dump.has_value() && result.dump->ok()) {
    ToRankSummary(**result.dump, out.mutable_dump());
  } else if (result.dump.has_value()) {
    out.set_error(std::string(result.dump->status().message()));
    out.set_error_code(static_cast<int32_t>(result.dump->status().code()));
  }
  out.set_content_hash(result.content_hash);
  out.set_bytes_on_disk(result.bytes_on_disk);
  out.set_bytes_decoded(result.bytes_decoded);
  out.set_read_ns(result.read_ns);
  out.set_decode_ns(result.decode_ns);
  out.set_normalize_ns(result.normalize_ns);
  return out.SerializeAsString();
}

// A summary that cannot be read is its file's error, like a damaged dump.
FileResult FromSummary(const DiscoveredFile& file, std::string_view bytes) {
  FileResult result;
  summary::FileSummary in;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    result.dump = absl::DataLossError("its summary from the worker is not a FileSummary message");
    return result;
  }
  if (in.path() != file.path || in.rank() != file.rank) {
    result.dump = absl::InvalidArgumentError(fmt::format(
        "the worker's summary is of '{}' (rank {}), not of this file", in.path(), in.rank()));
    return result;
  }
  result.content_hash = in.content_hash();
  result.bytes_on_disk = in.bytes_on_disk();
  result.bytes_decoded = in.bytes_decoded();
  result.read_ns = in.read_ns();
  result.decode_ns = in.decode_ns();
  result.normalize_ns = in.normalize_ns();
  if (in.has_dump()) {
    absl::StatusOr<RankDump> dump = FromRankSummary(in.dump(), file.path);
    if (dump.ok() && (dump->path != file.path || dump->rank != file.rank)) {
      dump = absl::InvalidArgumentError("the worker's summary names another file or rank");
    }
    result.dump = std::move(dump);
  } else if (in.result_case() == summary::FileSummary::kError) {
    int code = in.error_code();
    result.dump = absl::Status(
        code > 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown,
        in.error());
  }
  return result;
}

}  // namespace

absl::StatusOr<LoadedTrace> LoadTrace(const std::string& root, const LoadOptions& options) {
  int64_t started = NowNs();
  FR_ASSIGN_OR_RETURN(Discovery discovery, DiscoverDumps(root, options.discover));
  int64_t discover_ns = NowNs() - started;
  std::set<int64_t> contested = ContestedRanks(discovery);
  ReadOptions read = NoNewLinks(options.read);
  const std::vector<DiscoveredFile>& files = discovery.files;
  size_t count = files.size();
  std::vector<FileResult> results(count);
  std::atomic<size_t> done{0};
  RankListPool rank_lists;
  ParallelFor(
      count, options.jobs,
      [&](size_t i) {
        results[i] = LoadDiscovered(files[i], read, contested.contains(files[i].rank));
        KeepCompactly(&rank_lists, &results[i]);
        size_t finished = ++done;
        if (options.progress) options.progress(finished, count);
      },
      options.cancel);
  if (options.cancel != nullptr && options.cancel->load()) {
    return absl::CancelledError("loading was interrupted");
  }
  return Assemble(root, std::move(discovery), std::move(results), discover_ns, started);
}

std::vector<SummaryTask> PlanSummaries(const Discovery& discovery) {
  std::set<int64_t> contested = ContestedRanks(discovery);
  std::vector<SummaryTask> tasks;
  for (const DiscoveredFile& file : discovery.files) {
    tasks.push_back({.file = file, .hash_content = contested.contains(file.rank)});
  }
  return tasks;
}

std::string SummarizeDumpFile(const SummaryTask& task, const ReadOptions& options) {
  return ToSummary(task.file, LoadDiscovered(task.file, NoNewLinks(options), task.hash_content));
}

absl::StatusOr<LoadedTrace> AssembleTrace(const std::string& root, Discovery discovery,
                                          const std::vector<std::string>& summaries, int jobs) {
  int64_t started = NowNs();
  if (summaries.size() != discovery.files.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} summaries for {} files: one per discovered file, in discovery's order",
                    summaries.size(), discovery.files.size()));
  }
  std::vector<FileResult> results(summaries.size());
  RankListPool rank_lists;
  // Reading summaries back is most of what is left to do here once the workers are done.
  ParallelFor(summaries.size(), jobs, [&](size_t i) {
    results[i] = FromSummary(discovery.files[i], summaries[i]);
    KeepCompactly(&rank_lists, &results[i]);
  });
  return Assemble(root, std::move(discovery), std::move(results), 0, started);
}

absl::StatusOr<LoadedTrace> LoadTraceFromBytes(
    const std::map<int64_t, std::shared_ptr<const Buffer>>& dumps, const LoadOptions& options) {
  int64_t started = NowNs();
  std::vector<int64_t> ranks;
  std::vector<std::string> names;
  std::vector<std::shared_ptr<const Buffer>> buffers;
  for (const auto& [rank, bytes] : dumps) {
    ranks.push_back(rank);
    names.push_back(fmt::format("<rank {} bytes>", rank));
    buffers.push_back(bytes);
  }
  std::vector<FileResult> results(ranks.size());
  RankListPool rank_lists;
  ParallelFor(
      ranks.size(), options.jobs,
      [&](size_t i) {
        int64_t read_started = NowNs();
        try {
          results[i] = DecodeAndNormalize(ReadInputBytes(buffers[i], options.read), ranks[i],
                                          names[i], read_started, /*hash_content=*/false);
        } catch (const std::bad_alloc&) {
          results[i] = FileResult();
          results[i].dump = OutOfMemory(names[i]);
        }
        KeepCompactly(&rank_lists, &results[i]);
      },
      options.cancel);
  if (options.cancel != nullptr && options.cancel->load()) {
    return absl::CancelledError("loading was interrupted");
  }
  // The caller chose each rank: whatever is not a readable dump is rejected under it.
  LoadedTrace trace;
  trace.ranks.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    AddTimings(results[i], &trace);
    if (!results[i].dump.has_value()) continue;
    if (results[i].dump->ok()) {
      trace.ranks.push_back(**std::move(results[i].dump));
    } else {
      trace.rejected.push_back(
          {names[i], ranks[i],
           std::string(WithPath(results[i].dump->status(), names[i]).message())});
    }
  }
  SettleWorld(/*check_own_rank=*/false, &trace);
  CollectVersions(&trace);
  trace.timings.wall_ns = NowNs() - started;
  return trace;
}

}  // namespace fr
