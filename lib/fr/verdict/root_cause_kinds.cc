// What each log event stands for in the root cause: the fault kind a line is, whether it is the
// cascade or a crash signal, and which kind goes first when clocks cannot order two faults.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/logs/xid_catalog.h"
#include "fr/verdict/root_cause_explainer.h"

namespace fr::root_cause_internal {

// The signals a process gets for its own fault: SIGILL 4, SIGFPE 8, SIGBUS 7, SIGSEGV 11.
// SIGABRT is left out: torch aborts its own process after a collective failed.
bool IsCrashSignal(int32_t signal) {
  return signal == 4 || signal == 7 || signal == 8 || signal == 11;
}

// The root-cause kind a fault event stands for, or nullopt for cascade and identity lines.
std::optional<RootCauseKind> FaultKind(const LogEvent& event) {
  switch (event.kind) {
    case LogEventKind::kXid:
      // A notice (row remapping recorded, a corrected error) is evidence, never a cause by
      // itself; an Xid the program provoked (a page fault, an engine exception) is its CUDA error.
      switch (LookUpXid(event.xid).severity) {
        case XidSeverity::kInformational:
          return std::nullopt;
        case XidSeverity::kApplication:
          return RootCauseKind::kCudaError;
        default:
          return RootCauseKind::kXid;
      }
    case LogEventKind::kHostOom:
    case LogEventKind::kSlurmOomEvent:
      return RootCauseKind::kHostOom;
    case LogEventKind::kCudaOom:
      return RootCauseKind::kCudaOom;
    case LogEventKind::kCudaError:
      return RootCauseKind::kCudaError;
    case LogEventKind::kSegfault:
      return RootCauseKind::kSegfault;
    case LogEventKind::kPythonException:
      return RootCauseKind::kPythonException;
    case LogEventKind::kTransportError:
      return RootCauseKind::kTransportError;
    case LogEventKind::kHostKill:
      return RootCauseKind::kHostKill;
    case LogEventKind::kInitFailure:
      return RootCauseKind::kInitFailure;
    case LogEventKind::kNonFiniteLoss:
      return RootCauseKind::kNonFinite;
    case LogEventKind::kWorkerFailed:
    case LogEventKind::kRootCauseTable:
      // A worker that died of a crash signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE) crashed; other
      // deaths are the launcher's view of some cause (OOM killer, abort after a timeout) that
      // other lines name.
      if (IsCrashSignal(event.signal)) return RootCauseKind::kSegfault;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// A worker process that ended without a word of its own: Ray's "Worker exit type: SYSTEM_ERROR"
// (killed, or crashed in native code), which Ray reports without an exit code or signal.
bool IsAbruptDeath(const LogEvent& event) {
  return event.kind == LogEventKind::kWorkerFailed && event.signal <= 0 &&
         event.exit_code == INT32_MIN && event.reason.starts_with("Ray worker exit: ");
}

// An exception raised because communication already failed is the cascade, not its cause.
bool IsCascadeException(const LogEvent& event) {
  static constexpr std::string_view kCascade[] = {"DistBackendError",
                                                  "ChildFailedError",
                                                  "KeyboardInterrupt",
                                                  "SystemExit",
                                                  "NCCL",
                                                  "Watchdog",
                                                  "timed out",
                                                  "ProcessGroup",
                                                  "Connection closed",
                                                  "Connection reset",
                                                  "Broken pipe",
                                                  "SIGTERM"};
  for (std::string_view needle : kCascade) {
    if (event.reason.find(needle) != std::string::npos ||
        event.text.find(needle) != std::string::npos) {
      return true;
    }
  }
  // The launcher's own error while handling its workers' failure (torchrun's agent failing to
  // parse an empty error.json that a worker was killed while writing).
  if (event.in_launcher) return true;
  // Gloo's "Timed out waiting 10000ms for recv operation" and kin, whatever the capitals.
  std::string lower = event.text;
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return lower.find("timed out") != std::string::npos || lower.find("by peer") != std::string::npos;
}

// A kill from outside whose time is the controller's (Slurm), not the killed node's.
bool KilledByController(const LogEvent& event) {
  return event.kind == LogEventKind::kHostKill &&
         event.text.find("CANCELLED AT") != std::string::npos;
}

// The launcher itself was signalled ("Received 15 death signal, shutting down workers"): a kill
// from outside only when nothing inside the job failed first (srun also signals the launchers
// of the other nodes after one task failed).
bool LauncherSignalled(const LogEvent& event) {
  return event.kind == LogEventKind::kHostKill && event.signal > 0;
}

// The address part of a peer as a transport error names it: "10.0.0.5<45678>" and
// "10.0.0.5:10895" -> "10.0.0.5", "node05<33445>" -> "node05".
std::string_view PeerHostPart(std::string_view peer) {
  size_t angle = peer.find('<');
  if (angle != std::string_view::npos) return peer.substr(0, angle);
  size_t colon = peer.rfind(':');
  if (colon != std::string_view::npos && peer.find(':') == colon) return peer.substr(0, colon);
  return peer;
}

bool IsCascade(LogEventKind kind) {
  switch (kind) {
    case LogEventKind::kWatchdogTimeout:
    case LogEventKind::kWorkTimeoutSeqs:
    case LogEventKind::kWatchdogStuck:
    case LogEventKind::kProcessTakenDown:
    case LogEventKind::kRemotePeerGone:
    case LogEventKind::kWorkerFailed:
    case LogEventKind::kRootCauseTable:
    case LogEventKind::kDumpSignal:  // asked to dump because some rank timed out
      return true;
    default:
      return false;
  }
}

// Hardware and kernel first: when clocks cannot order two faults, the lower layer is the likelier
// cause of the other.
int KindPriority(RootCauseKind kind) {
  static constexpr RootCauseKind kOrder[] = {
      RootCauseKind::kXid,         RootCauseKind::kHostOom,
      RootCauseKind::kHostKill,    RootCauseKind::kCudaError,
      RootCauseKind::kSegfault,    RootCauseKind::kCudaOom,
      RootCauseKind::kInitFailure, RootCauseKind::kTransportError,
      RootCauseKind::kNonFinite,   RootCauseKind::kPythonException};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (kOrder[i] == kind) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kOrder));
}

std::string Ranks(const std::vector<int64_t>& ranks) {
  std::vector<int64_t> wide(ranks.begin(), ranks.end());
  return FormatRankSet(wide);
}

std::string ClockTime(int64_t ns) {
  std::string utc = FormatUtc(ns);
  // "2026-03-14T11:21:20.770Z" -> "11:21:20.770 UTC"
  return utc.size() > 11 ? utc.substr(11, utc.size() - 12) + " UTC" : "an unknown time";
}

}  // namespace fr::root_cause_internal
