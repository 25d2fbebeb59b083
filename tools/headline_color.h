// Colour for the text report's headline on a terminal: the "root cause:" line and the verdict's
// "fr-analyze: <class>" line, red for a failure and green for none. Everything else, and every
// byte of the report when colour is off, is left as FormatReportText wrote it.
//
//   if (ShouldColor(color_flag, /*to_terminal=*/output.empty() && isatty(STDOUT_FILENO))) {
//     text = ColorHeadline(text, Diagnose(trace, &logs, options).failed);
//   }
#ifndef FR_TOOLS_HEADLINE_COLOR_H_
#define FR_TOOLS_HEADLINE_COLOR_H_

#include <string>
#include <string_view>

namespace fr::cli {

// `when` is --color's value: "always", "never" or "auto". "auto" colours only when the report goes
// to a terminal and NO_COLOR is unset or empty (https://no-color.org). "always" is an explicit
// request and wins over both, as no-color.org allows for command-line flags.
bool ShouldColor(std::string_view when, bool to_terminal);

// `text` with its first "root cause: " line (only as the very first line) and its first
// "fr-analyze: " line wrapped in bold ANSI colour: red, or green for the verdict when
// `failure` is false. A root cause is always drawn in red: it names what broke the job.
std::string ColorHeadline(std::string_view text, bool failure);

}  // namespace fr::cli

#endif  // FR_TOOLS_HEADLINE_COLOR_H_
