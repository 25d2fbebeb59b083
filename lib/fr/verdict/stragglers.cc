#include "fr/verdict/stragglers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace fr {

std::vector<Straggler> FindStragglers(const LoadedTrace& trace, const JobIndex& index) {
  struct Lateness {
    std::vector<double> late_ms;
    int last = 0;
    int compared = 0;
    uint32_t group = 0;
  };
  std::map<int64_t, Lateness> per_rank;
  std::vector<std::pair<double, int64_t>> times;
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
    while (true) {
      times.clear();
      int64_t seq = kUnknown;
      bool complete = true;
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
        times.emplace_back(static_cast<double>(created), group.members[m].rank);
      }
      if (times.size() != group.members.size()) break;
      for (size_t m = 0; m < group.members.size(); ++m) ++cursor[m];
      if (!complete) continue;
      std::vector<double> sorted;
      for (const auto& [t, r] : times) sorted.push_back(t);
      // The true median (mean of the middle two for an even count): in a group of two the
      // late member must come out late, not equal to the median.
      std::sort(sorted.begin(), sorted.end());
      size_t half = sorted.size() / 2;
      double median = sorted.size() % 2 == 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
      auto latest = std::max_element(times.begin(), times.end());
      for (const auto& [t, r] : times) {
        Lateness& lateness = per_rank[r];
        lateness.late_ms.push_back((t - median) / 1e6);
        ++lateness.compared;
        if (r == latest->second) {
          ++lateness.last;
          lateness.group = g;
        }
      }
    }
  }
  if (per_rank.empty()) return {};
  std::vector<double> all_medians;
  std::map<int64_t, double> median_of;
  for (auto& [rank, lateness] : per_rank) {
    auto& v = lateness.late_ms;
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
    double fraction_last = static_cast<double>(lateness.last) / lateness.compared;
    if (median_of[rank] < threshold || fraction_last < 0.5 || lateness.compared < 5) continue;
    found.push_back({.rank = rank,
                     .group = lateness.group,
                     .median_lateness_ms = median_of[rank],
                     .fraction_last = fraction_last,
                     .collectives_compared = lateness.compared});
  }
  return found;
}

}  // namespace fr
