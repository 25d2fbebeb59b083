// `fr-analyze ... --dask tcp://scheduler:8786`: the dumps read on a Dask cluster. The command
// runs `python3 -m fr_analyze._dask` (FR_ANALYZE_PYTHON names another interpreter; it needs
// fr_analyze and distributed), which maps the files' summaries over the cluster's workers and
// writes them to a temporary bundle; the trace is then assembled here from the bundle
// (lib/fr/load AssembleTrace), so everything after loading is what a local run does.
#ifndef FR_TOOLS_DASK_LOAD_H_
#define FR_TOOLS_DASK_LOAD_H_

#include <string>

#include "absl/status/statusor.h"
#include "fr/load/load.h"

namespace fr {

// `path` made absolute and normal ("." -> "/home/me/job"), as the cluster's workers name it;
// `path` itself when the current directory cannot be read.
std::string AbsoluteInputPath(const std::string& path);

// `root` must be absolute (AbsoluteInputPath): the helper runs in "/".
absl::StatusOr<LoadedTrace> LoadTraceOnDask(const std::string& root, const LoadOptions& options,
                                            const std::string& scheduler);

}  // namespace fr

#endif  // FR_TOOLS_DASK_LOAD_H_
