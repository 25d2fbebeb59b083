// When the logs show no fault of its own: only timeouts (the rank that never reached the
// collective), a peer that fell silent, a death nothing explains, or an exit code alone.
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

void Explainer::AddCascadeEvidence(report::RootCause* cause) {
  std::vector<const LogEvent*> timeouts;
  for (const LogEvent& event : logs_.events) {
    if (event.kind == LogEventKind::kWatchdogTimeout) timeouts.push_back(&event);
  }
  std::stable_sort(timeouts.begin(), timeouts.end(),
                   [](const LogEvent* a, const LogEvent* b) { return Before(*a, *b); });
  for (size_t i = 0; i < timeouts.size() && i < 2; ++i) AddEvidence(cause, *timeouts[i]);
}

void Explainer::NameFirstDeath(report::RootCause* cause) {
  const LogEvent* first = nullptr;
  // A worker that ended by SIGTERM was stopped by its own launcher after another failed: it
  // is named only when no other death was reported.
  for (bool allow_sigterm : {false, true}) {
    for (const LogEvent& event : logs_.events) {
      bool death =
          event.kind == LogEventKind::kWorkerFailed || event.kind == LogEventKind::kRootCauseTable;
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
  std::string how = first->signal > 0               ? fmt::format("signal {}", first->signal)
                    : first->exit_code != INT32_MIN ? fmt::format("exit code {}", first->exit_code)
                    : !first->reason.empty()        ? first->reason
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

bool Explainer::FellSilent(const std::string& host,
                           const std::vector<const LogEvent*>& reports) const {
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

bool Explainer::FromSilentPeer(report::RootCause* cause, const std::string& host,
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

bool Explainer::FromTimeouts(report::RootCause* cause) {
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
  // Ranks whose lines name none (torch 1.x's "[E ProcessGroupNCCL.cpp:458] [Rank 0] ...")
  // still count as timeouts seen.
  size_t timeouts_seen = 0;
  for (const LogEvent& event : logs_.events) {
    timeouts_seen += event.kind == LogEventKind::kWatchdogTimeout;
  }
  auto in_collective = [](const LogEvent& event) {
    return fmt::format("{}{}{}", event.op.empty() ? "a collective" : event.op,
                       event.seq >= 0 ? fmt::format(" SeqNum {}", event.seq) : "",
                       event.process_group.empty() ? "" : " of " + event.process_group);
  };
  // Timeouts in several groups (a TP group's members wait in its collective, their DP peers in
  // theirs) are each a view of the same stop: every group is named with its own collective, so
  // that no group's op is taken for the one all of them wait in.
  std::map<std::string, std::pair<const LogEvent*, std::set<int64_t>>> by_group;
  for (const LogEvent& event : logs_.events) {
    if (event.kind != LogEventKind::kWatchdogTimeout) continue;
    auto& [first, ranks] = by_group[event.process_group];
    if (first == nullptr || Before(event, *first)) first = &event;
    if (event.rank >= 0) ranks.insert(event.rank);
  }
  std::string where = in_collective(*first_timeout_);
  if (by_group.size() > 1) {
    std::vector<std::pair<const LogEvent*, size_t>> groups;
    for (const auto& [name, group] : by_group)
      groups.emplace_back(group.first, group.second.size());
    std::sort(groups.begin(), groups.end(),
              [](const auto& a, const auto& b) { return Before(*a.first, *b.first); });
    std::vector<std::string> parts;
    for (const auto& [first, ranks] : groups) {
      parts.push_back(fmt::format("{} rank(s) in {}", ranks, in_collective(*first)));
    }
    where = fmt::format("{} process groups ({})", groups.size(), fmt::join(parts, "; "));
  }
  std::string sentence =
      fmt::format("Only collective timeouts are visible: {} timed out in {} from {}.",
                  victims_.empty() ? fmt::format("{} timeout line(s)", timeouts_seen)
                                   : fmt::format("{} rank(s)", victims_.size()),
                  where, ClockTime(first_timeout_->time_ns));
  if (!list.empty()) {
    sentence += fmt::format(" {} never reached {}: {}.", Who(laggards, hosts),
                            by_group.size() > 1 ? "them" : "it", how);
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

int64_t Explainer::GroupSizeFromSizes(const LogEvent& event) {
  if (event.kind != LogEventKind::kWatchdogTimeout || event.numel_in <= 0 || event.numel_out <= 0) {
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

}  // namespace fr::root_cause_internal
