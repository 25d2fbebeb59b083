// Rendering a Report: the text a person reads (first screen: verdict, culprits, how victims wait,
// the culprit's stack, next actions; then groups and findings), the protobuf JSON mapping with
// snake_case names, and the binary message. All deterministic: same report, same bytes.
//
//   report::Report report = Analyze(trace, options);
//   std::fputs(FormatReportText(report).c_str(), stdout);
#ifndef FR_REPORT_REPORT_FORMAT_H_
#define FR_REPORT_REPORT_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "fr/report.pb.h"

namespace fr {

std::string FormatReportText(const report::Report& report);

// Protobuf's JSON mapping, original field names, every field printed (empty lists included).
absl::StatusOr<std::string> FormatReportJson(const report::Report& report);
// The same for any message (the load summary); fails only on strings that are not UTF-8.
absl::StatusOr<std::string> FormatProtoJson(const google::protobuf::Message& message);

// The binary protobuf message.
std::string FormatReportProto(const report::Report& report);

}  // namespace fr

#endif  // FR_REPORT_REPORT_FORMAT_H_
