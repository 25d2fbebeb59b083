#include "fr/logs/families/open_mpi.h"

#include <string>

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {

// mpirun prints its reports on its own stream, at the start of a line and without a worker's tag:
// a line tagged "[1,3]<stderr>:" (--tag-output), "[default3]:", "[rank3]:" or by Ray as a
// worker's is that worker's output, which may quote mpirun's words (a test, a retry wrapper).
// srun's "0: " label is the task mpirun itself runs in.
bool OpenMpiLines::FromLauncherStream(std::string_view body) const {
  const LinePrefix& prefix = context_->prefix();
  constexpr uint32_t kWorkerTags = LauncherBit(Launcher::kOpenMpi) |
                                   LauncherBit(Launcher::kTorchrun) | LauncherBit(Launcher::kRay);
  if ((prefix.launchers & kWorkerTags) != 0) return false;
  if (prefix.local_rank >= 0) return false;
  if (prefix.rank >= 0 && (prefix.launchers & LauncherBit(Launcher::kSlurm)) == 0) return false;
  return StartsWith(TrimLeft(body), "mpirun noticed");
}

// "mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 11
// (Segmentation fault)." (the PID really prints as 0): the launcher saw that rank die.
bool OpenMpiLines::OnMpirunNoticed(std::string_view line, std::string_view body) {
  if (!FromLauncherStream(body)) return false;
  int64_t rank = IntAfter(body, "process rank ");
  if (RankOrUnknown(rank) < 0) return false;
  LogEvent* e = context_->Emit(LogEventKind::kWorkerFailed, line);
  context_->MarkLauncher(e, Launcher::kOpenMpi);
  e->rank = rank;
  std::string_view node = WordAfter(body, " on node ", " ");
  if (!node.empty()) e->host = std::string(node);
  int64_t signal = IntAfter(body, "on signal ");
  if (signal > 0 && signal < 64) {
    e->signal = static_cast<int32_t>(signal);
    e->exit_code = -e->signal;
  }
  int64_t status = IntAfter(body, "exited with status ", INT32_MIN);
  if (status != INT32_MIN) e->exit_code = ToInt32(status);
  return true;
}

// "  Process name: [[22450,1],2]" then "  Exit code:    1": the first process mpirun saw exit
// with a non-zero status (in a hang, often a victim that timed out first).
bool OpenMpiLines::OnMpiProcessName(std::string_view line, std::string_view body) {
  std::string_view rest = body.substr(body.find("[[") + 2);
  size_t close = rest.find("],");
  if (close == std::string_view::npos) return false;
  int64_t rank = IntAfter(rest.substr(close), "],");
  if (RankOrUnknown(rank) < 0) return false;
  LogEvent* e = context_->Emit(LogEventKind::kWorkerFailed, line);
  context_->MarkLauncher(e, Launcher::kOpenMpi);
  e->rank = rank;
  mpi_exit_event_ = context_->event_count() - 1;
  mpi_exit_line_ = context_->line_no();
  return true;
}

bool OpenMpiLines::OnMpiExitCode(std::string_view, std::string_view body) {
  if (mpi_exit_line_ < 0 || context_->line_no() > mpi_exit_line_ + 2 ||
      mpi_exit_event_ >= context_->event_count()) {
    return false;
  }
  int64_t code = IntAfter(body, "Exit code:", INT32_MIN);
  if (code == INT32_MIN) return false;
  context_->event(mpi_exit_event_).exit_code = ToInt32(code);
  mpi_exit_line_ = -1;
  return true;
}

}  // namespace fr::logs_internal
