// A rank, everywhere in the analysis, is an int64_t (RankDump::rank, Entry::peer_rank,
// LogEvent::rank, RankStacks::rank, ...), -1 (or kUnknown) when unknown. The report's rank
// fields are int32 (proto/fr/report.proto), so a rank read from a file name, a dump or a log line
// is checked once, where it is read (RankOrUnknown); past that, every rank fits the report.
#ifndef FR_BASE_RANK_H_
#define FR_BASE_RANK_H_

#include <cstdint>
#include <limits>

namespace fr {

inline constexpr int64_t kMaxRank = std::numeric_limits<int32_t>::max();

// `value` when it can be a rank, else -1.
inline int64_t RankOrUnknown(int64_t value) { return value >= 0 && value <= kMaxRank ? value : -1; }

}  // namespace fr

#endif  // FR_BASE_RANK_H_
