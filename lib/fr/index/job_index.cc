#include "fr/index/job_index.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "fr/base/parallel_for.h"

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
  bool by_retirement = entry.state != EntryState::kCompleted && entry.retired;
  EntryState state = by_retirement ? EntryState::kCompleted : entry.state;
  if (!member->units.empty() && member->units.back().seq == entry.collective_seq_id) {
    CollectiveUnit& unit = member->units.back();
    if (unit.entry_count < std::numeric_limits<uint16_t>::max()) ++unit.entry_count;
    if (Rank(state) < Rank(unit.state)) unit.state = state;
    if (by_retirement) unit.retired_without_completion = true;
    return;
  }
  CollectiveUnit unit;
  unit.seq = entry.collective_seq_id;
  unit.first_entry = i;
  unit.entry_count = 1;
  unit.state = state;
  unit.retired_without_completion = by_retirement;
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

// Ranks of the job that left no file: those the dumps imply (LoadedTrace::missing_ranks), and
// those the logs say died that have no file at all. The second kind matters when the dead rank
// is the highest: Gloo's dumps list no group members, so no dump names a rank above the ones
// loaded. Ascending.
std::vector<int64_t> RanksWithoutFile(const LoadedTrace& trace, const std::vector<int64_t>& died) {
  std::set<int64_t> without(trace.missing_ranks.begin(), trace.missing_ranks.end());
  std::set<int64_t> with_file;
  for (const RankDump& dump : trace.ranks) with_file.insert(dump.rank);
  for (const RejectedFile& file : trace.rejected) with_file.insert(file.rank);
  for (const RankConflict& conflict : trace.conflicts) with_file.insert(conflict.rank);
  for (int64_t rank : died) {
    if (rank >= 0 && !with_file.contains(rank)) without.insert(rank);
  }
  return {without.begin(), without.end()};
}

// True when `member` issued a different op than `op` as collective `seq`.
bool IssuedOtherOp(const RankDump& dump, const GroupMember& member, int64_t seq, OpKind op) {
  auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                             [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
  return it != member.units.end() && it->seq == seq && dump.entries[it->first_entry].op != op;
}

// True when `member` recorded collective `seq` as completed (not merely retired).
bool CompletedUnit(const GroupMember& member, int64_t seq) {
  auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                             [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
  return it != member.units.end() && it->seq == seq && it->state == EntryState::kCompleted &&
         !it->retired_without_completion;
}

// True when `member` recorded anything after its collective `seq`: for a barrier, which blocks
// the calling thread until it completes (dist.barrier waits on its work, on NCCL as on Gloo), the
// proof that it completed.
bool WentOnAfter(const RankDump& dump, const GroupMember& member, int64_t seq) {
  auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                             [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
  return it != member.units.end() && it->seq == seq &&
         it->first_entry + it->entry_count < dump.entries.size();
}

// Collectives that complete on one member only once every member has contributed.
bool NeedsEveryMember(OpKind op) {
  return op == OpKind::kAllReduce || op == OpKind::kAllGather || op == OpKind::kReduceScatter ||
         op == OpKind::kAllToAll || op == OpKind::kBarrier;
}

// Groups whose ranks no dump states (Gloo writes no usable pg_config), by kind (one desc: the
// TP, PP or DP groups of a job), kinds of at least two groups only. Such groups have as members
// the dumps that name them, so a rank that left no file is in none of them.
std::map<std::string, std::vector<JobGroup*>> GroupsOfUnknownRanksByKind(
    std::vector<JobGroup>* groups) {
  std::map<std::string, std::vector<JobGroup*>> by_desc;
  for (JobGroup& group : *groups) {
    if (!group.ranks_known && !group.desc.empty() && group.desc != "undefined") {
      by_desc[group.desc].push_back(&group);
    }
  }
  std::erase_if(by_desc, [](const auto& kind) { return kind.second.size() < 2; });
  return by_desc;
}

// Groups of one kind partition the ranks into groups of one size: the groups of `siblings`
// smaller than that size, and by how many members in all (`short_by`). Empty when the sizes do
// not fit one partition with gaps (a group larger than the most common size).
std::vector<JobGroup*> ShortGroups(const std::vector<JobGroup*>& siblings, size_t* short_by) {
  std::map<size_t, int> sizes;
  for (const JobGroup* g : siblings) ++sizes[g->ranks.size()];
  // The most common size; on a tie the larger (two DP groups of a 4-rank job, one short of the
  // rank that left no file: sizes 1 and 2, the full size is 2).
  size_t full = std::max_element(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
                  return a.second < b.second || (a.second == b.second && a.first < b.first);
                })->first;
  std::vector<JobGroup*> short_groups;
  *short_by = 0;
  for (JobGroup* g : siblings) {
    if (g->ranks.size() > full) {
      *short_by = 0;
      return {};
    }
    if (g->ranks.size() < full) {
      short_groups.push_back(g);
      *short_by += full - g->ranks.size();
    }
  }
  return short_groups;
}

// A group that is short by exactly as many ranks as are in no group of its kind gets them: ranks
// that left no file, and loaded ranks that never issued an op of that kind (a rank that raised
// before its first DP all_reduce names no DP group, while its DP partner waits there alone).
void InferMembersFromSiblings(const LoadedTrace& trace, const std::vector<int64_t>& without_file,
                              std::vector<JobGroup>* groups) {
  std::set<int64_t> candidates(without_file.begin(), without_file.end());
  for (const RankDump& dump : trace.ranks) candidates.insert(dump.rank);
  // A rank whose file could not be read (truncated, corrupt) is a rank of the job all the same:
  // the hole in its groups is its, not a rank above the highest that dumped.
  for (const RejectedFile& file : trace.rejected) {
    if (file.rank >= 0) candidates.insert(file.rank);
  }
  for (auto& [desc, siblings] : GroupsOfUnknownRanksByKind(groups)) {
    std::set<int64_t> covered;
    for (const JobGroup* g : siblings) covered.insert(g->ranks.begin(), g->ranks.end());
    std::vector<int64_t> unplaced;
    for (int64_t r : candidates) {
      if (!covered.contains(r)) unplaced.push_back(r);
    }
    if (unplaced.empty()) continue;
    size_t short_by = 0;
    std::vector<JobGroup*> short_groups = ShortGroups(siblings, &short_by);
    // Only an unambiguous placement: one short group, short by exactly the unplaced ranks.
    if (short_groups.size() != 1 || short_by != unplaced.size()) continue;
    JobGroup* g = short_groups.front();
    g->ranks.insert(g->ranks.end(), unplaced.begin(), unplaced.end());
    g->ranks_inferred = true;
  }
}

// Groups of one kind that a mesh built (torch's DeviceMesh, Megatron's parallel state) are
// arithmetic progressions of one stride: TP groups {0,1}, {2,3}; DP groups {0,4}, {1,5}. When
// every full group of a kind is one of stride d, a short group is completed along d, where
// exactly one placement puts its missing members on ranks no other group of the kind holds.
// Returns the ranks it added that no dump holds (ranks that left no file). Several short groups
// are completed each on its own: which group lacks which rank follows from the stride, not from
// a guess about which rank died. Nothing is completed when the groups are not one mesh's.
std::vector<int64_t> CompleteRegularGroups(const LoadedTrace& trace,
                                           std::vector<JobGroup>* groups) {
  std::set<int64_t> loaded;
  for (const RankDump& dump : trace.ranks) loaded.insert(dump.rank);
  for (const RejectedFile& file : trace.rejected) loaded.insert(file.rank);  // a file all the same
  std::map<std::string, std::vector<JobGroup*>> kinds = GroupsOfUnknownRanksByKind(groups);
  // A mesh's dimensions are orthogonal: groups of two kinds share at most one rank. Groups that
  // are not one mesh's say nothing about strides.
  std::map<int64_t, std::vector<const JobGroup*>> groups_of_rank;
  for (const auto& [desc, siblings] : kinds) {
    for (const JobGroup* g : siblings) {
      for (int64_t r : g->ranks) groups_of_rank[r].push_back(g);
    }
  }
  std::map<std::pair<const JobGroup*, const JobGroup*>, int> shared;
  for (const auto& [rank, of_rank] : groups_of_rank) {
    for (size_t i = 0; i < of_rank.size(); ++i) {
      for (size_t j = i + 1; j < of_rank.size(); ++j) {
        if (of_rank[i]->desc == of_rank[j]->desc) continue;
        if (++shared[{std::min(of_rank[i], of_rank[j]), std::max(of_rank[i], of_rank[j])}] > 1) {
          return {};
        }
      }
    }
  }
  std::set<int64_t> added_without_file;
  for (auto& [desc, siblings] : kinds) {
    size_t full = 0;
    for (const JobGroup* g : siblings) full = std::max(full, g->ranks.size());
    if (full < 2) continue;
    // The stride every full group shares, and the members of the kind.
    int64_t stride = 0;
    bool regular = true;
    std::set<int64_t> covered;
    for (const JobGroup* g : siblings) {
      std::vector<int64_t> ranks = g->ranks;
      std::sort(ranks.begin(), ranks.end());
      covered.insert(ranks.begin(), ranks.end());
      for (size_t i = 1; i < ranks.size(); ++i) {
        int64_t d = ranks[i] - ranks[i - 1];
        if (ranks.size() == full && stride == 0) stride = d;
        if (d <= 0 || (stride != 0 && d != stride && ranks.size() == full)) regular = false;
      }
    }
    if (!regular || stride <= 0) continue;
    for (JobGroup* g : siblings) {
      if (g->ranks.empty() || g->ranks.size() >= full) continue;
      std::vector<int64_t> ranks = g->ranks;
      std::sort(ranks.begin(), ranks.end());
      bool fits = true;
      for (size_t i = 1; i < ranks.size(); ++i) fits &= ranks[i] - ranks[i - 1] == stride;
      if (!fits) continue;
      // Each start that keeps the group's members and adds only ranks no sibling holds.
      std::vector<int64_t> placement;
      int placements = 0;
      size_t missing = full - ranks.size();
      for (size_t shift = 0; shift <= missing; ++shift) {
        int64_t start = ranks.front() - static_cast<int64_t>(shift) * stride;
        if (start < 0) break;
        std::vector<int64_t> extra;
        bool free = true;
        for (size_t i = 0; i < full; ++i) {
          int64_t r = start + static_cast<int64_t>(i) * stride;
          if (std::binary_search(ranks.begin(), ranks.end(), r)) continue;
          if (covered.contains(r)) free = false;
          extra.push_back(r);
        }
        if (free && extra.size() == missing) {
          ++placements;
          placement = std::move(extra);
        }
      }
      if (placements != 1) continue;
      for (int64_t r : placement) {
        g->ranks.push_back(r);
        covered.insert(r);
        if (!loaded.contains(r)) added_without_file.insert(r);
      }
      g->ranks_inferred = true;
    }
  }
  return {added_without_file.begin(), added_without_file.end()};
}

// Ranks above every rank the files name that the groups still lack: when each kind of group
// with a gap has exactly one group short, all by the same k members, and every loaded rank is in
// a group of that kind, the job had k ranks above `world_size` that left no file (with Gloo's
// dumps and no logs, nothing else names a dead highest rank, and its peers would seem to wait on
// nothing). Otherwise none: a loaded rank that never issued an op of that kind (it failed before
// its first DP all_reduce) may be the member the gap lacks, and with several short groups which
// group a rank belongs to would be a guess.
std::vector<int64_t> RanksAboveTheHighest(const LoadedTrace& trace, int64_t world_size,
                                          std::vector<JobGroup>* groups) {
  size_t k = 0;
  for (auto& [desc, siblings] : GroupsOfUnknownRanksByKind(groups)) {
    size_t short_by = 0;
    std::vector<JobGroup*> short_groups = ShortGroups(siblings, &short_by);
    if (short_groups.empty()) continue;
    if (short_groups.size() != 1 || (k != 0 && short_by != k)) return {};
    std::set<int64_t> covered;
    for (const JobGroup* g : siblings) covered.insert(g->ranks.begin(), g->ranks.end());
    for (const RankDump& dump : trace.ranks) {
      if (!covered.contains(dump.rank)) return {};
    }
    k = short_by;
  }
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < k; ++i) ranks.push_back(world_size + static_cast<int64_t>(i));
  return ranks;
}

// A retired op that some present member never issued cannot have completed once it is older
// than its timeout at that member's dump: it failed (Gloo retires ops that time out). Such units
// become the member's pending head again.
int64_t ReopenFailedRetirements(const LoadedTrace& trace, const DumpTimes& times,
                                const JobIndex& index, JobGroup* group) {
  // A member that left no readable dump may have died or stopped, and one the logs say died
  // did: the op its peers were in then ended in an error (Gloo retires it like a completed one),
  // unless a peer went past it (below). A file that could not be read says nothing of what its
  // rank did, so it cannot vouch for the op either.
  auto died = [&](const GroupMember& m) {
    return m.dump < 0 ||
           std::binary_search(index.died_ranks.begin(), index.died_ranks.end(), m.rank);
  };
  int64_t reopened = 0;
  for (GroupMember& member : group->members) {
    if (member.dump < 0) continue;
    const RankDump& dump = trace.ranks[member.dump];
    int64_t first_failed = kUnknown;
    for (auto unit = member.units.rbegin(); unit != member.units.rend(); ++unit) {
      if (!unit->retired_without_completion) break;
      const Entry& entry = dump.entries[unit->first_entry];
      int64_t timeout_ns = (entry.timeout_ms > 0 ? entry.timeout_ms : 600000) * 1'000'000;
      // Only the op the rank was in when it stopped (its dump's newest entry) can have ended
      // in that error; earlier ones completed before the rank went on.
      bool someone_died =
          std::any_of(group->members.begin(), group->members.end(),
                      [&](const GroupMember& m) { return &m != &member && died(m); });
      // ...unless a peer went past it: an op that needs every member's data (all_reduce,
      // all_gather, ...) completed for that peer only because every member, this one and the
      // dead one included, took part. (DDP's last bucket all_reduce of the step before a rank
      // raised: the survivors are in the next step's, Gloo retired this one as it completes.)
      // A peer's own record that the op completed says the same (the default group's one
      // start-up barrier, which no later op on that group follows).
      bool peer_went_past =
          NeedsEveryMember(entry.op) &&
          std::any_of(group->members.begin(), group->members.end(), [&](const GroupMember& m) {
            if (&m == &member || m.dump < 0) return false;
            if (IssuedOtherOp(trace.ranks[m.dump], m, unit->seq, entry.op)) return false;
            return (m.last_enqueued != kUnknown && m.last_enqueued > unit->seq) ||
                   CompletedUnit(m, unit->seq) ||
                   (entry.op == OpKind::kBarrier && WentOnAfter(trace.ranks[m.dump], m, unit->seq));
          });
      bool failed = someone_died && !peer_went_past && unit == member.units.rbegin() &&
                    unit->first_entry + unit->entry_count >= dump.entries.size();
      for (const GroupMember& other : group->members) {
        if (failed) break;
        if (other.dump < 0 || &other == &member) continue;
        if (IssuedOtherOp(trace.ranks[other.dump], other, unit->seq, entry.op)) {
          failed = true;  // a desync: the collective cannot have completed
          break;
        }
        if (other.last_enqueued != kUnknown && other.last_enqueued >= unit->seq) continue;
        int64_t other_time = times.per_dump[other.dump];
        if (other_time == kUnknown || entry.time_created_ns == kUnknown ||
            other_time - entry.time_created_ns >= timeout_ns) {
          failed = true;
          break;
        }
      }
      if (!failed) break;
      unit->state = EntryState::kScheduled;
      unit->retired_failed = true;
      first_failed = unit->seq;
      ++reopened;
    }
    if (first_failed == kUnknown) continue;
    member.last_completed = std::min(member.last_completed, first_failed - 1);
    member.last_started = std::min(member.last_started, first_failed - 1);
  }
  return reopened;
}

// Each dump's oldest entry that did not finish, counting reopened units as unfinished.
void FindFirstUnfinished(const LoadedTrace& trace, int jobs, JobIndex* index) {
  index->first_unfinished_entry.assign(trace.ranks.size(), -1);
  ParallelFor(
      trace.ranks.size(), jobs,
      [&](size_t d) {
        const auto& entries = trace.ranks[d].entries;
        for (size_t e = 0; e < entries.size(); ++e) {
          if (!EntryFinished(entries[e]) && entries[e].op != OpKind::kCoalesced) {
            index->first_unfinished_entry[d] = static_cast<int64_t>(e);
            break;
          }
        }
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/64);
  for (const JobGroup& group : index->groups) {
    for (const GroupMember& member : group.members) {
      if (member.dump < 0) continue;
      for (const CollectiveUnit& unit : member.units) {
        if (!unit.retired_failed) continue;
        int64_t& first = index->first_unfinished_entry[member.dump];
        if (first < 0 || unit.first_entry < first) first = unit.first_entry;
        break;
      }
    }
  }
}

}  // namespace

bool JobIndex::Unreadable(int64_t rank) const {
  return std::binary_search(unreadable_ranks.begin(), unreadable_ranks.end(), rank);
}

bool GroupNameLess(const std::string& a, const std::string& b) {
  bool a_num = NumericName(a), b_num = NumericName(b);
  if (a_num != b_num) return a_num;
  if (a_num && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

JobIndex BuildJobIndex(const LoadedTrace& trace, int64_t dump_time_ns, int jobs,
                       const std::vector<int64_t>& died) {
  JobIndex index;
  index.died_ranks = died;
  std::sort(index.died_ranks.begin(), index.died_ranks.end());
  index.dump_times = EstimateDumpTimes(trace, dump_time_ns, jobs);
  for (const RejectedFile& file : trace.rejected) {
    if (file.rank != kUnknown) index.unreadable_ranks.push_back(file.rank);
  }
  for (const RankConflict& conflict : trace.conflicts) {
    index.unreadable_ranks.push_back(conflict.rank);
  }
  std::sort(index.unreadable_ranks.begin(), index.unreadable_ranks.end());
  index.unreadable_ranks.erase(
      std::unique(index.unreadable_ranks.begin(), index.unreadable_ranks.end()),
      index.unreadable_ranks.end());
  // Identity is name plus rank set; dumps that do not know a group's ranks join it by name.
  // Keyed by the shared list: a world-size list shared by every dump compares as a pointer.
  absl::flat_hash_map<std::pair<std::string, SharedRanks>, uint32_t> by_identity;
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
          job_group.ranks = group.ranks.ToVector();
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
  index.ranks_without_file = RanksWithoutFile(trace, index.died_ranks);
  InferMembersFromSiblings(trace, index.ranks_without_file, &index.groups);
  if (std::vector<int64_t> above =
          RanksAboveTheHighest(trace, JobWorldSize(trace, index.ranks_without_file), &index.groups);
      !above.empty()) {
    index.ranks_without_file.insert(index.ranks_without_file.end(), above.begin(), above.end());
    InferMembersFromSiblings(trace, above, &index.groups);
  }
  for (int64_t rank : CompleteRegularGroups(trace, &index.groups)) {
    if (std::find(index.ranks_without_file.begin(), index.ranks_without_file.end(), rank) ==
        index.ranks_without_file.end()) {
      index.ranks_without_file.push_back(rank);
    }
  }
  std::sort(index.ranks_without_file.begin(), index.ranks_without_file.end());
  // Members: one per rank of the group; a dump that is not loaded leaves dump = -1.
  absl::flat_hash_map<int64_t, int32_t> dump_of_rank;
  for (size_t d = 0; d < trace.ranks.size(); ++d) {
    dump_of_rank[trace.ranks[d].rank] = static_cast<int32_t>(d);
  }
  std::vector<absl::flat_hash_map<int64_t, uint32_t>> member_of_rank(index.groups.size());
  const int64_t world_size = JobWorldSize(trace, index.ranks_without_file);
  for (size_t g = 0; g < index.groups.size(); ++g) {
    JobGroup& group = index.groups[g];
    if (!group.ranks_known && group.desc == "default_pg" && world_size > 0) {
      group.ranks.clear();
      for (int64_t r = 0; r < world_size; ++r) group.ranks.push_back(r);
      group.ranks_known = true;
      group.ranks_inferred = true;
    }
    if (!group.ranks_known) std::sort(group.ranks.begin(), group.ranks.end());
    group.members.resize(group.ranks.size());
    for (uint32_t m = 0; m < group.ranks.size(); ++m) {
      group.members[m].rank = group.ranks[m];
      member_of_rank[g].emplace(group.ranks[m], m);
    }
  }
  // Which member each dump's local groups are. Ranks are unique among loaded dumps, so every
  // member belongs to one dump at most, and the dumps can then be indexed in parallel.
  std::vector<std::vector<GroupMember*>> member_of_local(trace.ranks.size());
  // A trace built by hand may hold two dumps of one rank; they then share members, and are
  // indexed one after the other as they always were.
  bool members_shared = false;
  for (size_t d = 0; d < trace.ranks.size(); ++d) {
    const RankDump& dump = trace.ranks[d];
    member_of_local[d].assign(index.group_of_local[d].size(), nullptr);
    for (uint32_t local = 0; local < member_of_local[d].size(); ++local) {
      uint32_t g = index.group_of_local[d][local];
      auto it = member_of_rank[g].find(dump.rank);
      if (it == member_of_rank[g].end()) continue;  // a dump naming a group it is not in
      GroupMember& member = index.groups[g].members[it->second];
      members_shared |= member.dump >= 0 && member.dump != static_cast<int32_t>(d);
      member.dump = static_cast<int32_t>(d);
      member.local_group = local;
      member_of_local[d][local] = &member;
    }
  }
  for (JobGroup& group : index.groups) {
    for (GroupMember& member : group.members) {
      member.dump_holds_none = member.dump < 0 && dump_of_rank.contains(member.rank);
    }
  }
  // One pass over each dump's entries, dispatching by local group.
  ParallelFor(
      trace.ranks.size(), members_shared ? 1 : jobs,
      [&](size_t d) {
        const RankDump& dump = trace.ranks[d];
        for (uint32_t local = 0; local < member_of_local[d].size(); ++local) {
          GroupMember* member = member_of_local[d][local];
          if (member == nullptr) continue;
          // Set again for members that two dumps of one rank share: each dump's own, in turn.
          member->dump = static_cast<int32_t>(d);
          member->local_group = local;
          // The count comes from the dump (or a worker's summary of it): trust it no further
          // than the entries there are.
          member->units.reserve(std::min<size_t>(
              std::max<int64_t>(dump.groups[local].entry_count, 0), dump.entries.size()));
        }
        for (uint32_t i = 0; i < dump.entries.size(); ++i) {
          GroupMember* member = member_of_local[d][dump.entries[i].group];
          if (member != nullptr) AddEntry(dump, i, member);
        }
        for (GroupMember* member : member_of_local[d]) {
          if (member != nullptr) FinishMember(dump, member);
        }
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/64);
  // Each group changes only its own members (and reads them): groups run in parallel too.
  std::vector<int64_t> reopened(index.groups.size(), 0);
  ParallelFor(index.groups.size(), jobs, [&](size_t g) {
    reopened[g] = ReopenFailedRetirements(trace, index.dump_times, index, &index.groups[g]);
  });
  for (int64_t count : reopened) index.retired_failed_units += count;
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
  FindFirstUnfinished(trace, jobs, &index);
  return index;
}

}  // namespace fr
