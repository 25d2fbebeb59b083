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
#include "fr/verdict/message_strings.h"
#include "fr/verdict/root_cause_explainer.h"

namespace fr {
namespace root_cause_internal {

LogsAnswer Explainer::Run() {
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
  FillCulpritStack(cause);
  FillLauncher(*cause);
  return {kind_, failure_class_};
}

void Explainer::FillCulpritStack(report::RootCause* cause) const {
  // The traceback of an initiating rank's own exception among the lines the cause rests on: a
  // victim's traceback (a timeout, a lost peer, a mismatch it only detected) says where the
  // victim waited, not where the failure began.
  if (kind_ != RootCauseKind::kPythonException && kind_ != RootCauseKind::kCudaOom &&
      kind_ != RootCauseKind::kCudaError) {
    return;
  }
  const LogEvent* best = nullptr;
  for (const LogEvent& event : logs_.events) {
    if (event.stack.empty() || event.reports_mismatch || event.in_launcher ||
        std::find(cause->ranks().begin(), cause->ranks().end(), event.rank) ==
            cause->ranks().end()) {
      continue;
    }
    bool shown = false;
    for (const report::EvidenceLine& line : cause->evidence()) {
      shown |= line.line() == event.line && line.file() == PathOf(event);
    }
    if (shown && (best == nullptr || Before(event, *best))) best = &event;
  }
  if (best == nullptr) return;
  for (const std::string& frame : best->stack) cause->add_stack(ValidUtf8(frame));
  cause->set_stack_at(
      ValidUtf8(fmt::format("{} at {}:{}", best->reason.empty() ? "the exception" : best->reason,
                            PathOf(*best), best->line)));
}

const std::string& Explainer::PathOf(const LogEvent& event) const {
  static const std::string kNone;
  if (event.file < 0 || event.file >= static_cast<int32_t>(logs_.files.size())) return kNone;
  return logs_.files[event.file].path;
}

void Explainer::FillInputs() {
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

void Explainer::FillLauncher(const report::RootCause& cause) {
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

void Explainer::FillTimeline() {
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

void Explainer::FindVictims() {
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

void Explainer::MapPeerAddresses() {
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

std::string Explainer::PeerHostOf(const LogEvent& event) const {
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

void Explainer::FindJobStart() {
  int64_t from_lines = kNoTime;
  for (const LogEvent& event : logs_.events) {
    bool start = event.kind == LogEventKind::kLauncherStart ||
                 event.kind == LogEventKind::kRendezvous || event.kind == LogEventKind::kNcclInit ||
                 event.kind == LogEventKind::kHostAddress;
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

bool Explainer::LauncherReportedDeath(int64_t rank) const {
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

bool Explainer::Before(const LogEvent& a, const LogEvent& b) {
  if (a.time_ns == kNoTime) return false;
  if (b.time_ns == kNoTime) return true;
  return a.time_ns < b.time_ns;
}

void Explainer::AddEvidence(report::RootCause* cause, const LogEvent& event) {
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

void Explainer::SetTime(report::RootCause* cause, int64_t ns) {
  if (ns == kNoTime) return;
  cause->set_time_ns(ns);
  cause->set_time(FormatUtc(ns));
}

}  // namespace root_cause_internal

namespace {

using root_cause_internal::Explainer;
using root_cause_internal::FaultKind;
using root_cause_internal::IsAbruptDeath;
using root_cause_internal::IsCascadeException;
using root_cause_internal::kKeptRunningLines;

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

LogsAnswer ExplainFromLogs(const LogSet& logs, const JobClock& clock, const Judgment* dumps,
                           report::Report* report) {
  LogsAnswer answer = Explainer(logs, clock, dumps, report).Run();
  // Everything the logs added or rewrote.
  // Log lines, hosts and paths are bytes; report strings must be UTF-8 (lib/fr/base/utf8.h).
  RewriteStrings(report->mutable_verdict(), ValidUtf8);
  RewriteStrings(report->mutable_timeline(), ValidUtf8);
  RewriteStrings(report->mutable_launcher(), ValidUtf8);
  for (report::LogFileRead& file : *report->mutable_log_files()) RewriteStrings(&file, ValidUtf8);
  for (std::string& error : *report->mutable_log_errors()) error = ValidUtf8(error);
  return answer;
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
