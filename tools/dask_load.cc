#include "dask_load.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/rank_summary.pb.h"
#include "python_helper.h"

namespace fr {
namespace {

// The bundle: summaries one after another, each after its length (8 bytes, little-endian).
absl::StatusOr<std::map<std::string, std::string>> ReadBundle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::string> by_path;
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 8) {
      return absl::DataLossError(fmt::format("{}: cut short at byte {}", path, at));
    }
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<unsigned char>(bytes[at + i]);
    at += 8;
    if (length > bytes.size() - at) {
      return absl::DataLossError(
          fmt::format("{}: a summary at byte {} runs past the end ({} bytes)", path, at, length));
    }
    std::string summary = bytes.substr(at, length);
    at += length;
    summary::FileSummary header;
    if (!header.ParseFromString(summary)) {
      return absl::DataLossError(fmt::format("{}: the summary at byte {} is damaged", path, at));
    }
    by_path[header.path()] = std::move(summary);
  }
  return by_path;
}

}  // namespace

std::string AbsoluteInputPath(const std::string& path) {
  std::error_code error;
  std::string absolute = std::filesystem::absolute(path, error).lexically_normal().string();
  if (error) return path;
  if (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  return absolute;
}

absl::StatusOr<LoadedTrace> LoadTraceOnDask(const std::string& root, const LoadOptions& options,
                                            const std::string& scheduler) {
  // The helper runs in "/" and the workers see the files at the same absolute paths.
  const std::string absolute_root = AbsoluteInputPath(root);
  std::error_code error;
  FR_ASSIGN_OR_RETURN(Discovery discovery, DiscoverDumps(absolute_root, options.discover));
  const char* tmpdir = std::getenv("TMPDIR");
  std::string bundle =
      std::filesystem::absolute(
          fmt::format("{}/fr-analyze-dask-XXXXXX", tmpdir != nullptr && *tmpdir ? tmpdir : "/tmp"),
          error)
          .string();
  if (error) return absl::InternalError("--dask: cannot place a temporary file");
  int fd = ::mkstemp(bundle.data());
  if (fd < 0) return absl::InternalError("--dask: cannot create a temporary file");
  ::close(fd);
  std::vector<std::string> argv = {HelperPython(),
                                   "-m",
                                   "fr_analyze._dask",
                                   "--scheduler",
                                   scheduler,
                                   "--output",
                                   bundle,
                                   "--prefix",
                                   options.discover.prefix,
                                   "--rank-pattern",
                                   options.discover.rank_pattern};
  if (options.discover.follow_links_out_of_root) argv.push_back("--follow-links");
  argv.push_back(absolute_root);
  absl::StatusOr<int> exit = RunIsolatedPython(argv, "--dask", "fr_analyze and distributed");
  absl::StatusOr<std::map<std::string, std::string>> by_path =
      exit.ok() && *exit == 0 ? ReadBundle(bundle) : absl::UnknownError("");
  ::unlink(bundle.c_str());
  if (!exit.ok()) return exit.status();
  if (*exit != 0) {
    return absl::UnavailableError(
        fmt::format("--dask: the Python helper failed (exit status {}), see above", *exit));
  }
  if (!by_path.ok()) return by_path.status();
  // In discovery's order; a file the workers did not summarize (it appeared since) is its error.
  std::vector<std::string> summaries;
  for (const DiscoveredFile& file : discovery.files) {
    auto it = by_path->find(file.path);
    summaries.push_back(it == by_path->end() ? std::string() : std::move(it->second));
  }
  return AssembleTrace(absolute_root, std::move(discovery), summaries);
}

}  // namespace fr
