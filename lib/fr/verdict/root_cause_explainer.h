// The root cause from the logs, inside: the explainer that ranks the logs' faults, and the
// constants and helpers its rooms share (root_cause.cc: inputs, timeline, the run;
// root_cause_faults.cc: which fault came first; root_cause_timeouts.cc: when only timeouts
// and deaths are visible; root_cause_join.cc: joining the dumps' verdict and next actions;
// root_cause_kinds.cc: what each log event stands for). Not part of the API.
#ifndef FR_VERDICT_ROOT_CAUSE_EXPLAINER_H_
#define FR_VERDICT_ROOT_CAUSE_EXPLAINER_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/verdict/root_cause.h"

namespace fr::root_cause_internal {

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;
// Faults of one kind this close after the first are one event seen by several ranks (a host's
// OOM killer taking two workers, every rank of a batch running out of GPU memory at once).
inline constexpr int64_t kSameFaultWindowNs = 10 * kNanosPerSecond;
// Two faults on different hosts closer than this are ordered by clocks that may be off by as
// much: the verdict then says it is not sure which came first.
inline constexpr int64_t kOrderingDoubtNs = 2 * kNanosPerSecond;
inline constexpr int kMaxEvidence = 12;
// A writer that printed this many lines after its traceback kept running: it handled and logged
// the exception (a periodic dumper, a retry loop) and did not die of it.
inline constexpr int32_t kKeptRunningLines = 5;
// This many finite losses printed by the writer of a NaN loss after it: the training recovered.
inline constexpr int32_t kRecoveredLosses = 2;
// Slurm stamps "CANCELLED AT" with the controller's clock: what the killed ranks print after the
// kill can read up to this much earlier on their own clocks.
inline constexpr int64_t kControllerSkewNs = 300 * kNanosPerSecond;
// A fault that ended this long before the job began (an old Xid or OOM kill in kern.log) is not
// this job's.
inline constexpr int64_t kBeforeJobNs = 60 * kNanosPerSecond;
// A fault printed this long after the first timeout, abort or death came after the failure,
// whatever the clocks' errors: it is not its cause.
inline constexpr int64_t kAfterFailureNs = 30 * 60 * kNanosPerSecond;
// Collectives completed this long after a fault (past any clock error between hosts): the job
// went on, and the fault is not why it stopped.
inline constexpr int64_t kKeptRunningNs = 10 * 60 * kNanosPerSecond;
// The dumps' newest op and the logs' newest line further apart than this are of different
// runs or clocks.
inline constexpr int64_t kSameClockNs = 24 * 3600 * kNanosPerSecond;
// The longest start-up assumed between a launch and its first collective.
inline constexpr int64_t kStartUpNs = 10 * 60 * kNanosPerSecond;

// The signals a process gets for its own fault: SIGILL 4, SIGFPE 8, SIGBUS 7, SIGSEGV 11.
// SIGABRT is left out: torch aborts its own process after a collective failed.
bool IsCrashSignal(int32_t signal);

// The root-cause kind a fault event stands for, or nullopt for cascade and identity lines.
std::optional<RootCauseKind> FaultKind(const LogEvent& event);

// A worker process that ended without a word of its own: Ray's "Worker exit type: SYSTEM_ERROR"
// (killed, or crashed in native code), which Ray reports without an exit code or signal.
bool IsAbruptDeath(const LogEvent& event);

// An exception raised because communication already failed is the cascade, not its cause.
bool IsCascadeException(const LogEvent& event);

// A kill from outside whose time is the controller's (Slurm), not the killed node's.
bool KilledByController(const LogEvent& event);

// The launcher itself was signalled ("Received 15 death signal, shutting down workers"): a kill
// from outside only when nothing inside the job failed first (srun also signals the launchers
// of the other nodes after one task failed).
bool LauncherSignalled(const LogEvent& event);

// The address part of a peer as a transport error names it: "10.0.0.5<45678>" and
// "10.0.0.5:10895" -> "10.0.0.5", "node05<33445>" -> "node05".
std::string_view PeerHostPart(std::string_view peer);

bool IsCascade(LogEventKind kind);

// Hardware and kernel first: when clocks cannot order two faults, the lower layer is the likelier
// cause of the other.
int KindPriority(RootCauseKind kind);

std::string Ranks(const std::vector<int64_t>& ranks);

std::string ClockTime(int64_t ns);

// A fault line that may be the root cause.
struct Candidate {
  const LogEvent* event;
  RootCauseKind kind;
};

class Explainer {
 public:
  Explainer(const LogSet& logs, const JobClock& clock, const Judgment* dumps,
            report::Report* report)
      : logs_(logs),
        clock_(clock),
        dumps_(dumps),
        report_(report),
        failure_class_(dumps != nullptr ? dumps->verdict.failure_class : FailureClass::kNone) {}

  // What the logs' answer, joined with the dumps', decided.
  LogsAnswer Run();

 private:
  const std::string& PathOf(const LogEvent& event) const;

  void FillInputs();

  // Which launchers' words the logs hold, and the launcher's line on the death that matters: the
  // culprit's, else the first it reported.
  void FillLauncher(const report::RootCause& cause);

  void FillTimeline();

  void FindVictims();

  // Which host each address names: NCCL's interface lines ("Bootstrap : Using eth0:10.0.0.5<0>")
  // and the hosts' own names. An address two hosts claim (a loopback, a NAT) names none.
  void MapPeerAddresses();

  // The host a transport error or a lost connection names as its peer, or "" when unknown or the
  // reporter's own.
  std::string PeerHost(const LogEvent& event) const {
    std::string host = PeerHostOf(event);
    return host == event.host ? std::string() : host;
  }

  // The host a transport error names, the reporter's own included; empty when unknown.
  std::string PeerHostOf(const LogEvent& event) const;

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
  void FindJobStart();

  // The launcher reported this rank's death (a worker that failed, a row of its failure table).
  bool LauncherReportedDeath(int64_t rank) const;

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

  static bool Before(const LogEvent& a, const LogEvent& b);

  void AddEvidence(report::RootCause* cause, const LogEvent& event);

  // The first victims' timeouts: how the cascade began.
  void AddCascadeEvidence(report::RootCause* cause);

  // Without an initiating line, the first worker the launcher saw die is the lead to follow: a
  // SIGKILL nobody logged is most often the kernel's OOM killer, whose lines are in the host's
  // kernel log, not in the job's. It is named, not blamed: the launcher's first observed failure
  // can be a victim.
  void NameFirstDeath(report::RootCause* cause);

  // srun cancels a step itself when one of its tasks fails ("*** STEP 6053.0 ON node CANCELLED
  // AT ..." with no "DUE TO"), as an operator's scancel does: the cancel is the cause only when
  // nothing else failed, no task died before it, and every death after it was the kill's own
  // (SIGTERM, SIGKILL).
  void DropStepCancelsAfterFailures(std::vector<Candidate>* candidates) const;

  // Only the launcher's word that a worker exited with code 1 (what Python does after an uncaught
  // exception), and nothing of a cascade (no timeout, no abort, no peer gone, no signal but the
  // SIGTERM that stopped the others): the worker raised. Its traceback is in its own output, which
  // these logs lack.
  bool FromUncaughtException(report::RootCause* cause);

  // The kind and confidence are kept as values for the join with the dumps, and written once.
  void SetKind(report::RootCause* cause, RootCauseKind kind) {
    kind_ = kind;
    cause->set_kind(std::string(RootCauseKindName(kind)));
  }

  // The verdict's class after the join, kept as a value (what decides the exit status).
  void SetFailureClass(report::Verdict* verdict, FailureClass failure_class) {
    failure_class_ = failure_class;
    verdict->set_failure_class(std::string(FailureClassName(failure_class)));
  }

  void SetConfidence(report::RootCause* cause, Confidence confidence) {
    confidence_ = confidence;
    cause->set_confidence(std::string(ConfidenceName(confidence)));
  }

  void SetTime(report::RootCause* cause, int64_t ns);

  Confidence HostClockConfidence(const std::string& host) const {
    const HostClock* clock = clock_.Find(host);
    return clock == nullptr ? Confidence::kLow : clock->confidence;
  }

  bool FromFaults(report::RootCause* cause);

  // A kernel line (OOM kill, Xid) naming a pid on a host where every rank the logs show has a
  // known pid (NCCL's "host:pid:tid" prefix, the launcher's "(pid: N)"), none of them that one:
  // another process's fault (a second job, a monitoring agent), not the job's.
  bool OfAnotherProcess(const LogEvent& event) const;

  // Whether the dumps show the job made progress long after `event`: the rank it names (any
  // rank, for a line that names none) completed collectives well after it, on the rank's own
  // clock, so more than the clocks' disagreement. An OOM kill of another process, a Xid of a
  // GPU the job did not use, a NaN the loss scaler skipped: the job went on.
  bool KeptRunningAfter(const LogEvent& event) const;

  // Whether the dumps' times and the logs' read on one clock: the newest op the dumps saw
  // complete and the newest timed line lie within a day of each other. Logs and dumps of
  // different runs (or a host clock set years off) cannot say what happened after what.
  bool DumpsShareTheLogsClock() const;

  static bool IsConnectFailure(const LogEvent& event);

  // Whether a communicator had come up or a collective had run before `event`: an NCCL init
  // line, a timeout of a collective, earlier in the same file or earlier on the clock, or a
  // recorded collective in the dumps before it.
  bool JobFormedBefore(const LogEvent& event) const;

  // Whether the job formed after `event`: a communicator came up, a rendezvous completed, a
  // collective ran (a timeout names one, a dump recorded one) later in the same file or, by the
  // corrected clock, later anywhere.
  bool JobFormedAfter(const LogEvent& event) const;

  // A host whose peers lost it fell silent when it printed nothing after their first report: no
  // timeout or lost connection of its own (a live host's ranks time out too), no line later.
  bool FellSilent(const std::string& host, const std::vector<const LogEvent*>& reports) const;

  // Hosts that run different NCCL releases, with no fault of their own: the job's processes
  // cannot be trusted to agree on a protocol (a hang in init or in the first collectives). The
  // hosts of the less common release are named.
  bool FromNcclVersionMismatch(report::RootCause* cause);

  // Kills from outside end what the killed ranks were doing; their transport errors and lost
  // connections are its consequence, even where their clocks put them a little earlier (Slurm's
  // "CANCELLED AT" is the controller's clock). A launcher that was signalled is a kill from
  // outside only when nothing inside the job failed.
  void DropConsequencesOfKills(std::vector<Candidate>* candidates);

  // Peers lost their connections to `host`, which printed no error of its own: the node went
  // away (a node failure, a power or kernel crash) and its peers are victims.
  bool FromSilentPeer(report::RootCause* cause, const std::string& host,
                      const std::vector<const LogEvent*>& reports);

  void FillDetail(report::RootCause* cause, const LogEvent& lead);

  std::string Who(const std::set<int64_t>& ranks, const std::set<std::string>& hosts) const;

  // "at 11:21:20.770 UTC"; for a line printed without a time (a traceback, a faulthandler
  // block), where its file's timed lines around it put it: "between A and B", "after A".
  // A file's modification time also bounds its untimed lines for ordering, but it is the storing
  // machine's clock, 10 minutes of slack added: only a timed line after it is said as a bound.
  static std::string When(const LogEvent& event);

  std::string FaultSentence(RootCauseKind kind, const LogEvent& lead,
                            const std::set<int64_t>& ranks, const std::set<std::string>& hosts);

  // Among `candidates` (the lead `first` and the others), the deaths of other ranks known to
  // have come by the end of the lead's moment (their time, or the upper bound of an untimed
  // line, within kSameFaultWindowNs of it) and not the lead's own failure repeated: another
  // kind, or another exception. The cascade's
  // reports (timeouts, closed connections, a launcher stopping the rest) were set aside before,
  // so what is left died of its own cause: rank 1 out of disk space while rank 2 segfaults.
  // Each rank once, its earliest line. Fills co_initiators_.
  void FindCoInitiators(const std::vector<Candidate>& candidates, const Candidate& first,
                        const std::set<int64_t>& ranks);

  bool FromTimeouts(report::RootCause* cause);

  // The members of the collective a watchdog line names, from its sizes: a reduce-scatter
  // reduces NumelIn into NumelIn / members; an all-gather gathers members x NumelIn. 0 when the
  // line does not say (other ops, sizes missing or not a whole multiple).
  static int64_t GroupSizeFromSizes(const LogEvent& event);

  // What an init failure could not do, as "could not ...".
  static std::string InitStep(const LogEvent& lead);

  // The logs' answer joined with the dumps'.
  void Join(report::RootCause* cause);
  // The initiating rank's Python stack where it raised (RootCause::stack), from the traceback
  // of an exception the cause's evidence shows.
  void FillCulpritStack(report::RootCause* cause) const;
  // Whether every exception each of `ranks` raised is a report that the ranks' collectives
  // differ (LogEvent::reports_mismatch), and each raised one.
  bool OnlyReportMismatches(const std::vector<int64_t>& ranks) const;

  // `reporters` left no dump, and the logs say each of them only raised on detecting that the
  // members of a collective differ: the ranks whose op changed (Judgment::op_changes, in a group
  // the reporters may be in) are where it started; with none to compare, the mismatch is named
  // between the reporters and the ranks the dumps show in the failure, without picking a side.
  // Sets the verdict (its next actions become the mismatch's) and the cause; false, changing
  // nothing, when the dumps name neither.
  bool BlameTheOpThatDiffers(const std::vector<int64_t>& reporters, report::RootCause* cause);

  // Kinds that end the process that hit them.
  static bool IsDeath(RootCauseKind kind);
  // Of `culprits`, those without a dump whose launcher (an agent whose failure table reported
  // workers on both sides of them, by local rank) named every other worker's failure but never
  // theirs: they had exited on their own, with status 0, before the others failed.
  std::vector<int64_t> ExitedUnreported(const std::vector<int64_t>& culprits) const;
  // The exit status a launcher reported for `rank` when the process exited on its own with an
  // error status (not killed by a signal) and its logs show no exception of its own (a
  // sys.exit(N), an exit in native code); 0 when not so.
  int32_t OwnExitStatus(int64_t rank) const;

  // Ops the dumps' matcher found pending but younger than their timeout.
  int64_t InFlightOps() const { return dumps_ == nullptr ? 0 : dumps_->matched.in_flight_ops; }

  // `init_step`: for an init failure, what could not be done (InitStep of the lead).
  static std::vector<std::string> KindActions(RootCauseKind kind, const report::RootCause& cause,
                                              const std::string& init_step);

  const LogSet& logs_;
  const JobClock& clock_;
  const Judgment* dumps_;  // nullptr: no dumps
  report::Report* report_;
  // What the root cause was set to (SetKind, SetConfidence).
  RootCauseKind kind_ = RootCauseKind::kUnknown;
  Confidence confidence_ = Confidence::kHigh;
  // The verdict's class: the dumps' until the join changes it (SetFailureClass).
  FailureClass failure_class_ = FailureClass::kNone;
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
  // Faults of other kinds (or other exceptions) on other ranks in the lead's moment: second,
  // independent initiators, named beside the lead (FindCoInitiators).
  std::vector<Candidate> co_initiators_;
};

}  // namespace fr::root_cause_internal

#endif  // FR_VERDICT_ROOT_CAUSE_EXPLAINER_H_
