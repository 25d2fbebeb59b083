#include "fr/verdict/program_order.h"

#include <algorithm>
#include <limits>
#include <set>

#include "fr/verdict/unrecorded_p2p.h"

namespace fr {

ProgramOrder::ProgramOrder(const LoadedTrace& trace, const JobIndex& index)
    : trace_(trace), index_(index) {
  for (size_t d = 0; d < trace.ranks.size(); ++d) dump_of_rank_[trace.ranks[d].rank] = d;
}

const RankDump* ProgramOrder::DumpOf(int64_t rank) const {
  auto it = dump_of_rank_.find(rank);
  return it == dump_of_rank_.end() ? nullptr : &trace_.ranks[it->second];
}

int64_t ProgramOrder::DumpIndexOf(int64_t rank) const {
  auto it = dump_of_rank_.find(rank);
  return it == dump_of_rank_.end() ? -1 : static_cast<int64_t>(it->second);
}

std::map<int64_t, size_t> ProgramOrder::LastSharedCollective(
    const std::vector<int64_t>& ranks) const {
  std::map<uint32_t, size_t> members_in;  // the groups every rank is in, from its own dump
  for (int64_t rank : ranks) {
    auto dump = dump_of_rank_.find(rank);
    if (dump == dump_of_rank_.end()) return {};
    const std::vector<uint32_t>& groups = index_.group_of_local[dump->second];
    for (uint32_t g : std::set<uint32_t>(groups.begin(), groups.end())) ++members_in[g];
  }
  std::set<int64_t> wanted(ranks.begin(), ranks.end());
  std::map<int64_t, size_t> best;
  int64_t best_time = kUnknown;
  for (const auto& [g, count] : members_in) {
    if (count != wanted.size()) continue;
    std::vector<const GroupMember*> members;
    for (const GroupMember& member : index_.groups[g].members) {
      if (member.dump >= 0 && wanted.contains(member.rank)) members.push_back(&member);
    }
    if (members.size() != wanted.size()) continue;
    // The newest seq that every one of them finished.
    int64_t shared = std::numeric_limits<int64_t>::max();
    for (const GroupMember* member : members) {
      auto finished = std::find_if(
          member->units.rbegin(), member->units.rend(),
          [](const CollectiveUnit& unit) { return unit.state == EntryState::kCompleted; });
      if (finished == member->units.rend()) {
        shared = kUnknown;
        break;
      }
      shared = std::min(shared, finished->seq);
    }
    if (shared == kUnknown) continue;
    std::map<int64_t, size_t> last_entry;
    int64_t created = kUnknown;
    for (const GroupMember* member : members) {
      auto unit =
          std::lower_bound(member->units.begin(), member->units.end(), shared,
                           [](const CollectiveUnit& u, int64_t seq) { return u.seq < seq; });
      if (unit == member->units.end() || unit->seq != shared) break;
      const RankDump& dump = trace_.ranks[member->dump];
      last_entry[member->rank] = unit->first_entry + std::max<size_t>(unit->entry_count, 1) - 1;
      created = std::max(created, dump.entries[unit->first_entry].time_created_ns);
    }
    if (last_entry.size() != wanted.size()) continue;
    if (best_time == kUnknown || created > best_time) {
      best = std::move(last_entry);
      best_time = created;
    }
  }
  return best;
}

std::map<int64_t, int64_t> ProgramOrder::ProgressSinceLastSharedCollective(
    const std::vector<int64_t>& ranks) const {
  std::map<int64_t, int64_t> progress;
  for (const auto& [rank, last] : LastSharedCollective(ranks)) {
    progress[rank] = static_cast<int64_t>(DumpOf(rank)->entries.size() - 1 - last);
  }
  return progress;
}

std::map<uint32_t, int64_t> ProgramOrder::ProgramPositions(
    int64_t culprit, const std::vector<uint32_t>& blocks,
    const std::vector<Block>& all_blocks) const {
  std::vector<int64_t> ranks = {culprit};
  std::map<uint32_t, std::pair<int64_t, size_t>> entry_of;  // block -> (waiter, entry index)
  for (uint32_t b : blocks) {
    const Block& block = all_blocks[b];
    // p2p waits are ordered apart (after every collective), so they need no position.
    if (block.is_p2p || block.group == kNoGroupIndex) continue;
    if (block.waiters.empty()) return {};
    int64_t waiter = block.waiters.front();
    const GroupMember* member = nullptr;
    for (const GroupMember& m : index_.groups[block.group].members) {
      if (m.rank == waiter && m.dump >= 0) member = &m;
    }
    if (member == nullptr) return {};
    auto unit = std::lower_bound(member->units.begin(), member->units.end(), block.seq,
                                 [](const CollectiveUnit& u, int64_t seq) { return u.seq < seq; });
    if (unit == member->units.end() || unit->seq != block.seq) return {};
    entry_of[b] = {waiter, unit->first_entry};
    ranks.push_back(waiter);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::map<int64_t, size_t> anchor = LastSharedCollective(ranks);
  if (anchor.empty()) return {};
  std::map<uint32_t, int64_t> positions;
  for (const auto& [b, at] : entry_of) {
    positions[b] = static_cast<int64_t>(at.second) - static_cast<int64_t>(anchor.at(at.first));
  }
  return positions;
}

}  // namespace fr
