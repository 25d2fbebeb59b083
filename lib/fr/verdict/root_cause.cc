#include "fr/verdict/root_cause.h"

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

namespace fr {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
// Faults of one kind this close after the first are one event seen by several ranks (a host's
// OOM killer taking two workers, every rank of a batch running out of GPU memory at once).
constexpr int64_t kSameFaultWindowNs = 10 * kNanosPerSecond;
// Two faults on different hosts closer than this are ordered by clocks that may be off by as
// much: the verdict then says it is not sure which came first.
constexpr int64_t kOrderingDoubtNs = 2 * kNanosPerSecond;
constexpr int kMaxEvidence = 12;
// A writer that printed this many lines after its traceback kept running: it handled and logged
// the exception (a periodic dumper, a retry loop) and did not die of it.
constexpr int32_t kKeptRunningLines = 5;
// This many finite losses printed by the writer of a NaN loss after it: the training recovered.
constexpr int32_t kRecoveredLosses = 2;
// Slurm stamps "CANCELLED AT" with the controller's clock: what the killed ranks print after the
// kill can read up to this much earlier on their own clocks.
constexpr int64_t kControllerSkewNs = 300 * kNanosPerSecond;
// A fault that ended this long before the job began (an old Xid or OOM kill in kern.log) is not
// this job's.
constexpr int64_t kBeforeJobNs = 60 * kNanosPerSecond;
// A fault printed this long after the first timeout, abort or death came after the failure,
// whatever the clocks' errors: it is not its cause.
constexpr int64_t kAfterFailureNs = 30 * 60 * kNanosPerSecond;
// Collectives completed this long after a fault (past any clock error between hosts): the job
// went on, and the fault is not why it stopped.
constexpr int64_t kKeptRunningNs = 10 * 60 * kNanosPerSecond;
// The dumps' newest op and the logs' newest line further apart than this are of different
// runs or clocks.
constexpr int64_t kSameClockNs = 24 * 3600 * kNanosPerSecond;
// The longest start-up assumed between a launch and its first collective.
constexpr int64_t kStartUpNs = 10 * 60 * kNanosPerSecond;

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

// A fault line that may be the root cause.
struct Candidate {
  const LogEvent* event;
  RootCauseKind kind;
};

class Explainer {
 public:
  Explainer(const LogSet& logs, const JobClock& clock, const Judgment* dumps,
            report::Report* report)
      : logs_(logs), clock_(clock), dumps_(dumps), report_(report) {}

  void Run() {
    FillInputs();
    FillTimeline();
    FindVictims();
    MapPeerAddresses();
    FindJobStart();
    report::RootCause* cause = report_->mutable_verdict()->mutable_root_cause();
    if (!FromFaults(cause) && !FromNcclVersionMismatch(cause) && !FromTimeouts(cause) &&
        !FromUncaughtException(cause)) {
      bool any_anomaly = !victims_.empty();
      for (const LogEvent& event : logs_.events) any_anomaly |= IsCascade(event.kind);
      SetKind(cause, any_anomaly ? RootCauseKind::kUnknown : RootCauseKind::kNone);
      SetConfidence(cause, any_anomaly ? Confidence::kLow : Confidence::kMedium);
      cause->set_summary(
          any_anomaly && victims_.empty()
              ? std::string("The logs show a victim's view (a timeout, a peer gone, a death) of a "
                            "rank they name nothing of, and no initiating event.")
          : any_anomaly ? fmt::format("The logs show the cascade ({} rank(s) timed out or aborted) "
                                      "but no initiating event.",
                                      victims_.size())
                        : "The logs show no failure.");
      if (any_anomaly) NameFirstDeath(cause);
      AddCascadeEvidence(cause);
    }
    // The lines in the order they happened, on the corrected clock (lines without any time
    // last, in the order they were added).
    std::vector<report::EvidenceLine> lines(cause->evidence().begin(), cause->evidence().end());
    std::stable_sort(lines.begin(), lines.end(),
                     [](const report::EvidenceLine& a, const report::EvidenceLine& b) {
                       if (a.time().empty() || b.time().empty()) {
                         return !a.time().empty() && b.time().empty();
                       }
                       return a.time() < b.time();
                     });
    cause->clear_evidence();
    for (report::EvidenceLine& line : lines) *cause->add_evidence() = std::move(line);
    Join(cause);
    FillLauncher(*cause);
  }

 private:
  const std::string& PathOf(const LogEvent& event) const {
    static const std::string kNone;
    if (event.file < 0 || event.file >= static_cast<int32_t>(logs_.files.size())) return kNone;
    return logs_.files[event.file].path;
  }

  void FillInputs() {
    std::vector<int64_t> events_per_file(logs_.files.size(), 0);
    for (const LogEvent& event : logs_.events) {
      if (event.file >= 0 && event.file < static_cast<int32_t>(events_per_file.size())) {
        ++events_per_file[event.file];
      }
    }
    for (size_t i = 0; i < logs_.files.size(); ++i) {
      const LogFile& file = logs_.files[i];
      report::LogFileRead* out = report_->add_log_files();
      out->set_path(file.path);
      out->set_format(file.format);
      out->set_lines(file.lines);
      out->set_events(events_per_file[i]);
      out->set_host(file.host);
      out->set_rank(file.rank);
    }
    for (const std::string& error : logs_.errors) report_->add_log_errors(error);
  }

  // Which launchers' words the logs hold, and the launcher's line on the death that matters: the
  // culprit's, else the first it reported.
  void FillLauncher(const report::RootCause& cause) {
    report::LauncherReport* out = report_->mutable_launcher();
    uint32_t seen = 0;
    for (const LogFile& file : logs_.files) seen |= file.launchers;
    for (int launcher = 1; launcher < static_cast<int>(Launcher::kCount); ++launcher) {
      if (seen & LauncherBit(static_cast<Launcher>(launcher))) {
        out->add_names(LauncherName(static_cast<Launcher>(launcher)));
      }
    }
    std::set<int64_t> culprits(cause.ranks().begin(), cause.ranks().end());
    if (culprits.empty()) {
      const auto& ranks = report_->verdict().culprit_ranks();
      culprits.insert(ranks.begin(), ranks.end());
    }
    // A launcher's first report and its report of the culprit. Its kills of the others (torchrun's
    // SIGTERM to the survivors) are its own doing, not deaths it observed.
    const LogEvent* first = nullptr;
    const LogEvent* of_culprit = nullptr;
    for (const LogEvent& event : logs_.events) {
      if (event.launcher == Launcher::kNone || event.signal == 15) continue;
      if (first == nullptr || Before(event, *first)) first = &event;
      if (event.rank >= 0 && culprits.contains(event.rank) &&
          (of_culprit == nullptr || Before(event, *of_culprit))) {
        of_culprit = &event;
      }
    }
    const LogEvent* shown = of_culprit != nullptr ? of_culprit : first;
    if (of_culprit == nullptr && !culprits.empty()) {
      // The launcher's own process failed before it reported the culprit's death (torchrun's
      // agent raising JSONDecodeError on an error.json a worker was killed while writing), so
      // its failure table is missing or names only victims: say so, lest its silence read as
      // "the culprit did not die".
      const LogEvent* crash = nullptr;
      for (const LogEvent& event : logs_.events) {
        if (event.kind == LogEventKind::kPythonException && event.in_launcher &&
            (crash == nullptr || Before(event, *crash))) {
          crash = &event;
        }
      }
      if (crash != nullptr) {
        out->set_note(fmt::format(
            "The launcher itself raised {} ({}:{}) before it reported the culprit's exit; its "
            "report of the deaths is incomplete, so the dumps and the ranks' own lines decide.",
            crash->reason.empty() ? "an exception" : crash->reason, PathOf(*crash), crash->line));
      }
    }
    if (shown == nullptr) return;
    report::RootCause lines;
    AddEvidence(&lines, *shown);
    *out->mutable_death_line() = lines.evidence(0);
    if (first != nullptr && first->rank >= 0 && !culprits.empty() &&
        !culprits.contains(first->rank)) {
      // Before the launcher's crash, if any: what it reported first, then why it stopped.
      out->set_note(fmt::format(
          "{} first reported rank {} ({}:{}), a victim: the rank that caused the failure died "
          "or stopped without the launcher seeing it first.{}{}",
          LauncherName(first->launcher), first->rank, PathOf(*first), first->line,
          out->note().empty() ? "" : " ", out->note()));
    }
  }

  void FillTimeline() {
    for (const HostClock& host : clock_.hosts) {
      report::HostClock* out = report_->mutable_timeline()->add_hosts();
      out->set_host(host.host);
      out->set_offset_ms(host.offset_ns / 1'000'000);
      out->set_drift_ppm(host.drift_ppm);
      out->set_method(host.method);
      out->set_confidence(std::string(ConfidenceName(host.confidence)));
      out->set_anchors(host.anchors);
    }
    for (const std::string& line : clock_.impossible_times) {
      report_->mutable_timeline()->add_impossible_times(line);
    }
  }

  void FindVictims() {
    for (const LogEvent& event : logs_.events) {
      if (event.rank >= 0 && IsCascade(event.kind)) victims_.insert(event.rank);
      if (event.kind == LogEventKind::kWatchdogTimeout &&
          (first_timeout_ == nullptr || Before(event, *first_timeout_))) {
        first_timeout_ = &event;
      }
      // The failure was under way by the first timeout, abort or death report with a time of
      // its own.
      bool failure_seen = event.kind == LogEventKind::kWatchdogTimeout ||
                          event.kind == LogEventKind::kWorkTimeoutSeqs ||
                          event.kind == LogEventKind::kProcessTakenDown ||
                          event.kind == LogEventKind::kWorkerFailed ||
                          event.kind == LogEventKind::kRootCauseTable;
      if (failure_seen && !event.time_inferred && event.time_ns != kNoTime &&
          (failure_seen_ns_ == kNoTime || event.time_ns < failure_seen_ns_)) {
        failure_seen_ns_ = event.time_ns;
      }
    }
  }

  // Which host each address names: NCCL's interface lines ("Bootstrap : Using eth0:10.0.0.5<0>")
  // and the hosts' own names. An address two hosts claim (a loopback, a NAT) names none.
  void MapPeerAddresses() {
    std::map<std::string, std::set<std::string>> hosts_of_address;
    for (const LogEvent& event : logs_.events) {
      if (event.host.empty()) continue;
      known_hosts_.insert(event.host);
      if (event.kind == LogEventKind::kHostAddress && !event.peer_address.empty()) {
        hosts_of_address[event.peer_address].insert(event.host);
      }
    }
    for (const auto& [address, hosts] : hosts_of_address) {
      if (hosts.size() == 1) host_of_address_[address] = *hosts.begin();
    }
  }

  // The host a transport error or a lost connection names as its peer, or "" when unknown or the
  // reporter's own.
  // The host a transport error names, other than the reporter's own.
  std::string PeerHost(const LogEvent& event) const {
    std::string host = PeerHostOf(event);
    return host == event.host ? std::string() : host;
  }

  // The host a transport error names, the reporter's own included; empty when unknown.
  std::string PeerHostOf(const LogEvent& event) const {
    if (event.peer_address.empty()) return {};
    std::string part(PeerHostPart(event.peer_address));
    std::string host;
    if (auto it = host_of_address_.find(part); it != host_of_address_.end()) {
      host = it->second;
    } else if (known_hosts_.contains(part)) {
      host = part;
    } else {
      // NCCL may print a fully qualified name: "node05.cluster<33445>" is node05.
      size_t dot = part.find('.');
      if (dot != std::string::npos && !IsDigitString(part.substr(0, dot)) &&
          known_hosts_.contains(part.substr(0, dot))) {
        host = part.substr(0, dot);
      }
    }
    return host;
  }

  static bool IsDigitString(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  }

  // When the job began, from the launcher and NCCL's start lines, or from the dumps: faults that
  // ended well before it (an old Xid in kern.log, a previous run's OOM kill or traceback) are not
  // this job's. The dumps' first record is the job's first collective, which follows the
  // launch by its start-up (initialization, model load): the job began at most that long before.
  // The launcher's and NCCL's own start lines say when the job began; the dumps only bound it
  // (at most a start-up before the first record), so they decide only without such lines, or
  // when the lines begin after the first record (a restart's banner, a skewed clock). A step of
  // the same allocation that ran and failed before the job began (data preparation killed by
  // the OOM killer) is then not this job's.
  void FindJobStart() {
    int64_t from_lines = kNoTime;
    for (const LogEvent& event : logs_.events) {
      bool start =
          event.kind == LogEventKind::kLauncherStart || event.kind == LogEventKind::kRendezvous ||
          event.kind == LogEventKind::kNcclInit || event.kind == LogEventKind::kHostAddress;
      if (start && event.time_ns != kNoTime && !event.time_inferred &&
          (from_lines == kNoTime || event.time_ns < from_lines)) {
        from_lines = event.time_ns;
      }
    }
    int64_t from_dumps = dumps_ != nullptr && dumps_->first_record_ns > 0
                             ? dumps_->first_record_ns - kStartUpNs
                             : kNoTime;
    job_start_ns_ = from_lines;
    if (from_dumps != kNoTime && (from_lines == kNoTime || from_lines > dumps_->first_record_ns)) {
      job_start_ns_ = from_lines == kNoTime ? from_dumps : std::min(from_lines, from_dumps);
    }
  }

  // The launcher reported this rank's death (a worker that failed, a row of its failure table).
  bool LauncherReportedDeath(int64_t rank) const {
    if (rank < 0) return false;
    for (const LogEvent& event : logs_.events) {
      if ((event.kind == LogEventKind::kWorkerFailed ||
           event.kind == LogEventKind::kRootCauseTable) &&
          event.rank == rank) {
        return true;
      }
    }
    return false;
  }

  // A time of its own, or inferred from an exactly dated report (a worker's death).
  static bool Precise(const LogEvent& event) {
    return event.time_ns != kNoTime &&
           (!event.time_inferred || event.time_upper_ns == event.time_ns);
  }
  static int64_t Earliest(const LogEvent& event) {
    return event.time_ns == kNoTime ? INT64_MIN : event.time_ns;
  }
  static int64_t Latest(const LogEvent& event) {
    if (Precise(event)) return event.time_ns;
    return event.time_upper_ns != kNoTime ? event.time_upper_ns : INT64_MAX;
  }

  static bool Before(const LogEvent& a, const LogEvent& b) {
    if (a.time_ns == kNoTime) return false;
    if (b.time_ns == kNoTime) return true;
    return a.time_ns < b.time_ns;
  }

  void AddEvidence(report::RootCause* cause, const LogEvent& event) {
    if (cause->evidence_size() >= kMaxEvidence) return;
    for (const report::EvidenceLine& line : cause->evidence()) {
      if (line.line() == event.line && line.file() == PathOf(event)) return;
    }
    report::EvidenceLine* line = cause->add_evidence();
    line->set_file(PathOf(event));
    line->set_line(event.line);
    line->set_rank(event.rank);
    line->set_host(event.host);
    std::string raw_time = FormatRawTime(event.raw_time);
    if (event.time_inferred) {
      raw_time = Precise(event) ? "(none: inferred from the worker's reported end)"
                                : fmt::format("(none: printed {})", When(event));
    }
    line->set_raw_time(raw_time);
    line->set_time(FormatUtc(event.time_ns));
    line->set_text(event.text);
    line->set_kind(LogEventKindName(event.kind));
  }

  // The first victims' timeouts: how the cascade began.
  void AddCascadeEvidence(report::RootCause* cause) {
    std::vector<const LogEvent*> timeouts;
    for (const LogEvent& event : logs_.events) {
      if (event.kind == LogEventKind::kWatchdogTimeout) timeouts.push_back(&event);
    }
    std::stable_sort(timeouts.begin(), timeouts.end(),
                     [](const LogEvent* a, const LogEvent* b) { return Before(*a, *b); });
    for (size_t i = 0; i < timeouts.size() && i < 2; ++i) AddEvidence(cause, *timeouts[i]);
  }

  // Without an initiating line, the first worker the launcher saw die is the lead to follow: a
  // SIGKILL nobody logged is most often the kernel's OOM killer, whose lines are in the host's
  // kernel log, not in the job's. It is named, not blamed: the launcher's first observed failure
  // can be a victim.
  void NameFirstDeath(report::RootCause* cause) {
    const LogEvent* first = nullptr;
    // A worker that ended by SIGTERM was stopped by its own launcher after another failed: it
    // is named only when no other death was reported.
    for (bool allow_sigterm : {false, true}) {
      for (const LogEvent& event : logs_.events) {
        bool death = event.kind == LogEventKind::kWorkerFailed ||
                     event.kind == LogEventKind::kRootCauseTable;
        if (!allow_sigterm && event.signal == 15) death = false;
        if (death && (first == nullptr || Before(event, *first))) first = &event;
      }
      if (first != nullptr) break;
    }
    if (first == nullptr) return;
    AddEvidence(cause, *first);
    SetTime(cause, first->time_ns);
    std::string who = first->rank >= 0 ? fmt::format("rank {}", first->rank) : "a worker";
    if (!first->host.empty()) who += " on " + first->host;
    std::string how = first->signal > 0 ? fmt::format("signal {}", first->signal)
                      : first->exit_code != INT32_MIN
                          ? fmt::format("exit code {}", first->exit_code)
                      : !first->reason.empty() ? first->reason
                                               : std::string("how was not logged");
    cause->set_summary(cause->summary() +
                       fmt::format(" The first death the launcher reported: {} ({}).", who, how));
    if (first->signal == 9) {
      cause->set_summary(cause->summary() +
                         " A SIGKILL nobody logged is most often the kernel's OOM killer: read "
                         "that host's kernel log (dmesg, journalctl -k).");
    }
    if (!first->host.empty()) cause->add_hosts(first->host);
    if (first->signal > 0) (*cause->mutable_detail())["signal"] = std::to_string(first->signal);
    // A process that vanished without a word (SIGKILL, Ray's SYSTEM_ERROR exit) is no victim
    // that exited after its collective timed out: it is the rank to follow, named as such.
    if (first->rank >= 0 && (first->signal == 9 || IsAbruptDeath(*first)) &&
        cause->ranks_size() == 0) {
      cause->add_ranks(first->rank);
      victims_.erase(first->rank);
    }
  }

  // srun cancels a step itself when one of its tasks fails ("*** STEP 6053.0 ON node CANCELLED
  // AT ..." with no "DUE TO"), as an operator's scancel does: the cancel is the cause only when
  // nothing else failed, no task died before it, and every death after it was the kill's own
  // (SIGTERM, SIGKILL).
  void DropStepCancelsAfterFailures(std::vector<Candidate>* candidates) const {
    auto bare_step_cancel = [](const Candidate& c) {
      return c.kind == RootCauseKind::kHostKill && c.event->reason == "step cancelled";
    };
    const LogEvent* cancel = nullptr;
    for (const Candidate& c : *candidates) {
      if (bare_step_cancel(c) && (cancel == nullptr || Before(*c.event, *cancel))) {
        cancel = c.event;
      }
    }
    if (cancel == nullptr) return;
    bool other_fault = std::any_of(candidates->begin(), candidates->end(),
                                   [&](const Candidate& c) { return !bare_step_cancel(c); });
    for (const LogEvent& event : logs_.events) {
      bool death =
          event.kind == LogEventKind::kWorkerFailed || event.kind == LogEventKind::kRootCauseTable;
      // In one file (srun's output), the order of the lines; elsewhere, the clocks.
      bool before_cancel = event.file == cancel->file
                               ? event.line < cancel->line
                               : event.time_ns != kNoTime && cancel->time_ns != kNoTime &&
                                     event.time_ns < cancel->time_ns;
      if (death && (before_cancel || (event.signal != 9 && event.signal != 15))) {
        other_fault = true;
      }
      if (event.kind == LogEventKind::kWatchdogTimeout ||
          event.kind == LogEventKind::kRemotePeerGone ||
          event.kind == LogEventKind::kProcessTakenDown) {
        other_fault = true;
      }
    }
    if (other_fault) std::erase_if(*candidates, bare_step_cancel);
  }

  // Only the launcher's word that a worker exited with code 1 (what Python does after an uncaught
  // exception), and nothing of a cascade (no timeout, no abort, no peer gone, no signal but the
  // SIGTERM that stopped the others): the worker raised. Its traceback is in its own output, which
  // these logs lack.
  bool FromUncaughtException(report::RootCause* cause) {
    const LogEvent* first = nullptr;
    for (const LogEvent& event : logs_.events) {
      bool death =
          event.kind == LogEventKind::kWorkerFailed || event.kind == LogEventKind::kRootCauseTable;
      if (!death && IsCascade(event.kind)) return false;
      if (!death) continue;
      // The others' SIGTERM is their launcher stopping them once one worker had failed.
      if (event.signal == 15) continue;
      if (event.signal > 0 || event.exit_code != 1) return false;
      if (first == nullptr || Before(event, *first)) first = &event;
    }
    if (first == nullptr) return false;
    SetKind(cause, RootCauseKind::kPythonException);
    SetConfidence(cause, Confidence::kLow);
    SetTime(cause, first->time_ns);
    AddEvidence(cause, *first);
    if (first->rank >= 0) {
      cause->add_ranks(first->rank);
      victims_.erase(first->rank);
    }
    if (!first->host.empty()) cause->add_hosts(first->host);
    std::string who = first->rank >= 0 ? fmt::format("Rank {}", first->rank) : "A worker";
    cause->set_summary(fmt::format(
        "{} exited with code 1, as Python does after an uncaught exception, and nothing else "
        "failed first in these logs. The exception itself is in that worker's own output "
        "(its traceback), which these logs do not hold: read it to know what was raised.",
        who));
    return true;
  }

  // The kind and confidence are kept as values for the join with the dumps, and written once.
  void SetKind(report::RootCause* cause, RootCauseKind kind) {
    kind_ = kind;
    cause->set_kind(std::string(RootCauseKindName(kind)));
  }

  void SetConfidence(report::RootCause* cause, Confidence confidence) {
    confidence_ = confidence;
    cause->set_confidence(std::string(ConfidenceName(confidence)));
  }

  void SetTime(report::RootCause* cause, int64_t ns) {
    if (ns == kNoTime) return;
    cause->set_time_ns(ns);
    cause->set_time(FormatUtc(ns));
  }

  Confidence HostClockConfidence(const std::string& host) const {
    const HostClock* clock = clock_.Find(host);
    return clock == nullptr ? Confidence::kLow : clock->confidence;
  }

  bool FromFaults(report::RootCause* cause) {
    dumps_share_clock_ = DumpsShareTheLogsClock();
    std::vector<Candidate> candidates;
    for (const LogEvent& event : logs_.events) {
      std::optional<RootCauseKind> kind = FaultKind(event);
      if (!kind || event.impossible_time) continue;
      if (*kind == RootCauseKind::kPythonException && IsCascadeException(event)) continue;
      // A traceback its writer went on printing after was handled and logged, not a death.
      if (*kind == RootCauseKind::kPythonException && event.lines_after >= kKeptRunningLines &&
          !LauncherReportedDeath(event.rank)) {
        continue;
      }
      // A connection NCCL could not make before any communicator came up or any collective ran
      // (bootstrap's "Call to connect failed"): the job never formed.
      if (*kind == RootCauseKind::kTransportError && IsConnectFailure(event) &&
          !JobFormedBefore(event)) {
        kind = RootCauseKind::kInitFailure;
      }
      // A store or rendezvous error the job got past (the client retried; communicators then
      // came up and collectives ran) is no init failure.
      if (*kind == RootCauseKind::kInitFailure && JobFormedAfter(event)) continue;
      // The kernel's line names a process that is none of the job's.
      if (OfAnotherProcess(event)) continue;
      // The flight recorder saw the job go on long after it: it stopped nothing.
      if (KeptRunningAfter(event)) continue;
      // A loss that went non-finite and came back finite: training went on after it.
      if (*kind == RootCauseKind::kNonFinite && event.finite_losses_after >= kRecoveredLosses) {
        continue;
      }
      // Killed from outside after the job had already stalled: the stall came first.
      if (*kind == RootCauseKind::kHostKill && first_timeout_ != nullptr &&
          Before(*first_timeout_, event)) {
        continue;
      }
      if (job_start_ns_ != kNoTime && Latest(event) < job_start_ns_ - kBeforeJobNs) continue;
      // Printed well after the failure was already reported: it cannot have caused it (an Xid
      // logged the next day, a crash during the teardown).
      if (failure_seen_ns_ != kNoTime && Earliest(event) > failure_seen_ns_ + kAfterFailureNs) {
        continue;
      }
      candidates.push_back({&event, *kind});
    }
    settled_by_.clear();
    DropConsequencesOfKills(&candidates);
    DropStepCancelsAfterFailures(&candidates);
    // Transport errors are one rank's view of its peer. Views of a peer that failed on its own
    // (its fault is among the candidates) or that fell silent are its victims' reports.
    std::map<std::string, std::vector<const LogEvent*>> reports_about;
    std::set<std::string> hosts_reporting;  // hosts that printed a fault or transport error
    for (const Candidate& candidate : candidates) {
      if (!candidate.event->host.empty()) hosts_reporting.insert(candidate.event->host);
    }
    for (const LogEvent& event : logs_.events) {
      if (event.kind != LogEventKind::kTransportError &&
          event.kind != LogEventKind::kRemotePeerGone) {
        continue;
      }
      std::string peer = PeerHost(event);
      if (!peer.empty()) reports_about[peer].push_back(&event);
    }
    std::set<std::string> failed_peers, silent_peers;
    for (const auto& [peer, reports] : reports_about) {
      bool own_fault = false;
      for (const Candidate& candidate : candidates) {
        own_fault |=
            candidate.event->host == peer && candidate.kind != RootCauseKind::kTransportError;
      }
      if (own_fault) {
        failed_peers.insert(peer);
      } else if (!hosts_reporting.contains(peer) && FellSilent(peer, reports)) {
        silent_peers.insert(peer);
      }
    }
    // A peer on the reporter's own host (a socket between two of its processes) that failed on
    // its own is that host's fault too.
    auto own_host_failed = [&](const LogEvent& report) {
      if (report.host.empty() || PeerHostOf(report) != report.host) return false;
      return std::any_of(candidates.begin(), candidates.end(), [&](const Candidate& c) {
        return c.event->host == report.host && c.kind != RootCauseKind::kTransportError;
      });
    };
    std::erase_if(candidates, [&](const Candidate& c) {
      if (c.kind != RootCauseKind::kTransportError) return false;
      std::string peer = PeerHost(*c.event);
      return failed_peers.contains(peer) || silent_peers.contains(peer) ||
             own_host_failed(*c.event);
    });
    // A silent peer leads unless a fault came before the first report about it.
    const LogEvent* first_report = nullptr;
    std::string silent;
    for (const std::string& peer : silent_peers) {
      for (const LogEvent* report : reports_about[peer]) {
        if (first_report == nullptr || Before(*report, *first_report)) {
          first_report = report;
          silent = peer;
        }
      }
    }
    if (first_report != nullptr &&
        std::none_of(candidates.begin(), candidates.end(), [&](const Candidate& c) {
          return c.kind != RootCauseKind::kHostKill && Earliest(*c.event) < Latest(*first_report);
        })) {
      return FromSilentPeer(cause, silent, reports_about[silent]);
    }
    if (candidates.empty()) return false;
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) {
                       if (a.event->time_ns != b.event->time_ns) return Before(*a.event, *b.event);
                       return KindPriority(a.kind) < KindPriority(b.kind);
                     });
    // A line without a time of its own is only known to lie between the timed lines around it.
    // Every fault that may have come first (its earliest time before every fault's latest) is a
    // contender; a fault with a time of its own beats those known only by bounds, and among
    // the bounded ones the lower layer (hardware, kernel) goes first.
    int64_t first_possible_end = INT64_MAX;
    for (const Candidate& candidate : candidates) {
      first_possible_end = std::min(first_possible_end, Latest(*candidate.event));
    }
    auto contender = [&](const Candidate& c) { return Earliest(*c.event) <= first_possible_end; };
    auto lead_it = std::find_if(candidates.begin(), candidates.end(), [&](const Candidate& c) {
      return contender(c) && Precise(*c.event);
    });
    if (lead_it == candidates.end()) {
      // One host's lines in one file arrived in the order they were written: a fault below an
      // earlier one of its host's in the same file came after it, whatever its layer.
      std::map<std::pair<int32_t, std::string_view>, int64_t> first_line_of_host;
      for (const Candidate& c : candidates) {
        if (!contender(c) || c.event->host.empty()) continue;
        auto [it, added] =
            first_line_of_host.try_emplace({c.event->file, c.event->host}, c.event->line);
        if (!added) it->second = std::min(it->second, c.event->line);
      }
      auto known_later = [&](const Candidate& c) {
        if (c.event->host.empty()) return false;
        return first_line_of_host.at({c.event->file, c.event->host}) < c.event->line;
      };
      for (auto it = candidates.begin(); it != candidates.end(); ++it) {
        if (!contender(*it) || known_later(*it)) continue;
        if (lead_it == candidates.end() || KindPriority(it->kind) < KindPriority(lead_it->kind)) {
          lead_it = it;
        }
      }
    }
    // Bounds that cross (a line placed after a later one by its neighbours) can leave no
    // contender at all: the earliest by time then leads.
    if (lead_it == candidates.end()) lead_it = candidates.begin();
    // An Xid the program can provoke (13, 31, ...) followed within seconds by one of the GPU's
    // own faults on the same GPU (109 context switch timeout, 79 fallen off the bus, ...): the
    // GPU failed, and the first Xid was its first symptom.
    if (lead_it->kind == RootCauseKind::kCudaError && lead_it->event->kind == LogEventKind::kXid &&
        !lead_it->event->bus_id.empty() && lead_it->event->time_ns != kNoTime) {
      const LogEvent& symptom = *lead_it->event;
      for (auto it = candidates.begin(); it != candidates.end(); ++it) {
        const LogEvent& other = *it->event;
        if (it->kind == RootCauseKind::kXid && other.bus_id == symptom.bus_id &&
            other.time_ns != kNoTime && other.time_ns >= symptom.time_ns &&
            other.time_ns - symptom.time_ns <= kSameFaultWindowNs) {
          lead_it = it;
          break;
        }
      }
    }
    std::rotate(candidates.begin(), lead_it, lead_it + 1);
    const Candidate& first = candidates.front();
    const LogEvent& lead = *first.event;
    SetKind(cause, first.kind);
    if (first.kind == RootCauseKind::kInitFailure) init_step_ = InitStep(lead);
    SetTime(cause, lead.time_ns);

    std::set<int64_t> ranks;
    std::set<std::string> hosts;
    std::vector<const LogEvent*> initiating;
    for (const Candidate& candidate : candidates) {
      const LogEvent& event = *candidate.event;
      bool same =
          candidate.kind == first.kind && (event.time_ns == kNoTime || lead.time_ns == kNoTime ||
                                           event.time_ns - lead.time_ns <= kSameFaultWindowNs);
      // An exception is one rank's: a second rank raising later is not the same event.
      // So is a loss gone non-finite: the first rank's, not every rank that printed the same
      // all-reduced loss after it.
      if ((first.kind == RootCauseKind::kPythonException ||
           first.kind == RootCauseKind::kNonFinite) &&
          event.rank != lead.rank) {
        same = false;
      }
      // The peer's own report of the lead's lost connection is its consequence, not the cause.
      if (first.kind == RootCauseKind::kTransportError && &event != &lead &&
          (event.host == PeerHost(lead) || (!event.host.empty() && PeerHost(event) == lead.host))) {
        same = false;
      }
      if (!same) continue;
      initiating.push_back(&event);
      if (event.rank >= 0) ranks.insert(event.rank);
      if (!event.host.empty()) hosts.insert(event.host);
    }
    // A host OOM kill names a pid the launcher also reports as a worker killed by SIGKILL: that
    // worker is the rank, when the kernel line alone could not say.
    if (first.kind == RootCauseKind::kHostOom && ranks.empty()) {
      for (const LogEvent& event : logs_.events) {
        if (event.kind == LogEventKind::kWorkerFailed && event.signal == 9 && event.rank >= 0 &&
            hosts.contains(event.host) &&
            (lead.time_ns == kNoTime || event.time_ns == kNoTime ||
             std::llabs(event.time_ns - lead.time_ns) <= 120 * kNanosPerSecond)) {
          ranks.insert(event.rank);
          initiating.push_back(&event);
          break;
        }
      }
    }
    if (first.kind == RootCauseKind::kHostKill) ranks.clear();
    for (int64_t rank : ranks) cause->add_ranks(rank);
    for (const std::string& host : hosts) cause->add_hosts(host);
    for (const LogEvent* event : initiating) AddEvidence(cause, *event);
    // The launcher's and Slurm's view of the culprit's end.
    for (const LogEvent& event : logs_.events) {
      bool about_culprit =
          (event.rank >= 0 && ranks.contains(event.rank)) ||
          (event.kind == LogEventKind::kSlurmOomEvent && hosts.contains(event.host));
      if (about_culprit && (event.kind == LogEventKind::kWorkerFailed ||
                            event.kind == LogEventKind::kRootCauseTable ||
                            event.kind == LogEventKind::kSlurmOomEvent)) {
        AddEvidence(cause, event);
      }
    }
    AddCascadeEvidence(cause);
    for (const LogEvent& event : logs_.events) {
      if (event.rank >= 0 && ranks.contains(event.rank)) victims_.erase(event.rank);
    }

    FillDetail(cause, lead);
    // Confidence: the order rests on the clocks, and the culprit on a known rank.
    Confidence confidence = Confidence::kHigh;
    std::string doubt;
    if (lead.time_ns == kNoTime) confidence = Confidence::kLow;
    if (HostClockConfidence(lead.host) == Confidence::kLow && logs_.files.size() > 1) {
      confidence = Confidence::kMedium;
    }
    if (ranks.empty() && first.kind != RootCauseKind::kHostKill) confidence = Confidence::kMedium;
    // A step cancelled without a reason may have been srun's reaction to a failure these logs
    // do not show.
    if (lead.reason == "step cancelled") confidence = std::min(confidence, Confidence::kMedium);
    for (const Candidate& other : candidates) {
      const LogEvent& event = *other.event;
      if (event.host == lead.host || other.kind == first.kind) continue;
      if (event.time_ns != kNoTime && lead.time_ns != kNoTime &&
          event.time_ns - lead.time_ns < kOrderingDoubtNs) {
        confidence = Confidence::kMedium;
        doubt = fmt::format(
            " A {} on {} came within {} ms; the clocks cannot order the two for certain.",
            RootCauseKindName(other.kind), event.host.empty() ? "an unknown host" : event.host,
            (event.time_ns - lead.time_ns) / 1'000'000);
      }
      break;
    }
    SetConfidence(cause, confidence);
    cause->set_summary(FaultSentence(first.kind, lead, ranks, hosts) + doubt + settled_by_);
    return true;
  }

  // A kernel line (OOM kill, Xid) naming a pid on a host where every rank the logs show has a
  // known pid (NCCL's "host:pid:tid" prefix, the launcher's "(pid: N)"), none of them that one:
  // another process's fault (a second job, a monitoring agent), not the job's.
  bool OfAnotherProcess(const LogEvent& event) const {
    if ((event.kind != LogEventKind::kHostOom && event.kind != LogEventKind::kXid) ||
        event.pid < 0 || event.host.empty()) {
      return false;
    }
    std::set<int64_t> ranks_seen;
    std::map<int64_t, std::set<int32_t>> pids_of_rank;
    for (const LogEvent& other : logs_.events) {
      if (other.host != event.host || other.rank < 0 || other.kind == LogEventKind::kHostOom ||
          other.kind == LogEventKind::kXid) {
        continue;
      }
      ranks_seen.insert(other.rank);
      if (other.pid >= 0) pids_of_rank[other.rank].insert(other.pid);
    }
    if (ranks_seen.empty() || pids_of_rank.size() != ranks_seen.size()) return false;
    for (const auto& [rank, pids] : pids_of_rank) {
      if (pids.contains(event.pid)) return false;
    }
    return true;
  }

  // Whether the dumps show the job made progress long after `event`: the rank it names (any
  // rank, for a line that names none) completed collectives well after it, on the rank's own
  // clock, so more than the clocks' disagreement. An OOM kill of another process, a Xid of a
  // GPU the job did not use, a NaN the loss scaler skipped: the job went on.
  bool KeptRunningAfter(const LogEvent& event) const {
    if (!dumps_share_clock_ || event.time_ns == kNoTime) return false;
    int64_t at = Latest(event);
    if (at == INT64_MAX) return false;
    int64_t progress = kNoTime;
    for (const auto& [rank, ns] : dumps_->last_completed_ns) {
      if (event.rank >= 0 && rank != event.rank) continue;
      progress = std::max(progress, ns);
    }
    return progress != kNoTime && progress > at + kKeptRunningNs;
  }

  // Whether the dumps' times and the logs' read on one clock: the newest op the dumps saw
  // complete and the newest timed line lie within a day of each other. Logs and dumps of
  // different runs (or a host clock set years off) cannot say what happened after what.
  bool DumpsShareTheLogsClock() const {
    if (dumps_ == nullptr) return false;
    int64_t newest_line = kNoTime, newest_op = kNoTime;
    for (const LogEvent& event : logs_.events) {
      if (Precise(event)) newest_line = std::max(newest_line, event.time_ns);
    }
    for (const auto& [rank, ns] : dumps_->last_completed_ns) newest_op = std::max(newest_op, ns);
    return newest_line != kNoTime && newest_op != kNoTime &&
           std::llabs(newest_line - newest_op) <= kSameClockNs;
  }

  static bool IsConnectFailure(const LogEvent& event) {
    std::string_view text = event.text;
    return text.find("connect failed") != std::string_view::npos ||
           text.find("Connect to ") != std::string_view::npos ||
           text.find("failed to connect") != std::string_view::npos;
  }

  // Whether a communicator had come up or a collective had run before `event`: an NCCL init
  // line, a timeout of a collective, earlier in the same file or earlier on the clock, or a
  // recorded collective in the dumps before it.
  bool JobFormedBefore(const LogEvent& event) const {
    for (const LogEvent& other : logs_.events) {
      bool formed = other.kind == LogEventKind::kNcclInit ||
                    other.kind == LogEventKind::kWatchdogTimeout ||
                    other.kind == LogEventKind::kWorkTimeoutSeqs;
      if (!formed) continue;
      if (other.file == event.file && other.line < event.line) return true;
      if (Precise(other) && event.time_ns != kNoTime && other.time_ns < Earliest(event))
        return true;
    }
    return dumps_ != nullptr && dumps_->first_record_ns > 0 && event.time_ns != kNoTime &&
           dumps_->first_record_ns < Earliest(event);
  }

  // Whether the job formed after `event`: a communicator came up, a rendezvous completed, a
  // collective ran (a timeout names one, a dump recorded one) later in the same file or, by the
  // corrected clock, later anywhere.
  bool JobFormedAfter(const LogEvent& event) const {
    auto formed = [](LogEventKind kind) {
      return kind == LogEventKind::kNcclInit || kind == LogEventKind::kRendezvous ||
             kind == LogEventKind::kWatchdogTimeout || kind == LogEventKind::kWorkTimeoutSeqs;
    };
    for (const LogEvent& other : logs_.events) {
      if (!formed(other.kind)) continue;
      if (other.file == event.file && other.line > event.line) return true;
      if (Latest(event) != INT64_MAX && Earliest(other) > Latest(event)) return true;
    }
    return dumps_ != nullptr && dumps_->first_record_ns > 0 && Latest(event) != INT64_MAX &&
           dumps_->first_record_ns > Latest(event);
  }

  // A host whose peers lost it fell silent when it printed nothing after their first report: no
  // timeout or lost connection of its own (a live host's ranks time out too), no line later.
  bool FellSilent(const std::string& host, const std::vector<const LogEvent*>& reports) const {
    int64_t first_report_end = INT64_MAX;
    for (const LogEvent* report : reports) {
      first_report_end = std::min(first_report_end, Latest(*report));
    }
    for (const LogEvent& event : logs_.events) {
      if (event.host != host) continue;
      if (IsCascade(event.kind) && event.kind != LogEventKind::kWorkerFailed &&
          event.kind != LogEventKind::kRootCauseTable) {
        return false;
      }
      if (first_report_end != INT64_MAX && Earliest(event) != INT64_MIN &&
          Earliest(event) > first_report_end + kOrderingDoubtNs) {
        return false;
      }
    }
    return true;
  }

  // Hosts that run different NCCL releases, with no fault of their own: the job's processes
  // cannot be trusted to agree on a protocol (a hang in init or in the first collectives). The
  // hosts of the less common release are named.
  bool FromNcclVersionMismatch(report::RootCause* cause) {
    std::map<std::string, std::set<std::string>> hosts_of_version;
    std::map<std::string, const LogEvent*> line_of_version;
    for (const LogEvent& event : logs_.events) {
      if (event.kind != LogEventKind::kNcclVersion || event.host.empty()) continue;
      hosts_of_version[event.reason].insert(event.host);
      line_of_version.try_emplace(event.reason, &event);
    }
    if (hosts_of_version.size() < 2) return false;
    size_t most = 0;
    for (const auto& [version, hosts] : hosts_of_version) most = std::max(most, hosts.size());
    std::set<std::string> odd_hosts;
    std::vector<std::string> parts;
    for (const auto& [version, hosts] : hosts_of_version) {
      parts.push_back(fmt::format("{} on {}", version, fmt::join(hosts, ", ")));
      // With a majority release, the others are odd; with none, every host is named.
      if (hosts.size() < most ||
          std::all_of(hosts_of_version.begin(), hosts_of_version.end(),
                      [&](const auto& v) { return v.second.size() == most; })) {
        odd_hosts.insert(hosts.begin(), hosts.end());
      }
      AddEvidence(cause, *line_of_version[version]);
    }
    SetKind(cause, RootCauseKind::kInitFailure);
    for (const std::string& host : odd_hosts) cause->add_hosts(host);
    SetConfidence(cause, Confidence::kMedium);
    (*cause->mutable_detail())["nccl_versions"] = fmt::format("{}", fmt::join(parts, "; "));
    cause->set_summary(fmt::format(
        "The hosts run different NCCL releases ({}): processes built against different releases "
        "can hang or fail when they form communicators.",
        fmt::join(parts, "; ")));
    AddCascadeEvidence(cause);
    return true;
  }

  // Kills from outside end what the killed ranks were doing; their transport errors and lost
  // connections are its consequence, even where their clocks put them a little earlier (Slurm's
  // "CANCELLED AT" is the controller's clock). A launcher that was signalled is a kill from
  // outside only when nothing inside the job failed.
  void DropConsequencesOfKills(std::vector<Candidate>* candidates) {
    bool inside_failure =
        std::any_of(candidates->begin(), candidates->end(), [](const Candidate& c) {
          return c.kind != RootCauseKind::kHostKill && c.kind != RootCauseKind::kTransportError;
        });
    // A launcher signalled after Slurm cancelled the job is that cancel's echo on the node.
    bool controller_kill =
        std::any_of(candidates->begin(), candidates->end(),
                    [](const Candidate& c) { return KilledByController(*c.event); });
    if (inside_failure || controller_kill) {
      std::erase_if(*candidates, [](const Candidate& c) { return LauncherSignalled(*c.event); });
    }
    const LogEvent* kill = nullptr;
    for (const Candidate& c : *candidates) {
      if (c.kind == RootCauseKind::kHostKill && (kill == nullptr || Before(*c.event, *kill))) {
        kill = c.event;
      }
    }
    if (kill == nullptr || kill->time_ns == kNoTime) return;
    int64_t skew = KilledByController(*kill) ? kControllerSkewNs : kOrderingDoubtNs;
    size_t before = candidates->size();
    std::erase_if(*candidates, [&](const Candidate& c) {
      return c.kind == RootCauseKind::kTransportError && Latest(*c.event) >= kill->time_ns - skew;
    });
    if (candidates->size() < before) {
      settled_by_ = fmt::format(
          " {} transport error(s) printed from {} s before the kill on are its consequence{}.",
          before - candidates->size(), skew / kNanosPerSecond,
          KilledByController(*kill) ? " (the kill's time is the Slurm controller's clock)" : "");
    }
  }

  // Peers lost their connections to `host`, which printed no error of its own: the node went
  // away (a node failure, a power or kernel crash) and its peers are victims.
  bool FromSilentPeer(report::RootCause* cause, const std::string& host,
                      const std::vector<const LogEvent*>& reports) {
    const LogEvent* node_failure = nullptr;
    for (const LogEvent& event : logs_.events) {
      if (event.kind == LogEventKind::kHostKill && event.reason == "node failure") {
        node_failure = &event;
      }
    }
    const LogEvent* first = reports.front();
    for (const LogEvent* report : reports) {
      if (Before(*report, *first)) first = report;
    }
    SetKind(cause, node_failure != nullptr ? RootCauseKind::kHostKill : RootCauseKind::kUnknown);
    SetTime(cause, first->time_ns);
    cause->add_hosts(host);
    std::set<int64_t> ranks;
    if (node_failure == nullptr) {
      for (const LogEvent& event : logs_.events) {
        if (event.host == host && event.rank >= 0) ranks.insert(event.rank);
      }
    }
    for (int64_t rank : ranks) cause->add_ranks(rank);
    std::set<int64_t> reporters;
    std::set<std::string> reporter_hosts;
    for (const LogEvent* report : reports) {
      if (report->rank >= 0) {
        reporters.insert(report->rank);
        victims_.insert(report->rank);
      }
      if (!report->host.empty()) reporter_hosts.insert(report->host);
      AddEvidence(cause, *report);
    }
    for (int64_t rank : ranks) victims_.erase(rank);
    // Where the silent host's own logs end.
    const LogEvent* last_of_host = nullptr;
    for (const LogEvent& event : logs_.events) {
      if (event.host == host && event.time_ns != kNoTime &&
          (last_of_host == nullptr || Before(*last_of_host, event))) {
        last_of_host = &event;
      }
    }
    if (last_of_host != nullptr) AddEvidence(cause, *last_of_host);
    if (node_failure != nullptr) AddEvidence(cause, *node_failure);
    SetConfidence(cause, Confidence::kMedium);
    (*cause->mutable_detail())["peer_reports"] = std::to_string(reports.size());
    std::string sentence = fmt::format(
        "{} on {} lost the connection to {} from {}, and {} printed no error of its own",
        reporters.empty() ? "Ranks" : "Rank(s) " + Ranks({reporters.begin(), reporters.end()}),
        fmt::join(reporter_hosts, ", "), host, ClockTime(first->time_ns), host);
    if (last_of_host != nullptr) {
      sentence += fmt::format(" (its last line read is from {})", ClockTime(last_of_host->time_ns));
    }
    sentence += node_failure != nullptr
                    ? fmt::format(": Slurm reports a NODE FAILURE; {} went down.", host)
                    : fmt::format(
                          ": {} went away (a node, kernel or power failure, or a kill "
                          "that left no line); nothing read says why.",
                          host);
    cause->set_summary(sentence);
    return true;
  }

  void FillDetail(report::RootCause* cause, const LogEvent& lead) {
    auto& detail = *cause->mutable_detail();
    if (lead.xid >= 0) detail["xid"] = std::to_string(lead.xid);
    if (!lead.bus_id.empty()) detail["bus_id"] = lead.bus_id;
    if (lead.pid >= 0) detail["pid"] = std::to_string(lead.pid);
    if (lead.signal >= 0) detail["signal"] = std::to_string(lead.signal);
    if (lead.exit_code != INT32_MIN) detail["exit_code"] = std::to_string(lead.exit_code);
    if (lead.bytes >= 0) {
      detail[lead.kind == LogEventKind::kCudaOom ? "bytes_requested" : "bytes"] =
          std::to_string(lead.bytes);
    }
    if (!lead.reason.empty()) {
      detail[lead.kind == LogEventKind::kPythonException ? "exception" : "reason"] = lead.reason;
    }
    if (lead.seq >= 0) detail["seq"] = std::to_string(lead.seq);
    if (!lead.op.empty()) detail["op"] = lead.op;
    if (!lead.process_group.empty()) detail["process_group"] = lead.process_group;
  }

  std::string Who(const std::set<int64_t>& ranks, const std::set<std::string>& hosts) const {
    std::vector<int64_t> list(ranks.begin(), ranks.end());
    std::string who;
    if (!list.empty()) who = fmt::format("{} {}", list.size() == 1 ? "Rank" : "Ranks", Ranks(list));
    if (!hosts.empty()) {
      who += fmt::format("{}{}", who.empty() ? "Host " : " on ", fmt::join(hosts, ", "));
    }
    return who.empty() ? "A rank" : who;
  }

  // "at 11:21:20.770 UTC"; for a line printed without a time (a traceback, a faulthandler
  // block), where its file's timed lines around it put it: "between A and B", "after A".
  // A file's modification time also bounds its untimed lines for ordering, but it is the storing
  // machine's clock, 10 minutes of slack added: only a timed line after it is said as a bound.
  static std::string When(const LogEvent& event) {
    int64_t upper = event.next_time.kind != LogTime::Kind::kNone ? event.time_upper_ns : kNoTime;
    if (Precise(event) || (event.time_ns == kNoTime && upper == kNoTime)) {
      return "at " + ClockTime(event.time_ns);
    }
    if (event.time_ns == kNoTime) return "before " + ClockTime(upper);
    if (upper == kNoTime) return "after " + ClockTime(event.time_ns);
    return fmt::format("between {} and {}", ClockTime(event.time_ns), ClockTime(upper));
  }

  std::string FaultSentence(RootCauseKind kind, const LogEvent& lead,
                            const std::set<int64_t>& ranks, const std::set<std::string>& hosts) {
    std::string who = Who(ranks, hosts);
    std::string when = When(lead);
    std::string sentence;
    if (kind == RootCauseKind::kXid) {
      sentence = fmt::format("{}: the GPU driver reported Xid {}{} {}{}.", who, lead.xid,
                             lead.bus_id.empty() ? "" : " on PCI " + lead.bus_id, when,
                             lead.reason.empty() ? "" : " (" + lead.reason + ")");
    } else if (kind == RootCauseKind::kHostOom) {
      sentence = fmt::format("{}: the kernel's OOM killer killed the process{} {}.", who,
                             lead.pid >= 0 ? fmt::format(" (pid {})", lead.pid) : "", when);
    } else if (kind == RootCauseKind::kCudaOom) {
      sentence = fmt::format(
          "{} ran out of GPU memory{} {}.", who,
          lead.bytes >= 0 ? fmt::format(" (tried to allocate {} bytes)", lead.bytes) : "", when);
    } else if (kind == RootCauseKind::kHostKill) {
      sentence =
          fmt::format("The job was killed from outside ({}){} {}; no rank is to blame.",
                      lead.reason.empty() ? "cancelled" : lead.reason,
                      hosts.empty() ? "" : fmt::format(" on {}", fmt::join(hosts, ", ")), when);
    } else if (kind == RootCauseKind::kTransportError) {
      sentence = fmt::format("{} saw the job's first network/transport error {}.", who, when);
    } else if (kind == RootCauseKind::kPythonException) {
      sentence = fmt::format("{} raised {} {}.", who,
                             lead.reason.empty() ? "an exception" : lead.reason, when);
    } else if (kind == RootCauseKind::kCudaError) {
      sentence = fmt::format("{} hit a CUDA error {}.", who, when);
    } else if (kind == RootCauseKind::kSegfault) {
      static constexpr std::string_view kCrashNames[] = {"",
                                                         "",
                                                         "",
                                                         "",
                                                         "an illegal instruction (SIGILL)",
                                                         "",
                                                         "",
                                                         "a bus error (SIGBUS)",
                                                         "a floating-point exception (SIGFPE)",
                                                         "",
                                                         "",
                                                         "a segmentation fault"};
      std::string_view crash =
          lead.signal > 0 && lead.signal < 12 && !kCrashNames[lead.signal].empty()
              ? kCrashNames[lead.signal]
              : kCrashNames[11];
      sentence = fmt::format("{} crashed with {} {}.", who, crash, when);
    } else if (kind == RootCauseKind::kInitFailure) {
      sentence = fmt::format("The job never formed: {} could not {} {}{}.", who, InitStep(lead),
                             when, lead.reason.empty() ? "" : " (" + lead.reason + ")");
    } else if (kind == RootCauseKind::kNonFinite) {
      sentence = fmt::format("{}'s loss went non-finite (NaN or inf) first, {}.", who, when);
    }
    if (!victims_.empty()) {
      sentence += fmt::format(" {} other rank(s) then timed out or aborted.", victims_.size());
    }
    return sentence;
  }

  bool FromTimeouts(report::RootCause* cause) {
    // The collective each group's victims time out in: its highest timed-out sequence number.
    std::map<std::string, int64_t> stalled_seq;
    for (const LogEvent& event : logs_.events) {
      if (event.kind != LogEventKind::kWatchdogTimeout || event.seq < 0) continue;
      auto [it, inserted] = stalled_seq.try_emplace(event.process_group, event.seq);
      if (!inserted) it->second = std::max(it->second, event.seq);
    }
    // Gloo's timeouts name no sequence number: the ranks that printed one reached the collective.
    if (stalled_seq.empty() && first_timeout_ == nullptr) return false;
    SetKind(cause, RootCauseKind::kCollectiveTimeout);
    // Ranks that never reached it: their watchdog names an earlier op of the group, or their
    // last enqueued work is earlier.
    std::set<int64_t> laggards;
    std::set<int64_t> reached;
    for (const LogEvent& event : logs_.events) {
      if (event.rank < 0) continue;
      if (event.kind == LogEventKind::kWatchdogTimeout && event.seq >= 0) {
        int64_t stalled = stalled_seq[event.process_group];
        (event.seq < stalled ? laggards : reached).insert(event.rank);
      } else if (event.kind == LogEventKind::kWatchdogTimeout) {
        reached.insert(event.rank);
      }
    }
    int64_t highest = 0;
    for (const auto& [group, seq] : stalled_seq) highest = std::max(highest, seq);
    for (const LogEvent& event : logs_.events) {
      // The watchdog's status line, or the line of a rank dumping its flight recorder because
      // another timed out, says how far the rank got.
      bool says_progress =
          event.kind == LogEventKind::kWorkTimeoutSeqs || event.kind == LogEventKind::kDumpSignal;
      if (says_progress && event.rank >= 0 && event.last_enqueued_seq >= 0 &&
          event.last_enqueued_seq < highest && !reached.contains(event.rank)) {
        laggards.insert(event.rank);
      }
    }
    for (int64_t rank : reached) laggards.erase(rank);
    std::string how = "its watchdog or flight-recorder dump names an earlier collective";
    // The laggards' own lines name how far they got: surer than silence.
    bool named_by_own_lines = true;
    size_t silent_candidates = 0;
    if (laggards.empty()) {
      // Ranks the job has that printed something but no timeout: silent in the collective.
      // Ranks are dense: below the highest rank seen, or the world size an init line gives,
      // every rank exists even if it printed nothing, so the job's ranks are 0..world-1.
      int64_t world = WorldCommunicatorSize(logs_.events);
      for (const LogEvent& event : logs_.events) {
        if (event.rank >= 0) world = std::max<int64_t>(world, int64_t{event.rank} + 1);
        // A reduce-scatter or all-gather's sizes give its group's size, which the job has at
        // least: a pasted excerpt's highest rank does not bound the world.
        world = std::max(world, GroupSizeFromSizes(event));
      }
      // Silent ranks are named only while at most half the job is silent, so at least half of
      // it is among the ranks that reached the collective. A world far larger than that (a
      // stray or hostile "nranks") can name none, and is not walked rank by rank.
      std::set<int64_t> silent;
      // (Every rank that reached it printed, so it lies below `world`.)
      if (world <= 2 * static_cast<int64_t>(reached.size())) {
        for (int64_t r = 0; r < world; ++r) {
          if (!reached.contains(r)) silent.insert(r);
        }
      }
      // A few silent ranks among many that timed out are the ones that never reached the
      // collective. Many silent ones are mostly victims the launcher killed before their own
      // watchdog fired: the culprit is among them, but the logs cannot say which.
      constexpr size_t kMaxSilentCulprits = 4;
      const uint64_t known_ranks = static_cast<uint64_t>(world);
      if (!silent.empty() && silent.size() <= kMaxSilentCulprits &&
          silent.size() * 2 <= known_ranks) {
        laggards = silent;
      } else if (!silent.empty() && silent.size() * 2 <= known_ranks) {
        std::vector<int64_t> wide(silent.begin(), silent.end());
        (*cause->mutable_detail())["candidates"] = FormatRankSet(wide);
        silent_candidates = silent.size();
      }
      how = "it printed no timeout while the others did";
      named_by_own_lines = false;
    }
    SetTime(cause, first_timeout_->time_ns);
    for (int64_t rank : laggards) {
      cause->add_ranks(rank);
      victims_.erase(rank);
    }
    std::set<std::string> hosts;
    for (const LogEvent& event : logs_.events) {
      if (event.rank >= 0 && laggards.contains(event.rank) && !event.host.empty()) {
        hosts.insert(event.host);
      }
    }
    for (const std::string& host : hosts) cause->add_hosts(host);
    for (const LogEvent& event : logs_.events) {
      if (event.rank >= 0 && laggards.contains(event.rank) &&
          (event.kind == LogEventKind::kWatchdogTimeout ||
           event.kind == LogEventKind::kWorkTimeoutSeqs ||
           (event.kind == LogEventKind::kDumpSignal && event.last_enqueued_seq >= 0))) {
        AddEvidence(cause, event);
      }
    }
    AddCascadeEvidence(cause);
    FillDetail(cause, *first_timeout_);
    std::vector<int64_t> list(laggards.begin(), laggards.end());
    std::string op = first_timeout_->op.empty() ? "a collective" : first_timeout_->op;
    // Ranks whose lines name none (torch 1.x's "[E ProcessGroupNCCL.cpp:458] [Rank 0] ...")
    // still count as timeouts seen.
    size_t timeouts_seen = 0;
    for (const LogEvent& event : logs_.events) {
      timeouts_seen += event.kind == LogEventKind::kWatchdogTimeout;
    }
    std::string sentence = fmt::format(
        "Only collective timeouts are visible: {} timed out in {}{}{} from {}.",
        victims_.empty() ? fmt::format("{} timeout line(s)", timeouts_seen)
                         : fmt::format("{} rank(s)", victims_.size()),
        op, first_timeout_->seq >= 0 ? fmt::format(" SeqNum {}", first_timeout_->seq) : "",
        first_timeout_->process_group.empty() ? "" : " of " + first_timeout_->process_group,
        ClockTime(first_timeout_->time_ns));
    if (!list.empty()) {
      sentence += fmt::format(" {} never reached it: {}.", Who(laggards, hosts), how);
      SetConfidence(cause, named_by_own_lines ? Confidence::kHigh : Confidence::kMedium);
    } else if (silent_candidates > 0) {
      sentence += fmt::format(
          " {} ranks printed no timeout (detail.candidates): the one that never reached it is "
          "among them, with victims the launcher killed first; their flight-recorder dumps, or "
          "TORCH_NCCL_DUMP_ON_TIMEOUT on the next run, would say which.",
          silent_candidates);
      SetConfidence(cause, Confidence::kLow);
    } else {
      // Victims only: every rank shown reached the collective. Naming the kind a culprit would
      // explain would promote a guess; what is missing is said instead.
      SetKind(cause, RootCauseKind::kUnknown);
      sentence +=
          " Every rank shown reached it, so the rank that never did is not in these lines: "
          "every rank's flight-recorder dump (TORCH_NCCL_DUMP_ON_TIMEOUT=1), or the logs of the "
          "ranks that printed no timeout, would say which.";
      SetConfidence(cause, Confidence::kLow);
    }
    cause->set_summary(sentence);
    return true;
  }

  // The members of the collective a watchdog line names, from its sizes: a reduce-scatter
  // reduces NumelIn into NumelIn / members; an all-gather gathers members x NumelIn. 0 when the
  // line does not say (other ops, sizes missing or not a whole multiple).
  static int64_t GroupSizeFromSizes(const LogEvent& event) {
    if (event.kind != LogEventKind::kWatchdogTimeout || event.numel_in <= 0 ||
        event.numel_out <= 0) {
      return 0;
    }
    constexpr int64_t kLargestGroup = int64_t{1} << 20;
    int64_t big = 0, small = 0;
    if (event.op.find("REDUCE_SCATTER") != std::string::npos) {
      big = event.numel_in, small = event.numel_out;
    } else if (event.op.find("ALLGATHER") != std::string::npos) {
      big = event.numel_out, small = event.numel_in;
    } else {
      return 0;
    }
    if (big % small != 0 || big / small > kLargestGroup) return 0;
    return big / small;
  }

  // What an init failure could not do, as "could not ...".
  static std::string InitStep(const LogEvent& lead) {
    if (!lead.failed_step.empty()) return lead.failed_step;
    // A connection NCCL's bootstrap could not make before any communicator formed.
    if (lead.kind == LogEventKind::kTransportError) return "connect to its peers to form NCCL";
    return lead.peer_address.empty() ? "complete the rendezvous"
                                     : "reach the rendezvous store at " + lead.peer_address;
  }

  // The logs' answer joined with the dumps'.
  void Join(report::RootCause* cause) {
    report::Verdict* verdict = report_->mutable_verdict();
    std::vector<int64_t> log_ranks(cause->ranks().begin(), cause->ranks().end());
    const RootCauseKind kind = kind_;
    const std::string_view kind_name = RootCauseKindName(kind);
    std::vector<std::string> actions = KindActions(kind, *cause, init_step_);
    if (dumps_ == nullptr) {
      verdict->clear_culprit_ranks();
      for (int64_t rank : log_ranks) verdict->add_culprit_ranks(rank);
      verdict->clear_victim_ranks();
      for (int64_t rank : victims_) verdict->add_victim_ranks(rank);
      std::string failure_class = "insufficient_evidence";
      if (kind == RootCauseKind::kNone) {
        failure_class = "none";
      } else if (kind == RootCauseKind::kTransportError && log_ranks.empty()) {
        failure_class = "stuck_collective";
      } else if (!log_ranks.empty()) {
        failure_class =
            kind == RootCauseKind::kTransportError ? "stuck_collective" : "missing_participant";
      }
      if (kind == RootCauseKind::kHostKill || kind == RootCauseKind::kInitFailure) {
        // Nothing ran that the collectives' classes describe: no culprit rank.
        failure_class = "insufficient_evidence";
        verdict->clear_culprit_ranks();
      }
      verdict->set_failure_class(failure_class);
      verdict->set_confidence(std::string(ConfidenceName(confidence_)));
      verdict->set_summary(cause->summary());
      verdict->clear_next_actions();
      for (const std::string& action : actions) verdict->add_next_actions(action);
      return;
    }
    // With dumps: the flight recorder says who the others waited for; the logs say why.
    const DumpVerdict& judged = dumps_->verdict;
    const std::vector<int64_t> dump_culprits(judged.culprits.begin(), judged.culprits.end());
    const FailureClass dump_class = judged.failure_class;
    const std::string_view dump_class_name = FailureClassName(dump_class);
    bool log_names_ranks = !log_ranks.empty();
    if (kind == RootCauseKind::kCollectiveTimeout || kind == RootCauseKind::kUnknown) {
      if (!dump_culprits.empty()) {
        cause->clear_ranks();
        for (int64_t rank : dump_culprits) cause->add_ranks(rank);
        if (log_names_ranks && log_ranks != dump_culprits) {
          cause->set_disagreement(fmt::format(
              "The timeouts point at rank(s) {}; the dumps show rank(s) {} never reached the "
              "collective. The dumps' structural evidence is used.",
              Ranks(log_ranks), Ranks(dump_culprits)));
        }
      }
    } else if (kind == RootCauseKind::kHostKill) {
      cause->set_disagreement(
          dump_culprits.empty()
              ? ""
              : fmt::format("The dumps show rank(s) {} behind the others, but the job was killed "
                            "from outside; that may be where the kill found them.",
                            Ranks(dump_culprits)));
      verdict->clear_culprit_ranks();
    } else if (log_names_ranks && IsDeath(kind) &&
               dump_class == FailureClass::kInsufficientEvidence &&
               std::includes(log_ranks.begin(), log_ranks.end(), dump_culprits.begin(),
                             dump_culprits.end())) {
      // The dumps could not tell a rank that left no dump from a victim; the logs say it died.
      verdict->set_failure_class("missing_participant");
      verdict->clear_culprit_ranks();
      for (int64_t rank : log_ranks) verdict->add_culprit_ranks(rank);
      verdict->set_confidence(std::string(ConfidenceName(Confidence::kMedium)));
      cause->set_disagreement(fmt::format(
          "The dumps alone could not decide (insufficient_evidence); the logs say rank(s) {} "
          "died ({}), which settles it.",
          Ranks(log_ranks), kind_name));
      verdict->set_summary(
          fmt::format("Rank(s) {} died ({}); the others' dumps show them waiting "
                      "for the ops it never issued.",
                      Ranks(log_ranks), kind_name));
    } else if (log_names_ranks && !dump_culprits.empty()) {
      std::vector<int64_t> common;
      std::set_intersection(log_ranks.begin(), log_ranks.end(), dump_culprits.begin(),
                            dump_culprits.end(), std::back_inserter(common));
      if (common.empty()) {
        cause->set_disagreement(fmt::format(
            "The dumps blame rank(s) {} ({}); the logs' earliest fault is on rank(s) {} ({}). "
            "Check whether the fault on {} made {} stop.",
            Ranks(dump_culprits), verdict->failure_class(), Ranks(log_ranks), kind_name,
            Ranks(log_ranks), Ranks(dump_culprits)));
      }
    } else if (log_names_ranks && dump_culprits.empty() && dump_class != FailureClass::kNone) {
      verdict->clear_culprit_ranks();
      for (int64_t rank : log_ranks) verdict->add_culprit_ranks(rank);
    } else if (log_names_ranks && dump_class == FailureClass::kNone && IsDeath(kind) &&
               InFlightOps() > 0) {
      // The dumps were written while the peers still waited, in ops younger than their timeout;
      // the logs say the rank those ops need is dead, so they will never complete.
      verdict->set_failure_class("missing_participant");
      verdict->clear_culprit_ranks();
      for (int64_t rank : log_ranks) verdict->add_culprit_ranks(rank);
      verdict->set_confidence(std::string(ConfidenceName(
          confidence_ == Confidence::kHigh ? Confidence::kHigh : Confidence::kMedium)));
      verdict->set_summary(fmt::format(
          "Rank(s) {} died ({}), and the dumps show {} op(s) of its peers still waiting: they "
          "were younger than their timeout when the dumps were written, but they cannot complete "
          "without the dead rank.",
          Ranks(log_ranks), kind_name, InFlightOps()));
      cause->set_disagreement(
          "The dumps alone show nothing stuck yet (the ops were in flight); the logs show the "
          "rank they wait for is gone.");
    } else if (kind == RootCauseKind::kNone && !dump_culprits.empty()) {
      // Healthy logs beside dumps that show a rank stopped: either the stop was silent in the
      // logs (a hang in host code prints nothing), or the logs read are not the culprit's.
      std::set<int64_t> logged;
      for (const LogEvent& event : logs_.events) {
        if (event.rank >= 0) logged.insert(event.rank);
      }
      std::vector<int64_t> unlogged;
      for (int64_t rank : dump_culprits) {
        if (!logged.contains(rank)) unlogged.push_back(rank);
      }
      cause->set_disagreement(
          unlogged.empty()
              ? fmt::format("The logs show no fault, yet the dumps show rank(s) {} stopped ({}): "
                            "its log ends without an error, so it stopped silently (a hang in "
                            "host code, a deadlock, a stuck data loader); its stack says where.",
                            Ranks(dump_culprits), dump_class_name)
              : fmt::format("The logs show no fault, yet the dumps show rank(s) {} stopped ({}); "
                            "no line read is from rank(s) {}: collect its host's logs (and the "
                            "kernel's) before concluding it stopped silently.",
                            Ranks(dump_culprits), dump_class_name, Ranks(unlogged)));
    }
    std::string joined;
    if (kind != RootCauseKind::kNone && kind != RootCauseKind::kUnknown) {
      joined = fmt::format("Why, from the logs: {}", cause->summary());
      if (!cause->disagreement().empty()) joined += " " + cause->disagreement();
      verdict->set_summary(verdict->summary() + " " + joined);
    } else if (!cause->disagreement().empty()) {
      verdict->set_summary(verdict->summary() + " " + cause->disagreement());
    }
    std::vector<std::string> merged = actions;
    for (const std::string& action : verdict->next_actions()) merged.push_back(action);
    verdict->clear_next_actions();
    for (const std::string& action : merged) verdict->add_next_actions(action);
  }

  // Kinds that end the process that hit them.
  static bool IsDeath(RootCauseKind kind) {
    return kind == RootCauseKind::kPythonException || kind == RootCauseKind::kSegfault ||
           kind == RootCauseKind::kHostOom || kind == RootCauseKind::kCudaOom ||
           kind == RootCauseKind::kCudaError || kind == RootCauseKind::kXid;
  }

  // Ops the dumps' matcher found pending but younger than their timeout.
  int64_t InFlightOps() const { return dumps_ == nullptr ? 0 : dumps_->matched.in_flight_ops; }

  // `init_step`: for an init failure, what could not be done (InitStep of the lead).
  static std::vector<std::string> KindActions(RootCauseKind kind, const report::RootCause& cause,
                                              const std::string& init_step) {
    std::string hosts = fmt::format("{}", fmt::join(cause.hosts(), ", "));
    if (hosts.empty()) hosts = "the culprit's host";
    auto detail = [&](const char* key) {
      auto it = cause.detail().find(key);
      return it == cause.detail().end() ? std::string() : it->second;
    };
    if (kind == RootCauseKind::kXid) {
      return {fmt::format("Drain {} and run `dcgmi diag -r 3` on it; Xid {} is a GPU/driver "
                          "fault, not a bug in the job.",
                          hosts, detail("xid")),
              "Restart from the last checkpoint without that node."};
    }
    if (kind == RootCauseKind::kHostOom) {
      return {
          fmt::format("Host memory ran out on {}: lower host-side memory (data loader "
                      "workers, pinned buffers, prefetch) or find the leak; check "
                      "`dmesg`/`journalctl -k` there for the OOM killer's table.",
                      hosts)};
    }
    if (kind == RootCauseKind::kCudaOom) {
      return {
          "Raise GPU memory headroom (smaller micro-batch, activation checkpointing, "
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) or find the rank-specific "
          "allocation: compare torch.cuda.memory_summary() across ranks."};
    }
    if (kind == RootCauseKind::kHostKill) {
      return {
          "Nothing in the job failed: it was killed from outside (scheduler time limit, "
          "preemption, cancel or node failure). Resume from the last checkpoint; raise the "
          "time limit or checkpoint more often."};
    }
    if (kind == RootCauseKind::kTransportError) {
      return {
          fmt::format("Check the network link of {} (`ibstat`, `ibdiagnet`, switch port "
                      "counters, NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=NET); exclude the "
                      "host if the link flaps.",
                      hosts)};
    }
    if (kind == RootCauseKind::kPythonException) {
      return {
          "Read the culprit's traceback (evidence): the exception stopped that rank, and "
          "every other rank then waited for it."};
    }
    if (kind == RootCauseKind::kCudaError) {
      return {
          "Rerun the culprit's step with CUDA_LAUNCH_BLOCKING=1 (and compute-sanitizer) to "
          "find the kernel; if it recurs on one GPU only, drain that node."};
    }
    if (kind == RootCauseKind::kSegfault) {
      return {
          "Get the native stack: run with `PYTHONFAULTHANDLER=1`, enable core dumps "
          "(`ulimit -c unlimited`) and open the core with gdb; check extension builds "
          "against the torch version."};
    }
    if (kind == RootCauseKind::kInitFailure && init_step == "form the NCCL communicator") {
      return {
          "Give every rank its own GPU: torch.cuda.set_device(LOCAL_RANK) before "
          "init_process_group (torchrun sets LOCAL_RANK), and check CUDA_VISIBLE_DEVICES "
          "and the number of processes per node against the GPUs each node has."};
    }
    if (kind == RootCauseKind::kInitFailure && (init_step.find("NCCL") != std::string::npos ||
                                                init_step.find("NVML") != std::string::npos)) {
      return {
          "NCCL could not set up on that host: check NCCL_SOCKET_IFNAME (an interface every "
          "node has, e.g. `ip addr`), that the GPUs are visible inside the container "
          "(nvidia-smi there), and run with NCCL_DEBUG=INFO to see which step failed.",
          "Compare the NCCL and torch versions every host prints: they must match."};
    }
    if (kind == RootCauseKind::kInitFailure &&
        init_step.find("store-based barrier") != std::string::npos) {
      return {
          "Every rank must reach the store-based barrier with one world size: check that all "
          "nodes were launched, with the same WORLD_SIZE, and that no other job uses the "
          "same MASTER_ADDR:MASTER_PORT (more workers than the world means two jobs share "
          "it)."};
    }
    if (kind == RootCauseKind::kInitFailure) {
      return {
          "The job never formed: check that MASTER_ADDR:MASTER_PORT (or the rendezvous endpoint) "
          "resolves and is reachable from every node (firewall, the interface it listens on), "
          "that rank 0 / the store host started, and that every node was launched with the same "
          "world size and rendezvous id.",
          "Compare the NCCL and torch versions every host prints: they must match."};
    }
    if (kind == RootCauseKind::kNonFinite) {
      return {
          "Find the step where the loss first went NaN/inf on that rank: check its data batch, "
          "the learning rate and warmup, fp16 loss scaling or bf16 overflow, and gradient "
          "clipping; torch.autograd.set_detect_anomaly(True) on a rerun of that step names the "
          "operation."};
    }
    if (kind == RootCauseKind::kCollectiveTimeout) {
      return {
          "Only timeouts are visible: read the culprit's stack in its flight-recorder dump "
          "or with py-spy dump on a live process to see where it stopped."};
    }
    if (kind == RootCauseKind::kUnknown) {
      return {
          "These lines show victims only: collect every rank's flight-recorder dump "
          "(TORCH_NCCL_DUMP_ON_TIMEOUT=1, or TORCH_FR_DUMP_TEMP_FILE's files) and every "
          "host's logs, the kernel's too, and run fr-analyze on them together."};
    }
    return {};
  }

  const LogSet& logs_;
  const JobClock& clock_;
  const Judgment* dumps_;  // nullptr: no dumps
  report::Report* report_;
  // What the root cause was set to (SetKind, SetConfidence).
  RootCauseKind kind_ = RootCauseKind::kUnknown;
  Confidence confidence_ = Confidence::kHigh;
  std::set<int64_t> victims_;
  const LogEvent* first_timeout_ = nullptr;
  std::map<std::string, std::string> host_of_address_;
  std::set<std::string> known_hosts_;
  int64_t job_start_ns_ = kNoTime;
  // The first timeout, abort or death report with a time of its own, or kNoTime.
  int64_t failure_seen_ns_ = kNoTime;
  // DumpsShareTheLogsClock, once per analysis.
  bool dumps_share_clock_ = false;
  // For an init failure: what could not be done (InitStep of the lead), for the next actions.
  std::string init_step_;
  // How the order of a kill and the lines it caused was settled, for the summary.
  std::string settled_by_;
};

// Log lines, hosts and paths are bytes; report strings must be UTF-8 (lib/fr/base/utf8.h).
void MakeValidUtf8(google::protobuf::Message* message) {
  const google::protobuf::Reflection* reflection = message->GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    using google::protobuf::FieldDescriptor;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          reflection->SetRepeatedString(
              message, field, i, ValidUtf8(reflection->GetRepeatedString(*message, field, i)));
        }
      } else {
        reflection->SetString(message, field, ValidUtf8(reflection->GetString(*message, field)));
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {  // map entries too
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          MakeValidUtf8(reflection->MutableRepeatedMessage(message, field, i));
        }
      } else {
        MakeValidUtf8(reflection->MutableMessage(message, field));
      }
    }
  }
}

}  // namespace

std::vector<int64_t> RanksTheLogsSayDied(const LogSet& logs) {
  std::set<int64_t> died;
  for (const LogEvent& event : logs.events) {
    if (event.rank < 0) continue;
    bool death = false;
    if (event.kind == LogEventKind::kWorkerFailed || event.kind == LogEventKind::kRootCauseTable) {
      death = (event.signal != 15 && event.exit_code != 0 && event.exit_code != INT32_MIN) ||
              IsAbruptDeath(event);
    } else if (std::optional<RootCauseKind> kind = FaultKind(event)) {
      death = *kind == RootCauseKind::kSegfault || *kind == RootCauseKind::kHostOom ||
              *kind == RootCauseKind::kCudaOom || *kind == RootCauseKind::kCudaError ||
              (*kind == RootCauseKind::kPythonException && !IsCascadeException(event) &&
               event.lines_after < kKeptRunningLines);
    }
    if (death) died.insert(event.rank);
  }
  return {died.begin(), died.end()};
}

void ExplainFromLogs(const LogSet& logs, const JobClock& clock, const Judgment* dumps,
                     report::Report* report) {
  Explainer(logs, clock, dumps, report).Run();
  // Everything the logs added or rewrote.
  MakeValidUtf8(report->mutable_verdict());
  MakeValidUtf8(report->mutable_timeline());
  MakeValidUtf8(report->mutable_launcher());
  for (report::LogFileRead& file : *report->mutable_log_files()) MakeValidUtf8(&file);
  for (std::string& error : *report->mutable_log_errors()) error = ValidUtf8(error);
}

}  // namespace fr

namespace fr {

namespace {
constexpr std::pair<RootCauseKind, std::string_view> kRootCauseKindNames[] = {
    {RootCauseKind::kXid, "xid"},
    {RootCauseKind::kHostOom, "host_oom"},
    {RootCauseKind::kCudaOom, "cuda_oom"},
    {RootCauseKind::kHostKill, "host_kill"},
    {RootCauseKind::kTransportError, "transport_error"},
    {RootCauseKind::kPythonException, "python_exception"},
    {RootCauseKind::kCudaError, "cuda_error"},
    {RootCauseKind::kSegfault, "segfault"},
    {RootCauseKind::kCollectiveTimeout, "collective_timeout"},
    {RootCauseKind::kInitFailure, "init_failure"},
    {RootCauseKind::kNonFinite, "non_finite"},
    {RootCauseKind::kNone, "none"},
    {RootCauseKind::kUnknown, "unknown"},
};
}  // namespace

std::string_view RootCauseKindName(RootCauseKind kind) {
  for (const auto& [value, name] : kRootCauseKindNames) {
    if (value == kind) return name;
  }
  return "unknown";
}

}  // namespace fr
