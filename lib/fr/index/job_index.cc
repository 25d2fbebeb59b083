#include "fr/index/job_index.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace fr {
namespace {

bool NumericName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit);
}

bool GroupLess(const JobGroup& a, const JobGroup& b) {
  if (a.name != b.name) return GroupNameLess(a.name, b.name);
  return a.ranks < b.ranks;
}

int Rank(EntryState state) {
  switch (state) {
    case EntryState::kScheduled:
      return 0;
    case EntryState::kStarted:
      return 1;
    case EntryState::kCompleted:
      return 2;
    case EntryState::kUnknown:
      return -1;
  }
  return -1;
}

// Adds entry `i` of `dump` to its group's member timeline.
void AddEntry(const RankDump& dump, uint32_t i, GroupMember* member) {
  const Entry& entry = dump.entries[i];
  if (IsPointToPoint(entry.op)) {
    member->p2p_entries.push_back(i);
    return;
  }
  // p2p batches close with a "coalesced" entry that carries no collective of its own.
  if (entry.op == OpKind::kCoalesced && entry.is_p2p) return;
  if (entry.collective_seq_id == kUnknown) return;
  if (!member->units.empty() && member->units.back().seq == entry.collective_seq_id) {
    CollectiveUnit& unit = member->units.back();
    if (unit.entry_count < std::numeric_limits<uint16_t>::max()) ++unit.entry_count;
    if (Rank(entry.state) < Rank(unit.state)) unit.state = entry.state;
    return;
  }
  CollectiveUnit unit;
  unit.seq = entry.collective_seq_id;
  unit.first_entry = i;
  unit.entry_count = 1;
  unit.state = entry.state;
  member->units.push_back(unit);
}

// Progress of a member once all its entries are in.
void FinishMember(const RankDump& dump, GroupMember* member) {
  // A p2p op leaves collective_seq_id at the group's last collective, so units can arrive out of
  // order only in damaged dumps; keep them sorted for the matchers.
  std::stable_sort(member->units.begin(), member->units.end(),
                   [](const CollectiveUnit& a, const CollectiveUnit& b) { return a.seq < b.seq; });
  const ProcessGroup& group = dump.groups[member->local_group];
  if (!member->units.empty()) {
    member->first_seq_in_buffer = member->units.front().seq;
    member->last_enqueued = member->units.back().seq;
  }
  for (const CollectiveUnit& unit : member->units) {
    if (unit.state == EntryState::kCompleted) {
      member->last_completed = std::max(member->last_completed, unit.seq);
      member->last_started = std::max(member->last_started, unit.seq);
    } else if (unit.state == EntryState::kStarted) {
      member->last_started = std::max(member->last_started, unit.seq);
    }
  }
  if (group.has_status) {
    // pg_status knows what rolled out of the ring buffer (and, with entries excluded, everything).
    member->last_enqueued = std::max(member->last_enqueued, group.status.last_enqueued_collective);
    member->last_started = std::max(member->last_started, group.status.last_started_collective);
    member->last_completed =
        std::max(member->last_completed, group.status.last_completed_collective);
  }
}

}  // namespace

bool GroupNameLess(const std::string& a, const std::string& b) {
  bool a_num = NumericName(a), b_num = NumericName(b);
  if (a_num != b_num) return a_num;
  if (a_num && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

JobIndex BuildJobIndex(const LoadedTrace& trace) {
  JobIndex index;
  // Identity is name plus rank set; dumps that do not know a group's ranks join it by name.
  std::map<std::pair<std::string, std::vector<int64_t>>, uint32_t> by_identity;
  std::map<std::string, uint32_t> unknown_ranks_by_name;
  index.group_of_local.resize(trace.ranks.size());
  for (size_t d = 0; d < trace.ranks.size(); ++d) {
    const RankDump& dump = trace.ranks[d];
    index.entries += static_cast<int64_t>(dump.entries.size());
    for (const ProcessGroup& group : dump.groups) {
      std::string name(dump.strings.view(group.name));
      uint32_t g;
      if (group.ranks_known) {
        auto [it, inserted] = by_identity.try_emplace({name, group.ranks},
                                                      static_cast<uint32_t>(index.groups.size()));
        if (inserted) {
          JobGroup job_group;
          job_group.name = name;
          job_group.desc = std::string(dump.strings.view(group.desc));
          job_group.ranks = group.ranks;
          job_group.ranks_known = true;
          index.groups.push_back(std::move(job_group));
        }
        g = it->second;
      } else {
        auto [it, inserted] =
            unknown_ranks_by_name.try_emplace(name, static_cast<uint32_t>(index.groups.size()));
        if (inserted) {
          JobGroup job_group;
          job_group.name = name;
          job_group.desc = std::string(dump.strings.view(group.desc));
          index.groups.push_back(std::move(job_group));
        }
        g = it->second;
        index.groups[g].ranks.push_back(dump.rank);
      }
      index.group_of_local[d].push_back(g);
    }
  }
  // Members: one per rank of the group; a dump that is not loaded leaves dump = -1.
  absl::flat_hash_map<int64_t, int32_t> dump_of_rank;
  for (size_t d = 0; d < trace.ranks.size(); ++d) {
    dump_of_rank[trace.ranks[d].rank] = static_cast<int32_t>(d);
  }
  std::vector<absl::flat_hash_map<int64_t, uint32_t>> member_of_rank(index.groups.size());
  for (size_t g = 0; g < index.groups.size(); ++g) {
    JobGroup& group = index.groups[g];
    if (!group.ranks_known) std::sort(group.ranks.begin(), group.ranks.end());
    group.members.resize(group.ranks.size());
    for (uint32_t m = 0; m < group.ranks.size(); ++m) {
      group.members[m].rank = group.ranks[m];
      member_of_rank[g].emplace(group.ranks[m], m);
    }
  }
  // One pass over each dump's entries, dispatching by local group.
  std::vector<GroupMember*> member_of_local;
  for (size_t d = 0; d < trace.ranks.size(); ++d) {
    const RankDump& dump = trace.ranks[d];
    member_of_local.assign(index.group_of_local[d].size(), nullptr);
    for (uint32_t local = 0; local < member_of_local.size(); ++local) {
      uint32_t g = index.group_of_local[d][local];
      auto it = member_of_rank[g].find(dump.rank);
      if (it == member_of_rank[g].end()) continue;  // a dump naming a group it is not in
      GroupMember& member = index.groups[g].members[it->second];
      member.dump = static_cast<int32_t>(d);
      member.local_group = local;
      member_of_local[local] = &member;
    }
    for (uint32_t i = 0; i < dump.entries.size(); ++i) {
      GroupMember* member = member_of_local[dump.entries[i].group];
      if (member != nullptr) AddEntry(dump, i, member);
    }
    for (GroupMember* member : member_of_local) {
      if (member != nullptr) FinishMember(dump, member);
    }
  }
  // Sort groups and remap group_of_local accordingly.
  std::vector<uint32_t> order(index.groups.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return GroupLess(index.groups[a], index.groups[b]); });
  std::vector<uint32_t> new_position(order.size());
  std::vector<JobGroup> sorted;
  sorted.reserve(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_position[order[i]] = i;
    sorted.push_back(std::move(index.groups[order[i]]));
  }
  index.groups = std::move(sorted);
  for (auto& locals : index.group_of_local) {
    for (uint32_t& g : locals) g = new_position[g];
  }
  return index;
}

}  // namespace fr
