#include "python_helper.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"

extern char** environ;

namespace fr {

std::string HelperPython() {
  const char* python = std::getenv("FR_ANALYZE_PYTHON");
  return python != nullptr && *python ? python : "python3";
}

// The command is often run from inside a job directory copied from a shared cluster, and
// `python -m` puts the current directory first on sys.path: a planted `fr_analyze/` or
// `argparse.py` there would run with the user's rights. So the helper starts in "/" (relative
// PYTHONPATH entries and the script directory then point nowhere the input controls) with
// PYTHONSAFEPATH=1 (Python >= 3.11 then adds no directory at all).
absl::StatusOr<int> RunIsolatedPython(const std::vector<std::string>& argv, std::string_view what,
                                      std::string_view needs) {
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
    return absl::FailedPreconditionError(
        fmt::format("{}: cannot run {} ({}); set FR_ANALYZE_PYTHON to a python with {}", what,
                    argv[0], std::strerror(error), needs));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(fmt::format("{}: lost the Python helper", what));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace fr
