// The logs' answer joined with the dumps' verdict (who is the culprit, how sure) and the next
// actions the root cause's kind calls for.
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

// " (all_reduce #4 in group 3 (DP))": where the dumps show the others waiting, for a sentence
// about the rank they wait for; "" when the dumps place no op (a p2p wait, a rank with no dump
// may leave the op or the group unnamed).
std::string WaitedOp(const report::Verdict& verdict) {
  if (verdict.op().empty() || verdict.collective_seq_id() < 0) return "";
  std::string where = fmt::format(" ({} #{}", verdict.op(), verdict.collective_seq_id());
  if (!verdict.process_group().name().empty()) {
    where += fmt::format(" in group {}", verdict.process_group().name());
    if (!verdict.process_group().desc().empty()) {
      where += fmt::format(" ({})", verdict.process_group().desc());
    }
  }
  return where + ")";
}

}  // namespace

bool Explainer::OnlyReportMismatches(const std::vector<int64_t>& ranks) const {
  // Each rank's exceptions all report a mismatch between the ranks' collectives (and it raised
  // at least one): none of them failed on its own account.
  for (int64_t rank : ranks) {
    bool any = false;
    for (const LogEvent& event : logs_.events) {
      if (event.rank != rank || event.kind != LogEventKind::kPythonException) continue;
      if (!event.reports_mismatch) return false;
      any = true;
    }
    if (!any) return false;
  }
  return true;
}

void Explainer::Join(report::RootCause* cause) {
  report::Verdict* verdict = report_->mutable_verdict();
  std::vector<int64_t> log_ranks(cause->ranks().begin(), cause->ranks().end());
  const RootCauseKind kind = kind_;
  const std::string_view kind_name = RootCauseKindName(kind);
  std::vector<std::string> actions = KindActions(kind, *cause, init_step_);
  for (const Candidate& also : co_initiators_) {
    for (std::string& action : KindActions(also.kind, *cause, init_step_)) {
      if (std::find(actions.begin(), actions.end(), action) == actions.end()) {
        actions.push_back(std::move(action));
      }
    }
  }
  if (dumps_ == nullptr) {
    verdict->clear_culprit_ranks();
    for (int64_t rank : log_ranks) verdict->add_culprit_ranks(rank);
    verdict->clear_victim_ranks();
    for (int64_t rank : victims_) verdict->add_victim_ranks(rank);
    FailureClass failure_class = FailureClass::kInsufficientEvidence;
    if (kind == RootCauseKind::kNone) {
      failure_class = FailureClass::kNone;
    } else if (kind == RootCauseKind::kTransportError && log_ranks.empty()) {
      failure_class = FailureClass::kStuckCollective;
    } else if (!log_ranks.empty()) {
      failure_class = kind == RootCauseKind::kTransportError ? FailureClass::kStuckCollective
                                                             : FailureClass::kMissingParticipant;
    }
    if (kind == RootCauseKind::kHostKill || kind == RootCauseKind::kInitFailure ||
        (kind == RootCauseKind::kNonFinite && log_ranks.size() > 1)) {
      // Nothing ran that the collectives' classes describe (or every rank named failed alike,
      // as with a loss non-finite on all of them at once): no culprit rank.
      failure_class = FailureClass::kInsufficientEvidence;
      verdict->clear_culprit_ranks();
    }
    SetFailureClass(verdict, failure_class);
    verdict->set_confidence(std::string(ConfidenceName(confidence_)));
    verdict->set_summary(cause->summary());
    verdict->clear_next_actions();
    for (const std::string& action : actions) verdict->add_next_actions(action);
    if (kind != RootCauseKind::kNone && kind != RootCauseKind::kHostKill) {
      // Logs say what happened where; the dumps say which rank the others waited for, which
      // logs alone often cannot. Most jobs wrote none because nothing asked them to.
      verdict->add_next_actions(
          "No flight-recorder dump was read: next time make every rank leave one (one line at "
          "the top of the training script: fr_analyze.record(\"DIR\"); for NCCL alone, "
          "TORCH_FR_BUFFER_SIZE=2000 and TORCH_NCCL_DUMP_ON_TIMEOUT=1; Gloo needs the handler), "
          "then run fr-analyze on DIR with these logs beside the dumps (docs/dumps.md).");
    }
    return;
  }
  // With dumps: the flight recorder says who the others waited for; the logs say why.
  const DumpVerdict& judged = dumps_->verdict;
  const std::vector<int64_t> dump_culprits(judged.culprits.begin(), judged.culprits.end());
  const FailureClass dump_class = judged.failure_class;
  const std::string_view dump_class_name = FailureClassName(dump_class);
  bool log_names_ranks = !log_ranks.empty();
  // Whether the dumps' own next actions still apply once the logs said why.
  bool keep_dump_actions = true;
  // The dumps' culprit only reported a mismatch (BlameTheOpThatDiffers decided the verdict).
  bool mismatch_reported = false;
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
  } else if (kind == RootCauseKind::kPythonException && log_names_ranks &&
             dump_class != FailureClass::kSizeMismatch &&
             dump_class != FailureClass::kDtypeMismatch &&
             dump_class != FailureClass::kOpMismatch && OnlyReportMismatches(log_ranks) &&
             std::includes(dumps_->missing_ranks.begin(), dumps_->missing_ranks.end(),
                           log_ranks.begin(), log_ranks.end()) &&
             BlameTheOpThatDiffers(log_ranks, cause)) {
    mismatch_reported = true;
    // "Read the culprit's traceback" would send the reader to the rank that only detected it.
    actions.clear();
  } else if (log_names_ranks && IsDeath(kind) &&
             dump_class == FailureClass::kInsufficientEvidence &&
             std::includes(log_ranks.begin(), log_ranks.end(), dump_culprits.begin(),
                           dump_culprits.end())) {
    // The dumps could not tell a rank that left no dump from a victim; the logs say it died.
    SetFailureClass(verdict, FailureClass::kMissingParticipant);
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
  } else if (kind == RootCauseKind::kNonFinite && log_ranks.size() > 1 &&
             (dump_class == FailureClass::kStuckCollective || dump_class == FailureClass::kNone) &&
             std::includes(log_ranks.begin(), log_ranks.end(), dump_culprits.begin(),
                           dump_culprits.end())) {
    // Every rank raised on the same non-finite loss right after the collective that carried
    // it: the op the dumps show unfinished (or nothing stuck at all) is the ranks leaving, not
    // a transport or GPU that stalled; no rank is the NaN's source as far as the job can see.
    SetFailureClass(verdict, FailureClass::kInsufficientEvidence);
    verdict->clear_culprit_ranks();
    verdict->set_confidence(std::string(ConfidenceName(confidence_)));
    cause->set_disagreement(
        dump_class == FailureClass::kNone
            ? "The dumps show nothing stuck: every rank stopped on its own report of the loss."
            : fmt::format("The dumps show every member of the op left it unfinished ({}); the "
                          "logs say each of them raised on the non-finite loss it carried, so "
                          "nothing points at the network or the GPUs.",
                          dump_class_name));
    verdict->set_summary("No rank waited on another: every rank stopped on a non-finite loss.");
    keep_dump_actions = false;
  } else if (kind == RootCauseKind::kPythonException && log_names_ranks &&
             (dump_class == FailureClass::kSizeMismatch ||
              dump_class == FailureClass::kDtypeMismatch ||
              dump_class == FailureClass::kOpMismatch) &&
             !dump_culprits.empty() && OnlyReportMismatches(log_ranks) &&
             std::none_of(log_ranks.begin(), log_ranks.end(), [&](int64_t r) {
               return std::binary_search(dump_culprits.begin(), dump_culprits.end(), r);
             })) {
    // The rank that raised only detected the mismatch (its check of the sizes it received);
    // the dumps show whose op differs. That rank is where the failure started.
    cause->clear_ranks();
    for (int64_t rank : dump_culprits) cause->add_ranks(rank);
    std::set<std::string> hosts;
    for (const LogEvent& event : logs_.events) {
      if (!event.host.empty() &&
          std::binary_search(dump_culprits.begin(), dump_culprits.end(), event.rank)) {
        hosts.insert(event.host);
      }
    }
    cause->clear_hosts();
    for (const std::string& host : hosts) cause->add_hosts(host);
    cause->set_disagreement(fmt::format(
        "Rank(s) {} raised on detecting that the collective's members differ; the dumps show "
        "rank(s) {} issued the op that differs ({}): the failure started there, and {} is a "
        "victim of it.",
        Ranks(log_ranks), Ranks(dump_culprits), dump_class_name, Ranks(log_ranks)));
    // "Read the culprit's traceback" would send the reader to a rank that raised nothing: the
    // dumps' steps for a mismatch are the ones that apply.
    actions.clear();
  } else if (log_names_ranks && !dump_culprits.empty()) {
    std::vector<int64_t> common;
    std::set_intersection(log_ranks.begin(), log_ranks.end(), dump_culprits.begin(),
                          dump_culprits.end(), std::back_inserter(common));
    const bool deaths_explain_dumps = IsDeath(kind) &&
                                      dump_class == FailureClass::kMissingParticipant &&
                                      std::includes(log_ranks.begin(), log_ranks.end(),
                                                    dump_culprits.begin(), dump_culprits.end());
    const bool two_initiators = deaths_explain_dumps && !co_initiators_.empty();
    if (two_initiators) {
      // Two ranks died of their own causes; the dumps saw the others wait for one of them (the
      // other's peers had already failed out of their op): both are culprits.
      verdict->clear_culprit_ranks();
      for (int64_t rank : log_ranks) verdict->add_culprit_ranks(rank);
    }
    if (deaths_explain_dumps) {
      // The dumps' own sentence ("waiting on nothing else, stuck outside communication") would
      // contradict the deaths the logs show.
      const std::vector<int64_t>& stopped = two_initiators ? log_ranks : dump_culprits;
      verdict->set_summary(fmt::format(
          "Rank(s) {} stopped ({}{}); the dumps show the others waiting for the ops {} never "
          "issued{}.",
          Ranks(stopped), kind_name, two_initiators ? ", and another fault of its own" : "",
          stopped.size() > 1 ? "they" : "it", WaitedOp(*verdict)));
    }
    if (common.empty()) {
      cause->set_disagreement(fmt::format(
          "The dumps blame rank(s) {} ({}); the logs' earliest fault is on rank(s) {} ({}). "
          "Check whether the fault on {} made {} stop.",
          Ranks(dump_culprits), dump_class_name, Ranks(log_ranks), kind_name, Ranks(log_ranks),
          Ranks(dump_culprits)));
    }
  } else if (log_names_ranks && dump_culprits.empty() && dump_class != FailureClass::kNone) {
    verdict->clear_culprit_ranks();
    for (int64_t rank : log_ranks) verdict->add_culprit_ranks(rank);
  } else if (log_names_ranks && dump_class == FailureClass::kNone && IsDeath(kind) &&
             InFlightOps() > 0) {
    // The dumps were written while the peers still waited, in ops younger than their timeout;
    // the logs say the rank those ops need is dead, so they will never complete.
    SetFailureClass(verdict, FailureClass::kMissingParticipant);
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
  // A culprit that left no dump, no error, and no entry in its launcher's failure table
  // returned normally: "it crashed before dumping" would send the reader after a crash.
  bool exited_cleanly = false;
  if ((kind == RootCauseKind::kUnknown || kind == RootCauseKind::kCollectiveTimeout) &&
      dump_class == FailureClass::kMissingParticipant && !dump_culprits.empty() &&
      ExitedUnreported(dump_culprits) == dump_culprits) {
    exited_cleanly = true;
    const bool many = dump_culprits.size() > 1;
    verdict->set_summary(fmt::format(
        "Rank(s) {} left no dump and no error, and the launcher's failure table lists the "
        "workers beside {} but not {}: {} exited by {} (status 0) before the collective its "
        "peers wait in{}, as a training loop that ends early on one rank does.",
        Ranks(dump_culprits), many ? "them" : "it", many ? "them" : "it", many ? "they" : "it",
        many ? "themselves" : "itself", WaitedOp(*verdict)));
    cause->set_summary(fmt::format(
        "{} Rank(s) {} {} not among the launcher's failures: {} exited with status 0.",
        cause->summary(), Ranks(dump_culprits), many ? "are" : "is", many ? "they" : "it"));
    // "Collect every rank's dump" (the unknown kind's step) is not what is missing here.
    actions.clear();
  }
  // A culprit its launcher saw exit with an error status of its own, with no exception or
  // signal: the sentence for a rank stuck outside communication, and "collect every dump", do
  // not fit a process that ended itself.
  std::map<int64_t, int32_t> exit_status;
  if (!exited_cleanly &&
      (kind == RootCauseKind::kUnknown || kind == RootCauseKind::kCollectiveTimeout) &&
      dump_class == FailureClass::kMissingParticipant && !dump_culprits.empty()) {
    for (int64_t rank : dump_culprits) {
      if (int32_t status = OwnExitStatus(rank); status > 0) exit_status[rank] = status;
    }
    if (exit_status.size() != dump_culprits.size()) exit_status.clear();
  }
  if (!exit_status.empty()) {
    std::vector<std::string> parts;
    for (const auto& [rank, status] : exit_status) {
      parts.push_back(fmt::format("rank {} exit with status {}", rank, status));
    }
    verdict->set_summary(fmt::format(
        "The launcher saw {} on its own, with no exception or signal in the logs (a "
        "sys.exit, or an exit from native code); the dumps show the others waiting for the ops "
        "it never issued{}.",
        fmt::join(parts, ", "), WaitedOp(*verdict)));
    cause->set_summary(fmt::format("{} The launcher saw {} on its own.", cause->summary(),
                                   fmt::join(parts, ", ")));
    actions = {fmt::format(
        "Find where rank {}'s script (or a library it calls) exits with status {}: sys.exit / "
        "exit() calls and their conditions, os._exit, a wrapper that turns an error into an "
        "exit code; its output just before the exit says which.",
        exit_status.begin()->first, exit_status.begin()->second)};
    keep_dump_actions = false;
  }
  std::string joined;
  if (kind != RootCauseKind::kNone && kind != RootCauseKind::kUnknown) {
    joined = fmt::format("Why, from the logs: {}", cause->summary());
    if (!cause->disagreement().empty()) joined += " " + cause->disagreement();
    verdict->set_summary(verdict->summary() + " " + joined);
  } else if (!cause->disagreement().empty()) {
    verdict->set_summary(verdict->summary() + " " + cause->disagreement());
  }
  std::vector<std::string> dump_actions(verdict->next_actions().begin(),
                                        verdict->next_actions().end());
  if (!keep_dump_actions) dump_actions.clear();
  if (!mismatch_reported && IsDeath(kind) && dump_class == FailureClass::kMissingParticipant &&
      !dump_culprits.empty() &&
      std::includes(log_ranks.begin(), log_ranks.end(), dump_culprits.begin(),
                    dump_culprits.end())) {
    // The logs say how the culprit died: the dumps' steps for a rank that hangs somewhere (read
    // where it is stuck, look for a swallowed exception) would contradict the traceback shown.
    NextActionContext context = judged.next_action_context;
    context.stop_explained = true;
    dump_actions = NextActions(context);
  }
  if (exited_cleanly) {
    NextActionContext context = judged.next_action_context;
    context.culprit_exited_cleanly = true;
    dump_actions = NextActions(context);
  }
  std::vector<std::string> merged = actions;
  for (const std::string& action : dump_actions) merged.push_back(action);
  verdict->clear_next_actions();
  for (const std::string& action : merged) verdict->add_next_actions(action);
}

bool Explainer::BlameTheOpThatDiffers(const std::vector<int64_t>& reporters,
                                      report::RootCause* cause) {
  report::Verdict* verdict = report_->mutable_verdict();
  const JobIndex& index = dumps_->index;
  // A group the reporters may be in: its members are unknown (Gloo's dumps list none), or they
  // include one of them.
  auto may_hold_reporter = [&](uint32_t g) {
    const JobGroup& group = index.groups[g];
    if (!group.ranks_known) return true;
    return std::any_of(reporters.begin(), reporters.end(), [&](int64_t r) {
      return std::find(group.ranks.begin(), group.ranks.end(), r) != group.ranks.end();
    });
  };
  // Past this many ranks, neither the changed ops nor the group members single out a side: a
  // job whose shapes vary from step to step changes many ops, and a large group names everyone.
  constexpr size_t kMostNamed = 8;
  std::vector<int64_t> changed;
  FailureClass changed_kind = FailureClass::kSizeMismatch;
  bool against_siblings = false;
  std::vector<std::string> evidence;
  const OpChange* first = nullptr;
  for (const OpChange& change : dumps_->op_changes) {
    if (!may_hold_reporter(change.group)) continue;
    if (first == nullptr) first = &change;
    changed.push_back(change.rank);
    if (change.kind == FailureClass::kDtypeMismatch) changed_kind = change.kind;
    against_siblings |= change.unlike_siblings;
    evidence.insert(evidence.end(), change.evidence.begin(), change.evidence.end());
  }
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  if (changed.size() > kMostNamed) changed.clear();
  // The reporters' peers: the ranks the dumps show in the failure (culprits, those blocked).
  std::set<int64_t> peer_set(dumps_->verdict.victims.begin(), dumps_->verdict.victims.end());
  peer_set.insert(dumps_->verdict.culprits.begin(), dumps_->verdict.culprits.end());
  peer_set.insert(dumps_->blocked_ranks.begin(), dumps_->blocked_ranks.end());
  for (int64_t rank : reporters) peer_set.erase(rank);
  if (peer_set.empty()) {
    // Nothing stuck in the dumps (Gloo records no completion): the members of the groups the
    // reporters may share with them, unless that is most of the job (the default group, a job
    // whose dumps list no members), which would name everyone.
    std::set<int64_t> members;
    for (uint32_t g = 0; g < index.groups.size(); ++g) {
      if (index.groups[g].ranks_inferred || !may_hold_reporter(g)) continue;
      for (const GroupMember& member : index.groups[g].members) {
        if (member.dump >= 0) members.insert(member.rank);
      }
    }
    for (int64_t rank : reporters) members.erase(rank);
    if (members.size() <= kMostNamed) peer_set = std::move(members);
  }
  std::vector<int64_t> peers(peer_set.begin(), peer_set.end());
  if (changed.empty() && peers.empty()) return false;
  std::string reasons;
  for (const LogEvent& event : logs_.events) {
    if (event.kind == LogEventKind::kPythonException && event.reports_mismatch &&
        std::binary_search(reporters.begin(), reporters.end(), event.rank)) {
      reasons = event.reason;
      break;
    }
  }
  std::vector<int64_t> culprits;
  FailureClass failure_class = changed_kind;
  if (!changed.empty()) {
    culprits = changed;
    const JobGroup& group = index.groups[first->group];
    verdict->set_summary(fmt::format(
        "Rank(s) {} issued {} #{} in group {}{} with {} than {}; rank(s) {}, a peer there, "
        "raised on detecting the difference ({}) and left no dump: the mismatch started on "
        "rank(s) {}, and {} is a victim of it ({}).",
        Ranks(changed), first->op, first->seq, group.name,
        group.desc.empty() ? "" : fmt::format(" ({})", group.desc),
        changed_kind == FailureClass::kDtypeMismatch ? "a different dtype" : "different sizes",
        against_siblings ? "the same op of its sibling groups" : "its own previous op of that kind",
        Ranks(reporters), reasons, Ranks(changed), Ranks(reporters), fmt::join(evidence, "; ")));
    verdict->set_confidence(std::string(ConfidenceName(Confidence::kMedium)));
    if (confidence_ == Confidence::kHigh) SetConfidence(cause, Confidence::kMedium);
  } else {
    // Two sides and nothing to compare either with: the one that received the unexpected size
    // raised, which says nothing of which side is off.
    culprits = reporters;
    culprits.insert(culprits.end(), peers.begin(), peers.end());
    std::sort(culprits.begin(), culprits.end());
    culprits.erase(std::unique(culprits.begin(), culprits.end()), culprits.end());
    if (reasons.find("sizes") == std::string::npos) failure_class = FailureClass::kOpMismatch;
    verdict->set_summary(fmt::format(
        "Rank(s) {} raised on detecting that the members of a collective differ ({}) and left "
        "no dump; its peers there, as the dumps show them, are rank(s) {}{}. The dumps hold "
        "nothing to compare that op with (no sibling group issued it, no earlier op of that "
        "kind changed): one side's tensors differ from the other's, and which side is off "
        "cannot be told from this evidence.",
        Ranks(reporters), reasons, Ranks(peers), WaitedOp(*verdict)));
    verdict->set_confidence(std::string(ConfidenceName(Confidence::kLow)));
    SetConfidence(cause, Confidence::kLow);
  }
  SetFailureClass(verdict, failure_class);
  verdict->clear_culprit_ranks();
  for (int64_t rank : culprits) verdict->add_culprit_ranks(rank);
  std::set<int64_t> victims(verdict->victim_ranks().begin(), verdict->victim_ranks().end());
  for (int64_t rank : reporters) victims.insert(rank);
  for (int64_t rank : culprits) victims.erase(rank);
  verdict->clear_victim_ranks();
  for (int64_t rank : victims) verdict->add_victim_ranks(rank);
  for (report::RankReport& rank : *report_->mutable_ranks()) {
    if (std::binary_search(culprits.begin(), culprits.end(), int64_t{rank.rank()})) {
      rank.set_role("culprit");
    } else if (victims.contains(rank.rank())) {
      rank.set_role("victim");
    }
  }
  cause->clear_ranks();
  for (int64_t rank : culprits) cause->add_ranks(rank);
  std::set<std::string> hosts;
  for (const LogEvent& event : logs_.events) {
    if (!event.host.empty() && std::binary_search(culprits.begin(), culprits.end(), event.rank)) {
      hosts.insert(event.host);
    }
  }
  cause->clear_hosts();
  for (const std::string& host : hosts) cause->add_hosts(host);
  cause->set_disagreement(fmt::format(
      "Rank(s) {} left no dump, so the dumps alone could not compare the op's members; its "
      "error is a report of the mismatch, not a fault of its own.",
      Ranks(reporters)));
  NextActionContext context = dumps_->verdict.next_action_context;
  context.failure_class = failure_class;
  context.culprits = culprits;
  context.culprit_dump_missing = false;
  context.stop_explained = true;
  verdict->clear_next_actions();
  for (const std::string& action : NextActions(context)) verdict->add_next_actions(action);
  return true;
}

std::vector<int64_t> Explainer::ExitedUnreported(const std::vector<int64_t>& culprits) const {
  std::vector<int64_t> exited;
  if (dumps_ == nullptr) return exited;
  // Each agent's reported workers: (host, global rank - local rank) -> the highest local rank
  // it reported. torchrun's table lists every worker that failed, those it SIGTERMed after the
  // first failure included; one that had already exited 0 is not a failure to it.
  std::map<std::pair<std::string, int64_t>, int64_t> highest_local;
  std::set<int64_t> reported;
  for (const LogEvent& event : logs_.events) {
    if (event.launcher == Launcher::kNone || event.rank < 0) continue;
    reported.insert(event.rank);
    if (event.local_rank < 0 || event.local_rank > event.rank) continue;
    int64_t& highest = highest_local[{event.host, event.rank - event.local_rank}];
    highest = std::max(highest, event.local_rank);
  }
  for (int64_t rank : culprits) {
    // A rank any log line is about (an error, a death) did not leave quietly.
    bool quiet = !reported.contains(rank) && std::binary_search(dumps_->missing_ranks.begin(),
                                                                dumps_->missing_ranks.end(), rank);
    for (const LogEvent& event : logs_.events) quiet &= event.rank != rank;
    bool ran_by_reporting_agent = false;
    for (const auto& [agent, highest] : highest_local) {
      int64_t local = rank - agent.second;
      // A worker reported below it and one above it: the table is that agent's, around it.
      bool below = false;
      for (int64_t other : reported) {
        below |= other >= agent.second && other < rank;
      }
      ran_by_reporting_agent |= local > 0 && local < highest && below;
    }
    if (quiet && ran_by_reporting_agent) exited.push_back(rank);
  }
  return exited;
}

int32_t Explainer::OwnExitStatus(int64_t rank) const {
  int32_t status = 0;
  for (const LogEvent& event : logs_.events) {
    if (event.rank != rank) continue;
    // Its own exception, crash or kill says more than a status; torchrun writes a death by
    // signal N as exit code -N.
    if (event.launcher == Launcher::kNone || event.signal > 0 || event.exit_code < 0) return 0;
    if (event.exit_code != INT32_MIN && event.exit_code > 0) status = event.exit_code;
  }
  return status;
}

bool Explainer::IsDeath(RootCauseKind kind) {
  return kind == RootCauseKind::kPythonException || kind == RootCauseKind::kSegfault ||
         kind == RootCauseKind::kHostOom || kind == RootCauseKind::kCudaOom ||
         kind == RootCauseKind::kCudaError || kind == RootCauseKind::kXid;
}

std::vector<std::string> Explainer::KindActions(RootCauseKind kind, const report::RootCause& cause,
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
  if (kind == RootCauseKind::kInitFailure && init_step == "select its GPU") {
    return {
        "Start no more processes per node than the GPUs each can see (torchrun "
        "--nproc-per-node, CUDA_VISIBLE_DEVICES, the scheduler's GPU count per task), and "
        "select the GPU by LOCAL_RANK, not by the global RANK."};
  }
  if (kind == RootCauseKind::kInitFailure && init_step == "form the NCCL communicator") {
    return {
        "Give every rank its own GPU: torch.cuda.set_device(LOCAL_RANK) before "
        "init_process_group (torchrun sets LOCAL_RANK), and check CUDA_VISIBLE_DEVICES "
        "and the number of processes per node against the GPUs each node has."};
  }
  if (kind == RootCauseKind::kInitFailure && init_step.starts_with("set up its InfiniBand")) {
    return {fmt::format(
                "Check the InfiniBand/RoCE set-up of {}: `ibstat` or `ibv_devinfo` (ports "
                "Active, the link layer), NCCL_IB_HCA (only the HCAs cabled to the job's fabric), "
                "and for RoCE NCCL_IB_GID_INDEX (the RoCEv2 GID of the interface, `show_gids`); "
                "an ibv_modify_qp that fails with 'Network is unreachable' or 'Connection timed "
                "out' is the route between the nodes.",
                hosts),
            "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET, and once with "
            "NCCL_IB_DISABLE=1 (sockets): a job that then forms has a fabric problem, not a "
            "bug of its own."};
  }
  if (kind == RootCauseKind::kInitFailure && (init_step.find("NCCL") != std::string::npos ||
                                              init_step.find("NVML") != std::string::npos)) {
    return {
        "NCCL could not set up on that host: check NCCL_SOCKET_IFNAME (an interface every "
        "node has, e.g. `ip addr`), that the GPUs are visible inside the container "
        "(nvidia-smi there), and run with NCCL_DEBUG=INFO to see which step failed.",
        "Compare the NCCL and torch versions every host prints: they must match."};
  }
  if (kind == RootCauseKind::kInitFailure && init_step.starts_with("start the rendezvous store")) {
    return {
        "The store could not listen on its port (almost always: something holds it): launch on a "
        "free port "
        "(torchrun --master-port, or MASTER_PORT; --standalone picks one), or find and stop "
        "what holds it (`ss -ltnp | grep :PORT`: often a leftover worker of an earlier run, "
        "or a second job started on the same node)."};
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
        fmt::format("Find the step where the loss first went NaN/inf{}: check its data batch, "
                    "the learning rate and warmup, fp16 loss scaling or bf16 overflow, and "
                    "gradient clipping; torch.autograd.set_detect_anomaly(True) on a rerun of "
                    "that step names the operation.",
                    cause.ranks_size() == 1 ? " on that rank" : "")};
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

}  // namespace fr::root_cause_internal
