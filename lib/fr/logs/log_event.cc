#include "fr/logs/log_event.h"

#include <map>
#include <set>
#include <utility>

namespace fr {

const char* LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kSlurm:
      return "slurm";
    case Launcher::kOpenMpi:
      return "mpirun";
    case Launcher::kDeepSpeed:
      return "deepspeed";
    case Launcher::kRay:
      return "ray";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kNone:
    case Launcher::kCount:
      break;
  }
  return "";
}

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
    case LogEventKind::kInitFailure:
      return "init_failure";
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
    case LogEventKind::kHostAddress:
      return "host_address";
    case LogEventKind::kNcclVersion:
      return "nccl_version";
    case LogEventKind::kCollectiveEnqueue:
      return "collective_enqueue";
  }
  return "unknown";
}

int32_t WorldCommunicatorSize(const std::vector<LogEvent>& events) {
  std::map<int32_t, std::set<std::pair<std::string, int32_t>>> members_of_size;
  for (const LogEvent& event : events) {
    // The communicator's rank, or the global rank when the line was already resolved.
    int32_t member = event.comm_rank >= 0 ? event.comm_rank : event.rank;
    if (event.kind != LogEventKind::kNcclInit || event.nranks <= 0 || member < 0 ||
        member >= event.nranks) {
      continue;
    }
    // A communicator's rank seen on a host; the same rank of several communicators of one size
    // (each node's local one) counts once per host.
    members_of_size[event.nranks].insert({event.host, member});
  }
  int32_t world = -1;
  size_t best = 0;
  for (const auto& [size, members] : members_of_size) {
    std::set<int32_t> distinct;
    for (const auto& [host, rank] : members) distinct.insert(rank);
    if (distinct.size() >= best) {
      best = distinct.size();
      world = size;
    }
  }
  return world;
}

}  // namespace fr
