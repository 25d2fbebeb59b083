// Stragglers: ranks consistently last to enqueue their collectives, by a margin well above clock
// noise, in groups where every member completed. The statistics only; the verdict words them.
//
//   for (const Straggler& s : FindStragglers(trace, index)) { ... s.rank, s.median_lateness_ms }
//
// Per group, each collective every member completed is compared across members by enqueue time:
// a member's lateness is its distance from the median (the mean of the middle two for an even
// count, so that in a group of two the late member is late). A straggler's median lateness is at
// least 5 ms and ten times the typical rank's, it was last in at least half of at least five
// collectives.
#ifndef FR_VERDICT_STRAGGLERS_H_
#define FR_VERDICT_STRAGGLERS_H_

#include <cstdint>
#include <vector>

#include "fr/index/job_index.h"
#include "fr/model/loaded_trace.h"

namespace fr {

struct Straggler {
  int64_t rank = -1;
  uint32_t group = 0;  // index into JobIndex::groups: where it was last most recently
  double median_lateness_ms = 0;
  double fraction_last = 0;
  int collectives_compared = 0;
};

// Ascending rank.
std::vector<Straggler> FindStragglers(const LoadedTrace& trace, const JobIndex& index);

}  // namespace fr

#endif  // FR_VERDICT_STRAGGLERS_H_
