// What a load found, for people (text) and programs (JSON): ranks loaded and missing, versions,
// process groups with their members, entries per rank, rejected and skipped files with reasons.
// This is what `fr-analyze DIR` prints until the culprit analysis lands on top of it.
//
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, LoadTrace(dir));
//   std::fputs(FormatLoadSummaryText(trace, dir).c_str(), stdout);
#ifndef FR_REPORT_LOAD_SUMMARY_H_
#define FR_REPORT_LOAD_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/base/rank_set.h"
#include "fr/load/load.h"

namespace fr {

// Deterministic: the same trace gives the same bytes (no timings, which vary run to run).
std::string FormatLoadSummaryText(const LoadedTrace& trace, const std::string& source);
std::string FormatLoadSummaryJson(const LoadedTrace& trace, const std::string& source);

// Escapes `text` as the contents of a JSON string (without the quotes); bytes that are not UTF-8
// become U+FFFD.
std::string JsonEscape(std::string_view text);

}  // namespace fr

#endif  // FR_REPORT_LOAD_SUMMARY_H_
