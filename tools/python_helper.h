// The command line's Python helpers (`python3 -m fr_analyze._dask`, `fr_analyze._live`), run
// isolated from the current directory. FR_ANALYZE_PYTHON names the interpreter (default python3).
#ifndef FR_TOOLS_PYTHON_HELPER_H_
#define FR_TOOLS_PYTHON_HELPER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fr {

// FR_ANALYZE_PYTHON, or "python3".
std::string HelperPython();

// Runs `argv` (argv[0] the interpreter) and waits; its output goes to this process's stdout and
// stderr. Returns its exit status (128 + the signal when a signal ended it). `what` names the
// feature in the error when the interpreter cannot be started ("--dask", "live"), with `needs`
// saying which packages that Python must have.
absl::StatusOr<int> RunIsolatedPython(const std::vector<std::string>& argv, std::string_view what,
                                      std::string_view needs);

}  // namespace fr

#endif  // FR_TOOLS_PYTHON_HELPER_H_
