#include "fr/verdict/stack_evidence.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/verdict/failure_class.h"

namespace fr {
namespace {

std::vector<int64_t> Wide(const std::vector<int64_t>& ranks) {
  return std::vector<int64_t>(ranks.begin(), ranks.end());
}

std::string Seconds(int64_t ns) { return fmt::format("{:.0f} s", static_cast<double>(ns) / 1e9); }

// "rank 2's main thread is in inject (tests/torch/torchrun_job.py:236)".
std::string HeldSentence(const StackJudgement& judged) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < judged.held_by.size(); ++i) {
    parts.push_back(
        fmt::format("rank {} at {}", judged.held_by[i], DescribeFrame(judged.held_at[i])));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string HowLong(const StackJudgement& judged) {
  if (judged.unchanged_snapshots < 2) return "in one snapshot";
  if (judged.unchanged_ns < 0) {
    return fmt::format("unchanged over {} snapshots", judged.unchanged_snapshots);
  }
  return fmt::format("unchanged over {} snapshots spanning {}", judged.unchanged_snapshots,
                     Seconds(judged.unchanged_ns));
}

}  // namespace

std::vector<int64_t> RanksWhoseWorkerIsGone(const StackSnapshots& stacks) {
  std::vector<int64_t> gone;
  if (stacks.snapshots.empty()) return gone;
  for (const RankStacks& rank : stacks.snapshots.back().ranks) {
    if (rank.threads.empty() && rank.answer == RankAnswer::kRefused) gone.push_back(rank.rank);
  }
  return gone;
}

bool JoinStackEvidence(const StackSnapshots& stacks, int64_t stalled_ns, bool dumps_loaded,
                       Judgment* judgment) {
  StackJudgement judged = JudgeStacks(stacks);
  if (judged.snapshots == 0) return false;
  DumpVerdict& verdict = judgment->verdict;
  bool dumps_found_failure = IsFailureClass(verdict.failure_class);
  std::set<int64_t> culprits(verdict.culprits.begin(), verdict.culprits.end());

  // Workers that did not answer: gone (connection refused) or silent (no answer in time).
  std::vector<int64_t> gone = RanksWhoseWorkerIsGone(stacks);
  std::vector<int64_t> silent;
  for (const RankNoAnswer& rank : judged.no_answer) {
    if (rank.answer == RankAnswer::kTimedOut) silent.push_back(rank.rank);
  }
  // Every worker gone is a job that ended (or was torn down), not one rank that holds the rest.
  bool all_gone = !gone.empty() && gone.size() == stacks.snapshots.back().ranks.size();
  for (bool refused : {true, false}) {
    const std::vector<int64_t>& ranks = refused ? gone : silent;
    if (ranks.empty()) continue;
    JudgedFinding& finding = judgment->findings.emplace_back();
    finding.topic = FindingTopic::kStacks;
    finding.stack_kind = refused ? StackFindingKind::kWorkerGone : StackFindingKind::kWorkerSilent;
    finding.ranks = ranks;
    finding.confidence = refused ? Confidence::kHigh : Confidence::kMedium;
    std::string waits = judged.waiting.empty()
                            ? std::string()
                            : fmt::format(" while rank(s) {} wait in {}",
                                          FormatRankSet(Wide(judged.waiting)), judged.waiting_in);
    finding.summary = ValidUtf8(
        refused
            ? fmt::format("The debug-server worker of rank(s) {} refused the connection: the "
                          "process is gone{}.",
                          FormatRankSet(ranks), all_gone ? " (every rank's: the job ended)" : waits)
            : fmt::format("The debug-server worker of rank(s) {} did not answer in time{}: the "
                          "process may hold the GIL in native code, be stopped (SIGSTOP, a "
                          "debugger) or be swapping.",
                          FormatRankSet(ranks), waits));
    for (const RankNoAnswer& rank : judged.no_answer) {
      if (std::find(ranks.begin(), ranks.end(), rank.rank) == ranks.end()) continue;
      finding.evidence.push_back(ValidUtf8(fmt::format("rank {}: {}", rank.rank, rank.error)));
    }
    // A silent worker is the culprit only when the others visibly wait and none of them is
    // outside communication (then that one is the better answer).
    bool decides = refused ? !all_gone : !judged.waiting.empty() && judged.held_by.empty();
    if (dumps_found_failure || !decides) continue;
    verdict.failure_class = FailureClass::kMissingParticipant;
    verdict.culprits = ranks;
    verdict.victims = judged.waiting;
    verdict.confidence =
        refused && !judged.waiting.empty() ? Confidence::kHigh : Confidence::kMedium;
    verdict.summary = finding.summary;
    verdict.next_actions = {
        refused ? fmt::format("Find why rank(s) {} died: the launcher's log (exit code, signal), "
                              "the host's kernel log (OOM killer, Xid) and its last lines of "
                              "output.",
                              FormatRankSet(ranks))
                : fmt::format("Look at rank(s) {}'s process on its host: its state in `ps` (T: "
                              "stopped, D: in I/O), `py-spy dump --native --pid PID` for the "
                              "native frame that holds the GIL.",
                              FormatRankSet(ranks))};
    judgment->stacks = std::move(judged);
    return true;
  }

  if (judged.held_by.empty()) {
    judgment->stacks = std::move(judged);
    return false;
  }
  // In work every rank did and left (a checkpoint every rank writes, rank 0 the longest), the
  // held rank is stuck only once it has stayed twice as long as the slowest peer took.
  int64_t needed_ns = std::max(stalled_ns, 2 * judged.peers_in_frame_ns);
  bool stalled =
      !judged.moving && judged.unchanged_snapshots >= 2 && judged.unchanged_ns >= needed_ns;
  JudgedFinding& finding = judgment->findings.emplace_back();
  finding.topic = FindingTopic::kStacks;
  finding.stack_kind = StackFindingKind::kOutsideCommunication;
  finding.ranks = judged.held_by;
  bool sure = judged.unchanged_ns >= std::max(needed_ns, kSureSpanNs);
  finding.confidence =
      stalled ? (sure ? Confidence::kHigh : Confidence::kMedium) : Confidence::kLow;
  std::string held = HeldSentence(judged);
  std::string waiting = FormatRankSet(Wide(judged.waiting));
  if (judged.moving) {
    finding.summary = ValidUtf8(fmt::format(
        "Outside communication while rank(s) {} wait in {}: {}; but its stack changed since the "
        "snapshot before, so it is moving (slow), not stuck.",
        waiting, judged.waiting_in, held));
  } else if (!stalled && judged.peers_in_frame_ns >= 0) {
    finding.summary = ValidUtf8(fmt::format(
        "Outside communication while rank(s) {} wait in {}: {} ({}); the others were in the same "
        "frame before and left it (the slowest after {}): work every rank does, slower here, "
        "not yet a hang.",
        waiting, judged.waiting_in, held, HowLong(judged), Seconds(judged.peers_in_frame_ns)));
  } else {
    finding.summary =
        ValidUtf8(fmt::format("Outside communication while rank(s) {} wait in {}: {} ({}).",
                              waiting, judged.waiting_in, held, HowLong(judged)));
  }
  const PythonThread* main = nullptr;
  for (const RankStacks& rank : stacks.snapshots.back().ranks) {
    if (rank.rank == judged.held_by.front()) main = MainThread(rank);
  }
  if (main != nullptr) {
    for (const PythonFrame& frame : main->frames) {
      finding.stack.push_back(ValidUtf8(DescribeFrame(frame)));
    }
    finding.stack_at = ValidUtf8(fmt::format("live stack, {}", judged.newest_path));
  }

  std::set<int64_t> held_set(judged.held_by.begin(), judged.held_by.end());
  bool decided = false;
  if (dumps_found_failure && !finding.stack.empty()) {
    // A culprit the dumps name and the stacks hold outside communication: its dump's stack is
    // where its last op was issued, long before it stopped; the live stack is where it is.
    // A mismatch finding keeps its stack at the collective it issued differently.
    std::vector<std::string> live = finding.stack;
    std::string live_at = ValidUtf8(
        fmt::format("the newest live snapshot, {} ({})", judged.newest_path, HowLong(judged)));
    for (JudgedFinding& dump_finding : judgment->findings) {
      if (dump_finding.topic == FindingTopic::kStacks || dump_finding.ranks.empty() ||
          dump_finding.ranks.front() != judged.held_by.front() ||
          !dump_finding.majority_stack.empty() ||
          (!dump_finding.stack_at.empty() && !dump_finding.stack_at.starts_with("its last op"))) {
        continue;
      }
      dump_finding.stack = live;
      dump_finding.stack_at = live_at;
    }
  }
  if (dumps_found_failure) {
    if (culprits == held_set) {
      verdict.summary = ValidUtf8(
          fmt::format("{} The live stacks agree: {}, {}.", verdict.summary, held, HowLong(judged)));
    } else if (stalled) {
      verdict.summary =
          ValidUtf8(fmt::format("{} The live stacks disagree: {}, {}, while the others wait in {}.",
                                verdict.summary, held, HowLong(judged), judged.waiting_in));
    }
  } else if (stalled) {
    // One snapshot, or a moving rank, is a finding, not a verdict.
    verdict.failure_class = FailureClass::kMissingParticipant;
    verdict.culprits = judged.held_by;
    verdict.victims = judged.waiting;
    verdict.confidence = finding.confidence;
    verdict.summary = ValidUtf8(fmt::format(
        "Rank(s) {} stopped outside communication while rank(s) {} wait in {}: {}, {}. {}",
        FormatRankSet(Wide(judged.held_by)), waiting, judged.waiting_in, held, HowLong(judged),
        dumps_loaded
            ? "The dumps show no op past its timeout yet; the stacks show where the job stopped."
            : "No flight-recorder dump was read; the stacks show where the job stopped."));
    verdict.next_actions = {
        ValidUtf8(fmt::format(
            "Read rank {}'s frame {}: it is waiting on something outside communication (data "
            "loading, I/O, a lock, a sleep) or took a branch that skips the collective its peers "
            "are in.",
            judged.held_by.front(), DescribeFrame(judged.held_at.front()))),
        "Dump every thread of that process with py-spy (`py-spy dump --native --pid PID`) to see "
        "what its native code waits on."};
    decided = true;
  }
  judgment->stacks = std::move(judged);
  return decided;
}

}  // namespace fr
