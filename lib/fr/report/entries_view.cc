#include "fr/report/entries_view.h"

#include <algorithm>
#include <set>

#include "fmt/format.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"

namespace fr {
namespace {

constexpr int kColumnWidth = 24;

std::string_view ShortState(EntryState state) {
  switch (state) {
    case EntryState::kCompleted:
      return "done";
    case EntryState::kStarted:
      return "started";
    case EntryState::kScheduled:
      return "sched";
    case EntryState::kUnknown:
      return "?";
  }
  return "?";
}

bool Selected(const JobGroup& group, const EntriesViewOptions& options) {
  if (options.pg_filter.empty()) return true;
  return std::any_of(options.pg_filter.begin(), options.pg_filter.end(),
                     [&](const std::string& f) { return f == group.name || f == group.desc; });
}

}  // namespace

std::string FormatEntriesView(const LoadedTrace& trace, const JobIndex& index,
                              const EntriesViewOptions& options) {
  std::string out;
  std::set<int64_t> wanted(options.ranks.begin(), options.ranks.end());
  for (const JobGroup& group : index.groups) {
    if (!Selected(group, options)) continue;
    std::vector<const GroupMember*> columns;
    for (const GroupMember& member : group.members) {
      if (!wanted.empty() ? wanted.contains(member.rank)
                          : static_cast<int>(columns.size()) < options.max_columns) {
        columns.push_back(&member);
      }
    }
    if (columns.empty()) continue;
    std::set<int64_t> seqs;
    for (const GroupMember* member : columns) {
      for (const CollectiveUnit& unit : member->units) seqs.insert(unit.seq);
    }
    std::string label = TerminalSafe(
        group.desc.empty() ? group.name : fmt::format("{} ({})", group.name, group.desc));
    out += fmt::format("group {} [{}]", label, FormatRankSet(group.ranks));
    if (static_cast<int>(group.members.size()) > static_cast<int>(columns.size())) {
      out += fmt::format(" showing {} of {} ranks", columns.size(), group.members.size());
    }
    out += "\n";
    out += fmt::format("{:<8}", "seq");
    for (const GroupMember* member : columns) {
      out += fmt::format("{:<{}}", fmt::format("rank {}", member->rank), kColumnWidth);
    }
    out += "\n";
    std::vector<int64_t> rows(seqs.begin(), seqs.end());
    if (static_cast<int>(rows.size()) > options.last_seqs) {
      rows.erase(rows.begin(), rows.end() - options.last_seqs);
    }
    for (int64_t seq : rows) {
      out += fmt::format("{:<8}", fmt::format("#{}", seq));
      for (const GroupMember* member : columns) {
        std::string cell = "-";
        if (member->dump < 0) {
          cell = member->dump_holds_none ? "-" : "no dump";
        } else {
          auto it = std::lower_bound(member->units.begin(), member->units.end(), seq,
                                     [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
          if (it != member->units.end() && it->seq == seq) {
            const RankDump& dump = trace.ranks[member->dump];
            cell = fmt::format(
                "{} {}", TerminalSafe(dump.strings.view(dump.entries[it->first_entry].op_name)),
                ShortState(it->state));
            if (it->entry_count > 1) cell += fmt::format(" x{}", it->entry_count);
          } else if (member->first_seq_in_buffer != kUnknown && seq < member->first_seq_in_buffer) {
            cell = "(rolled out)";
          }
        }
        if (cell.size() >= kColumnWidth) cell = cell.substr(0, kColumnWidth - 2) + "~";
        out += fmt::format("{:<{}}", cell, kColumnWidth);
      }
      out += "\n";
    }
    out += "\n";
  }
  if (out.empty()) out = "no process group matches\n";
  return out;
}

}  // namespace fr
