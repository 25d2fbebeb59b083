#include "fr/verdict/stragglers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace fr {

std::vector<Straggler> FindStragglers(const LoadedTrace& trace, const JobIndex& index) {
  struct Lateness {
    int64_t rank = kUnknown;
    std::vector<double> late_ms;
    int last = 0;
    int compared = 0;
    uint32_t group = 0;
  };
  // One slot per rank compared, found once per group member rather than once per member and
  // collective (a map lookup there was a fifth of the cost at 4096 ranks x 2000 entries).
  std::vector<Lateness> per_slot;
  absl::flat_hash_map<int64_t, uint32_t> slot_of_rank;
  constexpr uint32_t kNoSlot = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> member_slot;
  std::vector<std::pair<double, int64_t>> times;
  std::vector<double> sorted;
  for (uint32_t g = 0; g < index.groups.size(); ++g) {
    const JobGroup& group = index.groups[g];
    if (group.members.size() < 2) continue;
    std::vector<size_t> cursor(group.members.size(), 0);
    // Walk the seqs every member completed, aligned by seq.
    int64_t lo = kUnknown;
    for (const GroupMember& member : group.members) {
      if (member.dump < 0 || member.units.empty()) {
        lo = kUnknown;
        break;
      }
      lo = std::max(lo, member.units.front().seq);
    }
    if (lo == kUnknown) continue;
    for (size_t m = 0; m < group.members.size(); ++m) {
      const auto& units = group.members[m].units;
      while (cursor[m] < units.size() && units[cursor[m]].seq < lo) ++cursor[m];
    }
    member_slot.assign(group.members.size(), kNoSlot);
    times.resize(group.members.size());
    while (true) {
      int64_t seq = kUnknown;
      bool complete = true;
      size_t seen = 0;
      // The walk ends at the first collective that some member, other than the last, did not
      // complete, or where the members' seqs part.
      for (size_t m = 0; m < group.members.size() && complete; ++m) {
        const auto& units = group.members[m].units;
        if (cursor[m] >= units.size()) {
          complete = false;
          break;
        }
        const CollectiveUnit& unit = units[cursor[m]];
        if (seq == kUnknown) seq = unit.seq;
        int64_t created =
            trace.ranks[group.members[m].dump].entries[unit.first_entry].time_created_ns;
        if (unit.seq != seq || unit.state != EntryState::kCompleted || created == kUnknown) {
          complete = false;
        }
        times[seen++] = {static_cast<double>(created), group.members[m].rank};
      }
      if (seen != group.members.size()) break;
      for (size_t m = 0; m < group.members.size(); ++m) ++cursor[m];
      if (!complete) continue;
      sorted.resize(times.size());
      for (size_t m = 0; m < times.size(); ++m) sorted[m] = times[m].first;
      // The true median (mean of the middle two for an even count): in a group of two the
      // late member must come out late, not equal to the median.
      size_t half = sorted.size() / 2;
      std::nth_element(sorted.begin(), sorted.begin() + half, sorted.end());
      double median =
          sorted.size() % 2 == 1
              ? sorted[half]
              : (*std::max_element(sorted.begin(), sorted.begin() + half) + sorted[half]) / 2;
      auto latest = std::max_element(times.begin(), times.end());
      for (size_t m = 0; m < times.size(); ++m) {
        const auto& [t, r] = times[m];
        if (member_slot[m] == kNoSlot) {
          auto [it, inserted] = slot_of_rank.try_emplace(r, static_cast<uint32_t>(per_slot.size()));
          if (inserted) {
            per_slot.emplace_back();
            per_slot.back().rank = r;
          }
          member_slot[m] = it->second;
        }
        Lateness& lateness = per_slot[member_slot[m]];
        lateness.late_ms.push_back((t - median) / 1e6);
        ++lateness.compared;
        if (r == latest->second) {
          ++lateness.last;
          lateness.group = g;
        }
      }
    }
  }
  std::sort(per_slot.begin(), per_slot.end(),
            [](const Lateness& a, const Lateness& b) { return a.rank < b.rank; });
  std::vector<std::pair<int64_t, Lateness*>> per_rank;
  for (Lateness& lateness : per_slot) per_rank.emplace_back(lateness.rank, &lateness);
  if (per_rank.empty()) return {};
  std::vector<double> all_medians;
  std::map<int64_t, double> median_of;
  for (auto& [rank, lateness] : per_rank) {
    auto& v = lateness->late_ms;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    median_of[rank] = v[v.size() / 2];
    all_medians.push_back(std::abs(v[v.size() / 2]));
  }
  std::nth_element(all_medians.begin(), all_medians.begin() + all_medians.size() / 2,
                   all_medians.end());
  double typical = all_medians[all_medians.size() / 2];
  // Clock skew between hosts is microseconds to a millisecond; a straggler is far beyond both.
  double threshold = std::max(5.0, 10 * typical);
  std::vector<Straggler> found;
  for (auto& [rank, lateness] : per_rank) {
    double fraction_last = static_cast<double>(lateness->last) / lateness->compared;
    if (median_of[rank] < threshold || fraction_last < 0.5 || lateness->compared < 5) continue;
    found.push_back({.rank = rank,
                     .group = lateness->group,
                     .median_lateness_ms = median_of[rank],
                     .fraction_last = fraction_last,
                     .collectives_compared = lateness->compared});
  }
  return found;
}

}  // namespace fr
