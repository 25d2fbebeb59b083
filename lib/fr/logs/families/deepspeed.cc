#include "fr/logs/families/deepspeed.h"

#include <cstdint>

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {

// "[ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py',
// '--local_rank=0', ...] exits with return code = -9": the first worker it saw exit non-zero,
// by its return code (negative: the signal). The quoted command is not that worker's: the
// launcher prints the command variable left over from its spawn loop, the last local rank's
// (with two GPUs, '--local_rank=1' whichever failed), so the line names no rank.
bool DeepSpeedLines::OnDeepSpeedExit(std::string_view line, std::string_view body) {
  if (!Contains(body, "sigkill_handler]")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kWorkerFailed, line);
  context_->MarkLauncher(e, Launcher::kDeepSpeed);
  e->local_rank = -1;
  int64_t code = IntAfter(body, "exits with return code = ", INT32_MIN);
  if (code != INT32_MIN) e->exit_code = ToInt32(code);
  if (code < 0 && code > -64) e->signal = static_cast<int32_t>(-code);
  e->reason = "deepspeed launcher: first worker exit";
  return true;
}

// "[INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266": printed for every worker,
// the one that already died included, once the launcher saw a failure: its own kills.
bool DeepSpeedLines::OnDeepSpeedKill(std::string_view line, std::string_view body) {
  if (!Contains(body, "sigkill_handler]")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kSignalSent, line);
  context_->MarkFileLauncher(Launcher::kDeepSpeed);
  e->pid = ToInt32(IntAfter(body, "Killing subprocess "));
  e->reason = "killed by the deepspeed launcher";
  return true;
}

// "cmd = /usr/bin/python -u -m deepspeed.launcher.launch --world_info=..." (runner.py): a
// launch by DeepSpeed; no event of its own.
bool DeepSpeedLines::OnDeepSpeedCommand(std::string_view, std::string_view) {
  context_->MarkFileLauncher(Launcher::kDeepSpeed);
  return false;
}

}  // namespace fr::logs_internal
