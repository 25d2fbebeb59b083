#include "fr/report/collective_table.h"

#include <algorithm>
#include <map>
#include <set>

namespace fr {
namespace {

// How far a member got in a group at `seq`, from its buffer or, when the seq rolled out of the
// buffer, from its progress counters.
struct MemberProgress {
  bool issued = false;
  bool started = false;
  bool completed = false;
};

MemberProgress ProgressAt(const GroupMember& member, int64_t seq, const CollectiveUnit* unit) {
  MemberProgress progress;
  if (unit != nullptr) {
    progress.issued = true;
    progress.started = unit->state == EntryState::kStarted || unit->state == EntryState::kCompleted;
    progress.completed = unit->state == EntryState::kCompleted;
    // Without timing a dump never says "started"; completion implies it, and so does a later
    // started or completed seq in the same group.
    if (!progress.started && member.last_started != kUnknown && member.last_started >= seq) {
      progress.started = true;
    }
    return progress;
  }
  progress.issued = member.last_enqueued != kUnknown && member.last_enqueued >= seq;
  progress.completed = member.last_completed != kUnknown && member.last_completed >= seq;
  progress.started =
      progress.completed || (member.last_started != kUnknown && member.last_started >= seq);
  progress.issued = progress.issued || progress.started;
  return progress;
}

const CollectiveUnit* FindUnit(const GroupMember& member, int64_t seq) {
  auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                             [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
  if (it == member.units.end() || it->seq != seq) return nullptr;
  return &*it;
}

}  // namespace

std::vector<CollectiveRow> BuildCollectiveTable(const LoadedTrace& trace, const JobIndex& index) {
  std::vector<CollectiveRow> rows;
  for (uint32_t g = 0; g < index.groups.size(); ++g) {
    const JobGroup& group = index.groups[g];
    std::set<int64_t> seqs;
    for (const GroupMember& member : group.members) {
      for (const CollectiveUnit& unit : member.units) {
        if (unit.seq != kUnknown) seqs.insert(unit.seq);
      }
    }
    for (int64_t seq : seqs) {
      CollectiveRow row;
      row.group = g;
      row.seq = seq;
      std::map<std::string_view, int> op_votes;
      for (const GroupMember& member : group.members) {
        if (member.dump < 0) {
          (member.dump_holds_none ? row.not_issued : row.dump_missing).push_back(member.rank);
          continue;
        }
        const CollectiveUnit* unit = FindUnit(member, seq);
        if (unit != nullptr) {
          const RankDump& dump = trace.ranks[member.dump];
          ++op_votes[dump.strings.view(dump.entries[unit->first_entry].op_name)];
        }
        MemberProgress progress = ProgressAt(member, seq, unit);
        if (!progress.issued) {
          row.not_issued.push_back(member.rank);
          continue;
        }
        row.issued.push_back(member.rank);
        if (progress.started) row.started.push_back(member.rank);
        if (progress.completed) row.completed.push_back(member.rank);
      }
      int best = 0;
      for (const auto& [op, votes] : op_votes) {
        if (votes > best) {
          best = votes;
          row.op = std::string(op);
        }
      }
      for (auto* ranks :
           {&row.issued, &row.started, &row.completed, &row.not_issued, &row.dump_missing}) {
        std::sort(ranks->begin(), ranks->end());
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace fr
