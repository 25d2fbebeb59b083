// Field-by-field comparison of two normalized dumps, for differential tests and fuzzers: two
// readers of the same bytes (the direct pickle reader and decode + normalize) must agree on every
// field, interned string order and table order included.
//
//   std::string diff = DescribeRankDumpDifference(direct, general);
//   if (!diff.empty()) FAIL() << diff;  // e.g. "entries[17].stack: 3 vs 4"
#ifndef FR_MODEL_RANK_DUMP_EQUAL_H_
#define FR_MODEL_RANK_DUMP_EQUAL_H_

#include <string>

#include "fr/model/rank_dump.h"

namespace fr {

// "" when `a` and `b` are identical in every field (NaN durations compare by their bits);
// otherwise the first difference found, naming the field and both values.
std::string DescribeRankDumpDifference(const RankDump& a, const RankDump& b);

}  // namespace fr

#endif  // FR_MODEL_RANK_DUMP_EQUAL_H_
