#include "dask_load.h"

#include <spawn.h>
#include <sys/wait.h>
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

extern char** environ;

namespace fr {
namespace {

// Runs the Python helper `argv` and waits; its output goes to this process's stdout and stderr.
// The command is often run from inside a job directory copied from a shared cluster, and
// `python -m` puts the current directory first on sys.path: a planted `fr_analyze/` or
// `argparse.py` there would run with the user's rights. So the helper starts in "/" (relative
// PYTHONPATH entries and the script directory then point nowhere the input controls) with
// PYTHONSAFEPATH=1 (Python >= 3.11 then adds no directory at all).
absl::StatusOr<int> RunIsolatedPython(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment = {"PYTHONSAFEPATH=1"};
  for (char** variable = environ; *variable != nullptr; ++variable) {
    if (std::strncmp(*variable, "PYTHONSAFEPATH=", 15) != 0) environment.push_back(*variable);
  }
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addchdir_np(&actions, "/");
  pid_t pid = 0;
  int error = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    return absl::FailedPreconditionError(fmt::format(
        "--dask: cannot run {} ({}); set FR_ANALYZE_PYTHON to a python with fr_analyze and "
        "distributed",
        argv[0], std::strerror(error)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError("--dask: lost the Python helper");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

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
  const char* python = std::getenv("FR_ANALYZE_PYTHON");
  std::vector<std::string> argv = {python != nullptr && *python ? python : "python3",
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
  absl::StatusOr<int> exit = RunIsolatedPython(argv);
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
