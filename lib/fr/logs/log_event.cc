#include "fr/logs/log_event.h"

namespace fr {

const char* LogEventKindName(LogEventKind kind) {
  switch (kind) {
    case LogEventKind::kXid:
      return "xid";
    case LogEventKind::kHostOom:
      return "host_oom";
    case LogEventKind::kCudaOom:
      return "cuda_oom";
    case LogEventKind::kCudaError:
      return "cuda_error";
    case LogEventKind::kSegfault:
      return "segfault";
    case LogEventKind::kPythonException:
      return "python_exception";
    case LogEventKind::kTransportError:
      return "transport_error";
    case LogEventKind::kNonFiniteLoss:
      return "non_finite_loss";
    case LogEventKind::kHostKill:
      return "host_kill";
    case LogEventKind::kWatchdogTimeout:
      return "watchdog_timeout";
    case LogEventKind::kWorkTimeoutSeqs:
      return "work_timeout_seqs";
    case LogEventKind::kWatchdogStuck:
      return "watchdog_stuck";
    case LogEventKind::kDumpSignal:
      return "dump_signal";
    case LogEventKind::kProcessTakenDown:
      return "process_taken_down";
    case LogEventKind::kRemotePeerGone:
      return "remote_peer_gone";
    case LogEventKind::kWorkerFailed:
      return "worker_failed";
    case LogEventKind::kRootCauseTable:
      return "root_cause_table";
    case LogEventKind::kSignalSent:
      return "signal_sent";
    case LogEventKind::kSlurmOomEvent:
      return "slurm_oom_event";
    case LogEventKind::kNcclInit:
      return "nccl_init";
    case LogEventKind::kRendezvous:
      return "rendezvous";
    case LogEventKind::kBootClock:
      return "boot_clock";
    case LogEventKind::kLauncherStart:
      return "launcher_start";
    case LogEventKind::kCollectiveEnqueue:
      return "collective_enqueue";
  }
  return "unknown";
}

}  // namespace fr
