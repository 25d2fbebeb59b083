// The headline of the dumps' verdict: which finding leads, its class, culprits and victims, how
// sure it is given what the dumps could record, and the longest wait chains behind it.
#include <algorithm>
#include <cctype>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/index/job_index.h"
#include "fr/match/matcher.h"
#include "fr/match/p2p_rhythm.h"
#include "fr/verdict/failure_class.h"
#include "fr/verdict/judge.h"
#include "fr/verdict/judgment.h"
#include "fr/verdict/next_actions.h"
#include "fr/verdict/program_order.h"
#include "fr/verdict/report_writer.h"
#include "fr/verdict/stack_evidence.h"
#include "fr/verdict/stragglers.h"
#include "fr/verdict/unrecorded_p2p.h"
#include "fr/waitfor/wait_for_graph.h"

namespace fr::verdict_internal {

void Judge::JudgeVerdict(const WaitForGraph& graph) {
  const std::vector<JudgedFinding>& findings = judgment_.findings;
  DumpVerdict& verdict = judgment_.verdict;
  const JudgedFinding* lead = nullptr;
  std::set<int64_t> culprits;
  // The lead is the most certain cause, the earliest among equals (findings are in time
  // order): a doubtful finding, such as a desync that completed anyway, never outranks a
  // certain cause of the hang. With --pg-filter, the headline comes from the selected groups
  // when they hold a cause.
  bool filtered = !options_.pg_filter.empty() &&
                  std::any_of(findings.begin(), findings.end(), [&](const JudgedFinding& f) {
                    return f.NamesCulprits() && FindingSelected(f);
                  });
  bool outside_only = !options_.pg_filter.empty() && !filtered;
  for (const JudgedFinding& finding : findings) {
    if (finding.NamesCulprits() && (!filtered || FindingSelected(finding))) {
      if (lead == nullptr || finding.confidence > lead->confidence) lead = &finding;
    }
  }
  // Other culprits come from findings as certain as the lead; doubtful ones stay findings.
  for (const JudgedFinding& finding : findings) {
    if (lead != nullptr && finding.NamesCulprits() && (!filtered || FindingSelected(finding)) &&
        finding.confidence >= lead->confidence) {
      culprits.insert(finding.ranks.begin(), finding.ranks.end());
    }
  }
  if (lead == nullptr) {
    for (const JudgedFinding& finding : findings) {
      if (finding.topic == FindingTopic::kFailure &&
          finding.failure_class == FailureClass::kStuckCollective) {
        lead = &finding;
        break;
      }
    }
  }
  size_t expected =
      trace_.ranks.size() + judgment_.missing_ranks.size() + judgment_.unreadable_ranks.size();
  bool too_few = trace_.ranks.size() < 2 || trace_.ranks.size() * 2 < expected;
  FailureClass failure_class = FailureClass::kNone;
  Confidence confidence = Confidence::kHigh;
  std::string summary;
  const MatchResult& matched = judgment_.matched;
  if (lead != nullptr) {
    verdict.lead = static_cast<int>(lead - findings.data());
    failure_class = lead->failure_class;
    confidence = lead->confidence;
    std::vector<int64_t> others;
    for (int64_t r : culprits) {
      if (std::find(lead->ranks.begin(), lead->ranks.end(), r) == lead->ranks.end()) {
        others.push_back(r);
      }
    }
    if (!others.empty() && failure_class != FailureClass::kStuckCollective) {
      summary =
          fmt::format("{} Other independent culprits: {}.", lead->summary, FormatRankSet(others));
      // Several ranks that each stopped on their own, beside a rank whose dump is not there:
      // more often they all wait, by paths the other dumps cannot show, for that rank.
      if (std::vector<int64_t> absent = AbsentRanks(); !absent.empty()) {
        confidence = Confidence::kLow;
        summary += fmt::format(
            " Rank(s) {} left no readable dump: independent culprits beside it are often its "
            "victims, waiting on it through ops the other dumps do not show; its dump would "
            "settle it.",
            FormatRankSet(absent));
      }
    } else {
      summary = lead->summary;
    }
    if (too_few) {
      // What so few dumps can and cannot decide comes first.
      confidence = std::min(confidence, Confidence::kMedium);
      bool blamed_have_dumps = std::all_of(lead->ranks.begin(), lead->ranks.end(),
                                           [&](int64_t r) { return DumpOf(r) != nullptr; });
      std::string limit = fmt::format("Only {} of {} ranks' dumps could be read ({}).",
                                      trace_.ranks.size(), expected, MissingAndUnreadable());
      if (blamed_have_dumps) {
        summary = fmt::format("{} From them: {}", limit, summary);
      } else {
        // The blamed rank left no dump: among so many missing ones it may as well be another
        // victim of a culprit whose dump is missing too.
        failure_class = FailureClass::kInsufficientEvidence;
        confidence = Confidence::kLow;
        culprits.clear();
        summary = fmt::format(
            "{} They show ranks waiting for rank(s) {} that left no dump, but with most dumps "
            "missing that rank may be one more victim; the dumps of ranks {} would settle it. "
            "The wait seen: {}",
            limit, FormatRankSet(lead->ranks), FormatRankSet(AbsentRanks()), lead->summary);
      }
    }
  } else if (too_few) {
    failure_class = FailureClass::kInsufficientEvidence;
    confidence = Confidence::kLow;
    std::vector<int64_t> absent = AbsentRanks();
    if (trace_.ranks.empty()) {
      summary =
          "No flight-recorder dump could be read: nothing here tells culprits from victims. "
          "The ranks' dumps would settle it.";
    } else if (absent.empty()) {
      summary = fmt::format(
          "Only {} rank's dump was read and no other rank is known: one rank cannot show who "
          "waits for whom. The other ranks' dumps would settle it.",
          trace_.ranks.size());
    } else {
      summary = fmt::format(
          "Only {} of {} ranks' dumps could be read: too few to tell culprits from victims. "
          "The dumps of ranks {} would settle it.",
          trace_.ranks.size(), expected, FormatRankSet(absent));
    }
  } else if (!unreadable_sinks_.empty()) {
    failure_class = FailureClass::kInsufficientEvidence;
    confidence = Confidence::kLow;
    std::vector<std::string> errors;
    for (const RejectedFile& file : trace_.rejected) {
      if (std::binary_search(unreadable_sinks_.begin(), unreadable_sinks_.end(), file.rank)) {
        errors.push_back(file.error);
      }
    }
    summary = fmt::format(
        "Ranks wait for {} {}, whose dump could not be read{}: whether it is the cause or one "
        "more victim is not in the other dumps. A readable copy of its dump would settle it.",
        unreadable_sinks_.size() > 1 ? "ranks" : "rank", FormatRankSet(unreadable_sinks_),
        errors.empty() ? "" : fmt::format(" ({})", fmt::join(errors, "; ")));
  } else if (!trace_.missing_ranks.empty()) {
    // Nothing is seen stuck, but a rank left no file: a rank that died takes no dump with it,
    // and its peers' ops may have ended in errors that the recorder does not tell from
    // completion (Gloo retires both). The dumps cannot call such a job healthy.
    failure_class = FailureClass::kInsufficientEvidence;
    confidence = Confidence::kLow;
    summary = fmt::format(
        "Nothing in the {} dumps read is stuck or mismatched, but {} {} left no dump: a rank "
        "that died leaves none, and its peers' last ops may have ended in errors that the "
        "flight recorder does not tell from completion. The dumps or logs of {} would settle "
        "it.",
        trace_.ranks.size(), trace_.missing_ranks.size() > 1 ? "ranks" : "rank",
        FormatRankSet(trace_.missing_ranks),
        trace_.missing_ranks.size() > 1 ? "those ranks" : "that rank");
  } else if (matched.in_flight_ops > 0) {
    summary = fmt::format(
        "No collective is stuck: {} op(s) were in flight but younger than their timeout when "
        "the dumps were taken, and every completed collective matched.",
        matched.in_flight_ops);
  } else {
    summary = "Every collective in the dumps is matched across its group and nothing is stuck.";
  }
  if (IsFailureClass(failure_class) && index().dump_times.job_ns == kUnknown) {
    // Pending ops were judged stuck for want of a dump time: the structure may be certain,
    // but not that the job had hung rather than been dumped on demand while running.
    confidence = std::min(confidence, Confidence::kMedium);
    summary +=
        " The dump time is unknown (no usable file times), so pending ops were judged "
        "stuck; if the dumps were taken on demand from a running job, give --dump-time.";
  }
  if (IsFailureClass(failure_class) && matched.stalled_beyond_rhythm_ops > 0 &&
      matched.ops_known_stuck == 0 && index().dump_times.job_ns != kUnknown) {
    // No op reached its timeout: the stall rests on the job's rhythm, not on a watchdog.
    confidence = std::min(confidence, Confidence::kMedium);
    summary += fmt::format(
        " A hang in progress: no op had reached its timeout when the dumps were taken, but "
        "ranks had waited up to {:.1f} s, far beyond the job's rhythm ({:.1f} ms between a "
        "rank's ops at the median).",
        static_cast<double>(matched.longest_stall_ns) / 1e9,
        static_cast<double>(matched.stall_median_gap_ns) / 1e6);
  }
  if (outside_only && lead != nullptr) {
    summary = fmt::format("No cause lies in the selected groups ({}); outside them: {}",
                          fmt::join(options_.pg_filter, ", "), summary);
  }
  if (failure_class == FailureClass::kNone && !judgment_.stragglers.empty()) {
    summary +=
        fmt::format(" Rank {} is a straggler (see findings).", judgment_.stragglers.front().rank);
  }
  verdict.failure_class = failure_class;
  verdict.culprits.assign(culprits.begin(), culprits.end());
  verdict.confidence = confidence;
  verdict.summary = std::move(summary);
  // The lead may blame a rank for what it did (a mismatch) while the graph also finds it
  // blocked elsewhere: it is then a culprit, never also its own victim.
  for (int64_t r : graph.victims()) {
    if (!culprits.contains(r)) verdict.victims.push_back(r);
  }
  // A rank of a deadlock that the lead cleared (its peer broke the rhythm) waits too.
  for (int64_t r : graph.culprits()) {
    if (culprits.contains(r)) continue;
    if (std::any_of(blocks().begin(), blocks().end(), [&](const Block& block) {
          return std::binary_search(block.waiters.begin(), block.waiters.end(), r);
        })) {
      verdict.victims.push_back(r);
    }
  }
  std::sort(verdict.victims.begin(), verdict.victims.end());
  NextActionContext context;
  context.failure_class = failure_class;
  context.culprits = verdict.culprits;
  // Blamed for what it did not do while leaving no file behind: its crash is the lead.
  context.culprit_dump_missing =
      lead != nullptr && !lead->ranks.empty() &&
      std::all_of(lead->ranks.begin(), lead->ranks.end(),
                  [&](int64_t r) { return DumpOf(r) == nullptr && !index().Unreadable(r); });
  context.culprit_waits_elsewhere =
      !verdict.culprits.empty() &&
      std::all_of(verdict.culprits.begin(), verdict.culprits.end(), [&](int64_t r) {
        return std::any_of(blocks().begin(), blocks().end(), [&](const Block& block) {
          return !block.is_p2p && std::binary_search(block.waiters.begin(), block.waiters.end(), r);
        });
      });
  context.timing_recordable = !OnlyGloo();
  context.timing_known = TimingSeen();
  context.buffer_wrapped = BufferWrapped();
  // Ranks whose files could not be read too: a readable copy is what is missing.
  context.ranks_missing = AbsentRanks();
  context.has_stragglers = !judgment_.stragglers.empty();
  verdict.next_actions = NextActions(context);
  verdict.next_action_context = std::move(context);
  verdict.chains = Chains(graph, culprits);
}

bool Judge::OnlyGloo() const {
  bool any = false;
  for (const RankDump& dump : trace_.ranks) {
    for (const Entry& entry : dump.entries) {
      if (dump.strings.view(entry.backend) != "gloo") return false;
      any = true;
    }
  }
  return any;
}

bool Judge::TimingSeen() const {
  for (const RankDump& dump : trace_.ranks) {
    for (const Entry& entry : dump.entries) {
      if (entry.time_discovered_started_ns != kUnknown || entry.state == EntryState::kStarted) {
        return true;
      }
    }
  }
  return false;
}

bool Judge::BufferWrapped() const {
  for (const JobGroup& group : index().groups) {
    for (const GroupMember& member : group.members) {
      if (member.first_seq_in_buffer > 1) return true;
    }
  }
  return false;
}

std::vector<std::vector<WaitHop>> Judge::Chains(const WaitForGraph& graph,
                                                const std::set<int64_t>& culprits) const {
  // The most informative chains are the longest: they cross groups (a DP waiter blocked by a
  // PP peer blocked by the culprit). Ties go to the lowest rank.
  std::vector<std::pair<int, int64_t>> candidates;
  for (int64_t victim : graph.victims()) candidates.emplace_back(-graph.Distance(victim), victim);
  std::sort(candidates.begin(), candidates.end());
  std::set<std::vector<uint32_t>> seen_paths;
  std::vector<std::vector<WaitHop>> chains;
  for (const auto& [negative_distance, victim] : candidates) {
    if (chains.size() >= kMaxChains) break;
    // A culprit the verdict chose over the graph's (its op differs from its peers') is not
    // shown waiting for the rank that stopped on it.
    if (culprits.contains(victim)) continue;
    std::vector<WaitHop> chain = graph.ChainFrom(victim);
    if (chain.empty()) continue;
    // The graph stops at the first rank of a deadlock; when the verdict cleared that rank
    // (its peer broke the rhythm), the chain goes on to the culprit it waits for.
    if (int64_t last = chain.back().waits_for; !culprits.contains(last)) {
      for (uint32_t b = 0; b < blocks().size(); ++b) {
        const Block& block = blocks()[b];
        if (!std::binary_search(block.waiters.begin(), block.waiters.end(), last)) continue;
        auto to = std::find_if(block.blockers.begin(), block.blockers.end(),
                               [&](int64_t r) { return culprits.contains(r); });
        if (to == block.blockers.end()) continue;
        chain.push_back(WaitHop{last, b, *to});
        break;
      }
    }
    std::vector<uint32_t> path;
    for (const WaitHop& hop : chain) path.push_back(hop.block);
    if (!seen_paths.insert(path).second) continue;
    chains.push_back(std::move(chain));
  }
  return chains;
}

}  // namespace fr::verdict_internal
