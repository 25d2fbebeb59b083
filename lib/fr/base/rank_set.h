// Compact text for sets of ranks, as people read them in reports of thousands of ranks:
// "0-3,5,7-9", "0-504 step 8" (a mesh's DP group), and relative to a group: "0-4095 except 17".
#ifndef FR_BASE_RANK_SET_H_
#define FR_BASE_RANK_SET_H_

#include <cstdint>
#include <string>
#include <vector>

namespace fr {

// "0-3,5,7-9", and runs of one stride as "0-504 step 8": ascending, duplicates ignored.
std::string FormatRankSet(std::vector<int64_t> ranks);

// `ranks` described relative to `universe` (a group's ranks) when that is shorter:
// "0-4095 except 17" rather than 4095 ranges. Falls back to FormatRankSet.
std::string FormatRankSetWithin(std::vector<int64_t> ranks, std::vector<int64_t> universe);

}  // namespace fr

#endif  // FR_BASE_RANK_SET_H_
