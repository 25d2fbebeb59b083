// Which file is each rank's dump, and which ranks the job has. Of several files for one rank,
// identical ones are one dump and otherwise the newest by its own records is used; files that are
// no dump are skipped and damaged ones rejected only when the rank has no readable dump. Then the
// world: which ranks the readable dumps vouch for, which are only claimed, which files are not
// ranks of this job at all, and which ranks are missing.
#include <algorithm>
#include <compare>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/load/load_internal.h"

namespace fr::load_internal {
namespace {

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

}  // namespace

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

}  // namespace fr::load_internal
