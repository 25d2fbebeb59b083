// A rank's normalized dump as bytes (proto/fr/rank_summary.proto): what a Dask worker returns
// after reading a dump where the file lives (lib/fr/load SummarizeDumpFile wraps it with the
// file's load result), so that files never cross the network and the analysis runs where the
// summaries are gathered (lib/fr/load AssembleTrace).
//
//   std::string bytes = SerializeRankDump(dump);
//   FR_ASSIGN_OR_RETURN(RankDump same, ParseRankDump(bytes, dump.path));
//
// A RankDump read back is the one that was written (the same report follows); bytes that are
// not a summary of this schema, or whose ids point outside their tables, are an error naming
// the file they stand for and the field.
#ifndef FR_SUMMARY_RANK_SUMMARY_H_
#define FR_SUMMARY_RANK_SUMMARY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fr/model/rank_dump.h"
#include "fr/rank_summary.pb.h"

namespace fr {

inline constexpr uint32_t kRankSummarySchema = 2;  // 2: group ranks may be runs

std::string SerializeRankDump(const RankDump& dump);
void ToRankSummary(const RankDump& dump, summary::RankSummary* out);

// `name` stands for the file in messages.
absl::StatusOr<RankDump> ParseRankDump(std::string_view bytes, const std::string& name);
absl::StatusOr<RankDump> FromRankSummary(const summary::RankSummary& in, const std::string& name);

}  // namespace fr

#endif  // FR_SUMMARY_RANK_SUMMARY_H_
