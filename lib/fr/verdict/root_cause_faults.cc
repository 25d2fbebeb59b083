// Which fault came first: the candidates the logs hold, those set aside (a step cancelled after a
// failure, a kill's own consequences, a fault the job ran on after, another process's kernel
// line), transport errors that are a peer's view, and the sentence that names the lead.
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
namespace {

// A non-finite loss report's words after whatever its line starts with (a rank's prefix, a time,
// a host): from the exception's type, or from the trainer's dict of losses.
std::string_view NonFiniteWords(const LogEvent& event) {
  std::string_view text = event.text;
  size_t at = event.reason.empty() ? text.find('{') : text.find(event.reason);
  return at == std::string_view::npos ? text : text.substr(at);
}

}  // namespace

void Explainer::DropStepCancelsAfterFailures(std::vector<Candidate>* candidates) const {
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

bool Explainer::FromUncaughtException(report::RootCause* cause) {
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

bool Explainer::FromFaults(report::RootCause* cause) {
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
    return failed_peers.contains(peer) || silent_peers.contains(peer) || own_host_failed(*c.event);
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
    if (first.kind == RootCauseKind::kPythonException && event.rank != lead.rank) same = false;
    // So is a loss gone non-finite on one rank first. The very same report on several ranks in
    // the same window (a loss reduced across ranks is NaN on every one of them at the same
    // step) has no first rank: each of them is named, none as its source.
    if (first.kind == RootCauseKind::kNonFinite && event.rank != lead.rank &&
        NonFiniteWords(event) != NonFiniteWords(lead)) {
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
  FindCoInitiators(candidates, first, ranks);
  std::set<int64_t> named = ranks;
  std::set<std::string> named_hosts = hosts;
  for (const Candidate& also : co_initiators_) {
    named.insert(also.event->rank);
    if (!also.event->host.empty()) named_hosts.insert(also.event->host);
    initiating.push_back(also.event);
  }
  for (int64_t rank : named) cause->add_ranks(rank);
  for (const std::string& host : named_hosts) cause->add_hosts(host);
  for (const LogEvent* event : initiating) AddEvidence(cause, *event);
  // The launcher's and Slurm's view of the culprit's end.
  for (const LogEvent& event : logs_.events) {
    bool about_culprit = (event.rank >= 0 && named.contains(event.rank)) ||
                         (event.kind == LogEventKind::kSlurmOomEvent && hosts.contains(event.host));
    if (about_culprit &&
        (event.kind == LogEventKind::kWorkerFailed || event.kind == LogEventKind::kRootCauseTable ||
         event.kind == LogEventKind::kSlurmOomEvent)) {
      AddEvidence(cause, event);
    }
  }
  AddCascadeEvidence(cause);
  for (const LogEvent& event : logs_.events) {
    if (event.rank >= 0 && named.contains(event.rank)) victims_.erase(event.rank);
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
  // A local rank read as the global one: right unless this is one node's log of several.
  std::string assumed;
  if (lead.rank_assumed) {
    confidence = std::min(confidence, Confidence::kMedium);
    assumed = fmt::format(
        " Rank {} is the local rank these logs name, the global rank if the job ran on one node"
        " (they show no other).",
        lead.rank);
  }
  // A rank read from "[Rank N]", the rank in the line's process group: the global rank in a job
  // with one group, which is all these logs show.
  for (const LogEvent* event : initiating) {
    if (!event->rank_from_group_tag || !assumed.empty()) continue;
    confidence = std::min(confidence, Confidence::kMedium);
    assumed = fmt::format(
        " Rank {} is the rank its own line's tag names (\"[Rank {}]\", the rank in its process "
        "group): the global rank if the job used only the default group (the logs show no "
        "other).",
        event->rank, event->group_rank);
  }
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
  if (first.kind == RootCauseKind::kNonFinite && ranks.size() > 1) {
    confidence = std::min(confidence, Confidence::kMedium);
  }
  SetConfidence(cause, confidence);
  std::string also;
  for (const Candidate& other : co_initiators_) {
    const LogEvent& event = *other.event;
    std::string what = other.kind == RootCauseKind::kPythonException && !event.reason.empty()
                           ? event.reason
                           : std::string(RootCauseKindName(other.kind));
    also += fmt::format(
        " Rank {}{} failed on its own in the same moment ({}, {}): a second initiator, not a "
        "victim of the first (its error is no timeout or lost peer); its line is in the "
        "evidence.",
        event.rank, event.host.empty() ? "" : " on " + event.host, what, When(event));
  }
  cause->set_summary(FaultSentence(first.kind, lead, ranks, hosts) + also + doubt + assumed +
                     settled_by_);
  return true;
}

void Explainer::FindCoInitiators(const std::vector<Candidate>& candidates, const Candidate& first,
                                 const std::set<int64_t>& ranks) {
  co_initiators_.clear();
  const LogEvent& lead = *first.event;
  if (!IsDeath(first.kind) || ranks.empty()) return;
  // The lead's moment: its time, or the bounds of an untimed line.
  int64_t from = Earliest(lead), to = Latest(lead);
  if (to == INT64_MAX) return;
  auto widen = [](int64_t t, int64_t by) {
    if (t == INT64_MIN || t == INT64_MAX) return t;
    return t + by;
  };
  from = widen(from, -kSameFaultWindowNs);
  to = widen(to, kSameFaultWindowNs);
  std::map<int64_t, const Candidate*> by_rank;
  for (const Candidate& c : candidates) {
    const LogEvent& event = *c.event;
    if (&event == &lead || !IsDeath(c.kind) || event.rank < 0 || ranks.contains(event.rank)) {
      continue;
    }
    // The lead's failure on another rank (the same kind and words: a bad batch every rank
    // read, one NaN reduced to all) is the lead's, not a second cause.
    if (c.kind == first.kind && event.reason == lead.reason) continue;
    if (c.kind == RootCauseKind::kNonFinite) continue;  // a consequence as often as a cause
    // Known to have come by the end of the lead's moment: a line whose bounds reach past it
    // (an untimed traceback between lines hours apart) may as well be the teardown's.
    if (Latest(event) == INT64_MAX || Latest(event) > to || Latest(event) < from) continue;
    auto [it, added] = by_rank.try_emplace(event.rank, &c);
    if (!added && Before(event, *it->second->event)) it->second = &c;
  }
  for (const auto& [rank, c] : by_rank) co_initiators_.push_back(*c);
}

bool Explainer::OfAnotherProcess(const LogEvent& event) const {
  if ((event.kind != LogEventKind::kHostOom && event.kind != LogEventKind::kXid) || event.pid < 0 ||
      event.host.empty()) {
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

bool Explainer::KeptRunningAfter(const LogEvent& event) const {
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

bool Explainer::DumpsShareTheLogsClock() const {
  if (dumps_ == nullptr) return false;
  int64_t newest_line = kNoTime, newest_op = kNoTime;
  for (const LogEvent& event : logs_.events) {
    if (Precise(event)) newest_line = std::max(newest_line, event.time_ns);
  }
  for (const auto& [rank, ns] : dumps_->last_completed_ns) newest_op = std::max(newest_op, ns);
  return newest_line != kNoTime && newest_op != kNoTime &&
         std::llabs(newest_line - newest_op) <= kSameClockNs;
}

bool Explainer::IsConnectFailure(const LogEvent& event) {
  std::string_view text = event.text;
  return text.find("connect failed") != std::string_view::npos ||
         text.find("Connect to ") != std::string_view::npos ||
         text.find("failed to connect") != std::string_view::npos;
}

bool Explainer::JobFormedBefore(const LogEvent& event) const {
  for (const LogEvent& other : logs_.events) {
    bool formed = other.kind == LogEventKind::kNcclInit ||
                  other.kind == LogEventKind::kWatchdogTimeout ||
                  other.kind == LogEventKind::kWorkTimeoutSeqs;
    if (!formed) continue;
    if (other.file == event.file && other.line < event.line) return true;
    if (Precise(other) && event.time_ns != kNoTime && other.time_ns < Earliest(event)) return true;
  }
  return dumps_ != nullptr && dumps_->first_record_ns > 0 && event.time_ns != kNoTime &&
         dumps_->first_record_ns < Earliest(event);
}

bool Explainer::JobFormedAfter(const LogEvent& event) const {
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

bool Explainer::FromNcclVersionMismatch(report::RootCause* cause) {
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

void Explainer::DropConsequencesOfKills(std::vector<Candidate>* candidates) {
  bool inside_failure = std::any_of(candidates->begin(), candidates->end(), [](const Candidate& c) {
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

void Explainer::FillDetail(report::RootCause* cause, const LogEvent& lead) {
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

std::string Explainer::Who(const std::set<int64_t>& ranks,
                           const std::set<std::string>& hosts) const {
  std::vector<int64_t> list(ranks.begin(), ranks.end());
  std::string who;
  if (!list.empty()) who = fmt::format("{} {}", list.size() == 1 ? "Rank" : "Ranks", Ranks(list));
  if (!hosts.empty()) {
    who += fmt::format("{}{}", who.empty() ? "Host " : " on ", fmt::join(hosts, ", "));
  }
  return who.empty() ? "A rank" : who;
}

std::string Explainer::When(const LogEvent& event) {
  int64_t upper = event.next_time.kind != LogTime::Kind::kNone ? event.time_upper_ns : kNoTime;
  if (Precise(event) || (event.time_ns == kNoTime && upper == kNoTime)) {
    return "at " + ClockTime(event.time_ns);
  }
  if (event.time_ns == kNoTime) return "before " + ClockTime(upper);
  if (upper == kNoTime) return "after " + ClockTime(event.time_ns);
  return fmt::format("between {} and {}", ClockTime(event.time_ns), ClockTime(upper));
}

std::string Explainer::FaultSentence(RootCauseKind kind, const LogEvent& lead,
                                     const std::set<int64_t>& ranks,
                                     const std::set<std::string>& hosts) {
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
    // Mid-sentence: "a rank", not "A rank".
    std::string subject = who;
    if (subject.starts_with("A ")) subject[0] = 'a';
    sentence = fmt::format("The job never formed: {} could not {} {}{}.", subject, InitStep(lead),
                           when, lead.reason.empty() ? "" : " (" + lead.reason + ")");
  } else if (kind == RootCauseKind::kNonFinite && ranks.size() > 1) {
    sentence = fmt::format(
        "The loss went non-finite (NaN or inf) on {} ranks with the same report ({}), {}: a loss "
        "reduced across ranks is non-finite on all of them at once, so no one of them is its "
        "source; that step's data, the learning rate or the numerics (mixed precision, loss "
        "scaling) are.",
        ranks.size(), FormatRankSet({ranks.begin(), ranks.end()}), when);
  } else if (kind == RootCauseKind::kNonFinite) {
    sentence = fmt::format("{}'s loss went non-finite (NaN or inf) first, {}.", who, when);
  }
  if (!victims_.empty()) {
    sentence += fmt::format(" {} other rank(s) then timed out or aborted.", victims_.size());
  }
  return sentence;
}

std::string Explainer::InitStep(const LogEvent& lead) {
  if (!lead.failed_step.empty()) return lead.failed_step;
  // A connection NCCL's bootstrap could not make before any communicator formed.
  if (lead.kind == LogEventKind::kTransportError) return "connect to its peers to form NCCL";
  return lead.peer_address.empty() ? "complete the rendezvous"
                                   : "reach the rendezvous store at " + lead.peer_address;
}

}  // namespace fr::root_cause_internal
