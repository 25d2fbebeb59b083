#include "fr/report/load_summary.h"

#include <algorithm>
#include <map>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "fmt/format.h"
#include "fr/base/utf8.h"
#include "fr/index/job_index.h"
#include "fr/report/report_format.h"

namespace fr {
namespace {

// A process group as the job knows it: identity is name plus rank set (split groups share names).
struct GroupKey {
  std::string name;
  std::vector<int64_t> ranks;
  bool operator<(const GroupKey& other) const {
    return std::tie(name, ranks) < std::tie(other.name, other.ranks);
  }
};

struct GroupView {
  std::string desc;
  bool ranks_known = false;
  std::vector<int64_t> seen_by;  // ranks whose dump names the group
  int64_t entries = 0;
};

// A group's identity as seen in one dump, pointing into that dump (which outlives the summary), so
// that finding the job-wide group of each dump's groups copies no rank lists: every dump names the
// world group, thousands of ranks long.
struct GroupKeyView {
  std::string_view name;
  std::span<const int64_t> ranks;
  bool operator==(const GroupKeyView& other) const {
    return name == other.name &&
           std::equal(ranks.begin(), ranks.end(), other.ranks.begin(), other.ranks.end());
  }
  // Hashes the name and a sample of the ranks (size, first, middle, last): groups of one job
  // differ there, and hashing whole world-size lists per dump would cost more than the rest of
  // the summary. Equal samples only cost a full compare.
  template <typename H>
  friend H AbslHashValue(H state, const GroupKeyView& key) {
    size_t n = key.ranks.size();
    state = H::combine(std::move(state), absl::string_view(key.name.data(), key.name.size()), n);
    if (n == 0) return state;
    return H::combine(std::move(state), key.ranks[0], key.ranks[n / 2], key.ranks[n - 1]);
  }
};

std::map<GroupKey, GroupView> CollectGroups(const LoadedTrace& trace) {
  absl::flat_hash_map<GroupKeyView, GroupView> by_view;
  for (const RankDump& dump : trace.ranks) {
    for (const ProcessGroup& group : dump.groups) {
      GroupView& view = by_view[GroupKeyView{dump.strings.view(group.name), group.ranks}];
      if (view.desc.empty()) view.desc = std::string(dump.strings.view(group.desc));
      view.ranks_known = group.ranks_known;
      view.seen_by.push_back(dump.rank);
      view.entries += group.entry_count;
    }
  }
  std::map<GroupKey, GroupView> groups;
  for (auto& [key, view] : by_view) {
    groups.emplace(GroupKey{std::string(key.name), {key.ranks.begin(), key.ranks.end()}},
                   std::move(view));
  }
  return groups;
}

std::vector<std::pair<GroupKey, GroupView>> SortedGroups(const LoadedTrace& trace) {
  auto groups = CollectGroups(trace);
  std::vector<std::pair<GroupKey, GroupView>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.first.name != b.first.name) return GroupNameLess(a.first.name, b.first.name);
    return a.first.ranks < b.first.ranks;
  });
  return sorted;
}

}  // namespace

std::string FormatLoadSummaryText(const LoadedTrace& trace, const std::string& source) {
  std::string out;
  std::vector<int64_t> loaded;
  int64_t total_entries = 0;
  for (const RankDump& dump : trace.ranks) {
    loaded.push_back(dump.rank);
    total_entries += static_cast<int64_t>(dump.entries.size());
  }
  size_t expected =
      loaded.size() + trace.missing_ranks.size() + trace.rejected.size() + trace.conflicts.size();
  out += fmt::format("fr-analyze: loaded {} of {} ranks from {}\n", loaded.size(), expected,
                     TerminalSafe(source));
  out += fmt::format("  ranks loaded:   {}\n", loaded.empty() ? "none" : FormatRankSet(loaded));
  out += fmt::format("  ranks missing:  {}\n",
                     trace.missing_ranks.empty() ? "none" : FormatRankSet(trace.missing_ranks));
  if (trace.claimed_ranks_count > 0) {
    out += fmt::format(
        "  ranks claimed:  {} that only one dump's process groups list, not counted "
        "(from {})\n",
        trace.claimed_ranks_count, FormatRankSet(trace.claimed_ranks));
  }
  for (const OtherJob& job : trace.other_jobs) {
    out += fmt::format("  other job:      {} ({} ranks), set aside: `fr-analyze {}` reads it\n",
                       TerminalSafe(fmt::format("{}", fmt::join(job.folders, ", "))), job.ranks,
                       TerminalSafe(job.folders.front()));
  }
  out += fmt::format("  versions:       {}\n",
                     trace.versions.empty()
                         ? "none"
                         : TerminalSafe(fmt::format("{}", fmt::join(trace.versions, ", "))));
  out += fmt::format("  bytes:          {} on disk, {} decoded\n", trace.bytes_on_disk,
                     trace.bytes_decoded);
  if (!trace.rejected.empty()) {
    out += fmt::format("\nrejected files ({}):\n", trace.rejected.size());
    for (const RejectedFile& file : trace.rejected) {
      out += fmt::format("  {}\n", TerminalSafe(file.error));
    }
  }
  if (!trace.conflicts.empty()) {
    out += fmt::format("\nranks with several files ({}), none of them used:\n",
                       trace.conflicts.size());
    for (const RankConflict& conflict : trace.conflicts) {
      out += fmt::format("  rank {}: {}\n", conflict.rank,
                         TerminalSafe(fmt::format("{}", fmt::join(conflict.paths, ", "))));
    }
  }
  // Dumps set aside for a rank (another copy preferred, or a rank the job does not have) apart
  // from files that are not dumps at all.
  std::vector<const SkippedFile*> set_aside, not_dumps;
  for (const SkippedFile& file : trace.skipped) {
    (file.rank >= 0 ? set_aside : not_dumps).push_back(&file);
  }
  if (!set_aside.empty()) {
    out += fmt::format("\ndumps set aside ({}):\n", set_aside.size());
    for (const SkippedFile* file : set_aside) {
      out += fmt::format("  rank {}: {}: {}\n", file->rank, TerminalSafe(file->path),
                         TerminalSafe(file->reason));
    }
  }
  if (!not_dumps.empty()) {
    out += fmt::format("\nskipped files ({}), not dumps:\n", not_dumps.size());
    for (const SkippedFile* file : not_dumps) {
      out += fmt::format("  {}: {}\n", TerminalSafe(file->path), TerminalSafe(file->reason));
    }
  }
  auto groups = SortedGroups(trace);
  if (!groups.empty()) {
    out += fmt::format("\nprocess groups ({}):\n", groups.size());
    for (const auto& [key, view] : groups) {
      std::string members = view.ranks_known ? fmt::format("{} ranks [{}]", key.ranks.size(),
                                                           FormatRankSet(key.ranks))
                                             : std::string("ranks unknown");
      out += fmt::format("  {:<6} {:<12} {}; in {} dumps, {} entries\n", TerminalSafe(key.name),
                         view.desc.empty() ? "-" : TerminalSafe(view.desc), members,
                         view.seen_by.size(), view.entries);
    }
  }
  if (!trace.ranks.empty()) {
    auto [fewest, most] = std::minmax_element(
        trace.ranks.begin(), trace.ranks.end(),
        [](const RankDump& a, const RankDump& b) { return a.entries.size() < b.entries.size(); });
    out +=
        fmt::format("\nentries: {} in all; fewest {} (rank {}), most {} (rank {})\n", total_entries,
                    fewest->entries.size(), fewest->rank, most->entries.size(), most->rank);
    // Per-rank lines help on small jobs and drown large ones.
    if (trace.ranks.size() <= 16) {
      for (const RankDump& dump : trace.ranks) {
        out +=
            fmt::format("  rank {:<4} {:>6} entries  version {:<5} {} groups  stacks {}\n",
                        dump.rank, dump.entries.size(), dump.version.empty() ? "-" : dump.version,
                        dump.groups.size(), dump.has_stacks ? "yes" : "no");
      }
    }
  }
  return out;
}

report::LoadSummary BuildLoadSummary(const LoadedTrace& trace, const std::string& source) {
  report::LoadSummary summary;
  summary.set_source(ValidUtf8(source));
  for (const RankDump& dump : trace.ranks)
    summary.add_ranks_loaded(static_cast<int32_t>(dump.rank));
  for (int64_t rank : trace.missing_ranks) summary.add_ranks_missing(static_cast<int32_t>(rank));
  for (int64_t rank : trace.claimed_ranks) summary.add_ranks_claimed(static_cast<int32_t>(rank));
  summary.set_ranks_claimed_count(trace.claimed_ranks_count);
  for (const OtherJob& job : trace.other_jobs) {
    report::OtherJob* other = summary.add_other_jobs();
    for (const std::string& folder : job.folders) other->add_folders(ValidUtf8(folder));
    other->set_ranks(job.ranks);
    other->set_newest_ns(job.newest_ns);
  }
  for (const std::string& version : trace.versions) summary.add_versions(ValidUtf8(version));
  for (const RejectedFile& file : trace.rejected) {
    report::RejectedFile* out = summary.add_files_rejected();
    out->set_path(ValidUtf8(file.path));
    out->set_rank(static_cast<int32_t>(file.rank));
    out->set_error(ValidUtf8(file.error));
  }
  for (const SkippedFile& file : trace.skipped) {
    report::SkippedFile* out = summary.add_files_skipped();
    out->set_path(ValidUtf8(file.path));
    out->set_reason(ValidUtf8(file.reason));
  }
  for (const RankConflict& conflict : trace.conflicts) {
    report::RankConflict* out = summary.add_rank_conflicts();
    out->set_rank(static_cast<int32_t>(conflict.rank));
    for (const std::string& path : conflict.paths) out->add_paths(ValidUtf8(path));
  }
  for (const auto& [key, view] : SortedGroups(trace)) {
    report::LoadedGroup* out = summary.add_process_groups();
    out->set_name(ValidUtf8(key.name));
    out->set_desc(ValidUtf8(view.desc));
    for (int64_t rank : key.ranks) out->add_ranks(static_cast<int32_t>(rank));
    out->set_ranks_known(view.ranks_known);
    for (int64_t rank : view.seen_by) out->add_seen_by(static_cast<int32_t>(rank));
    out->set_entries(view.entries);
  }
  for (const RankDump& dump : trace.ranks) {
    report::LoadedRank* out = summary.add_per_rank();
    out->set_rank(static_cast<int32_t>(dump.rank));
    out->set_path(ValidUtf8(dump.path));
    out->set_version(ValidUtf8(dump.version));
    out->set_entries(static_cast<int64_t>(dump.entries.size()));
    out->set_groups(static_cast<int32_t>(dump.groups.size()));
    out->set_has_stacks(dump.has_stacks);
  }
  summary.set_bytes_on_disk(static_cast<int64_t>(trace.bytes_on_disk));
  summary.set_bytes_decoded(static_cast<int64_t>(trace.bytes_decoded));
  return summary;
}

absl::StatusOr<std::string> FormatLoadSummaryJson(const LoadedTrace& trace,
                                                  const std::string& source) {
  return FormatProtoJson(BuildLoadSummary(trace, source));
}

}  // namespace fr
