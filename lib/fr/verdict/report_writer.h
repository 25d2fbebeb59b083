// The report of the dumps, written from their Judgment (judgment.h): the only place that turns
// the verdict's values into the report proto (docs/report-contract.md). The contract's words
// (failure classes, confidences, roles, state names) appear here and nowhere in the judging.
//
//   report::Report report = WriteDumpReport(trace, options, JudgeDumps(trace, options));
#ifndef FR_VERDICT_REPORT_WRITER_H_
#define FR_VERDICT_REPORT_WRITER_H_

#include "fr/model/loaded_trace.h"
#include "fr/report.pb.h"
#include "fr/verdict/analyze.h"
#include "fr/verdict/judgment.h"

namespace fr {

// The report: inputs, findings, stragglers, verdict, process groups, ranks and stats. `trace`
// and `options` must be the ones `judgment` was made from.
report::Report WriteDumpReport(const LoadedTrace& trace, const AnalyzeOptions& options,
                               const Judgment& judgment);

// One finding, as WriteDumpReport writes each of the judgment's (`index`: the judgment's).
void WriteFinding(const JudgedFinding& finding, const JobIndex& index, report::Finding* out);

// The finding's kind as the report contract names it: the failure class, "straggler",
// "data_loss", or the monitor's kind.
std::string FindingKindName(const JudgedFinding& finding);

}  // namespace fr

#endif  // FR_VERDICT_REPORT_WRITER_H_
