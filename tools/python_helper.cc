#include "python_helper.h"

#include <signal.h>
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
namespace {

// The helper being waited for, which a stop request to this process is passed on to.
volatile sig_atomic_t helper_pid = 0;

void ForwardToHelper(int signal) {
  if (helper_pid > 0) ::kill(static_cast<pid_t>(helper_pid), signal);
}

// The caller's own SIGINT action while a helper runs (`live --watch` records Ctrl-C in it).
struct sigaction caller_interrupt = {};

// Ctrl-C at a terminal (si_code SI_KERNEL) already reached the helper, which shares this
// process's group; a SIGINT sent to this process alone (`kill -INT`, a supervisor, a test) must
// be passed on or it would be lost while the helper runs. Either way the caller's handler, if it
// has one, learns of it.
void InterruptWhileWaiting(int signal, siginfo_t* info, void* context) {
  if (info == nullptr || info->si_code != SI_KERNEL) ForwardToHelper(signal);
  if (caller_interrupt.sa_flags & SA_SIGINFO) {
    caller_interrupt.sa_sigaction(signal, info, context);
  } else if (caller_interrupt.sa_handler != SIG_DFL && caller_interrupt.sa_handler != SIG_IGN) {
    caller_interrupt.sa_handler(signal);
  }
}

}  // namespace

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
  // A stop request sent to this process alone (`kill PID`, `docker stop` on a container whose
  // first process this is, a supervisor) must stop the helper too, not orphan it (`fr-analyze
  // serve` would go on serving). SIGTERM and SIGHUP are passed on, unless this process was
  // started ignoring them (nohup), which the helper inherits; they are blocked from before the
  // spawn until the handlers know the helper, and the helper starts with this process's own
  // mask. Ctrl-C reaches the helper from the terminal (one process group): this process ends
  // when the helper does, passing on only a SIGINT sent to it alone (InterruptWhileWaiting).
  sigset_t stops, old_mask;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGHUP);
  sigaddset(&stops, SIGINT);
  ::sigprocmask(SIG_BLOCK, &stops, &old_mask);
  posix_spawnattr_t attributes;
  ::posix_spawnattr_init(&attributes);
  ::posix_spawnattr_setsigmask(&attributes, &old_mask);
  ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  int error = ::posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return absl::FailedPreconditionError(
        fmt::format("{}: cannot run {} ({}); set FR_ANALYZE_PYTHON to a python with {}", what,
                    argv[0], std::strerror(error), needs));
  }
  helper_pid = pid;
  struct sigaction forward = {}, interrupt = {}, old_term, old_hup, old_int;
  forward.sa_handler = ForwardToHelper;
  sigemptyset(&forward.sa_mask);
  interrupt.sa_sigaction = InterruptWhileWaiting;
  interrupt.sa_flags = SA_SIGINFO;
  sigemptyset(&interrupt.sa_mask);
  ::sigaction(SIGTERM, nullptr, &old_term);
  ::sigaction(SIGHUP, nullptr, &old_hup);
  ::sigaction(SIGINT, nullptr, &old_int);
  if (old_term.sa_handler != SIG_IGN) ::sigaction(SIGTERM, &forward, nullptr);
  if (old_hup.sa_handler != SIG_IGN) ::sigaction(SIGHUP, &forward, nullptr);
  if (old_int.sa_handler != SIG_IGN) {
    caller_interrupt = old_int;
    ::sigaction(SIGINT, &interrupt, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  bool lost = false;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      lost = true;
      break;
    }
  }
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  ::sigaction(SIGINT, &old_int, nullptr);
  helper_pid = 0;
  if (lost) return absl::InternalError(fmt::format("{}: lost the Python helper", what));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace fr
