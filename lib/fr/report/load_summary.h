// What a load found, for people (text) and programs (report::LoadSummary, as JSON or protobuf):
// ranks loaded and missing, versions, process groups with their members, entries per rank,
// rejected and skipped files with reasons. `fr-analyze load DIR` prints it.
//
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, LoadTrace(dir));
//   std::fputs(FormatLoadSummaryText(trace, dir).c_str(), stdout);
#ifndef FR_REPORT_LOAD_SUMMARY_H_
#define FR_REPORT_LOAD_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fr/base/rank_set.h"
#include "fr/model/loaded_trace.h"
#include "fr/report.pb.h"

namespace fr {

// The summary as data; strings that are not UTF-8 (file names are bytes) hold U+FFFD instead.
report::LoadSummary BuildLoadSummary(const LoadedTrace& trace, const std::string& source);

// Deterministic: the same trace gives the same bytes (no timings, which vary run to run).
std::string FormatLoadSummaryText(const LoadedTrace& trace, const std::string& source);
// BuildLoadSummary in protobuf's JSON mapping (see FormatProtoJson).
absl::StatusOr<std::string> FormatLoadSummaryJson(const LoadedTrace& trace,
                                                  const std::string& source);

}  // namespace fr

#endif  // FR_REPORT_LOAD_SUMMARY_H_
