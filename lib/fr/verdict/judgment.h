// The dumps' verdict as values: what the analysis decided (failure class, culprits, confidence,
// findings with their evidence) before any of it becomes a report. The analysis decides only on
// these types; report_writer.h alone turns them into the report proto, so rewording or
// re-encoding the output never changes a decision.
//
//   Judgment judgment = JudgeDumps(trace, options);
//   if (IsFailureClass(judgment.verdict.failure_class)) ...
//   report::Report report = WriteDumpReport(trace, options, judgment);
#ifndef FR_VERDICT_JUDGMENT_H_
#define FR_VERDICT_JUDGMENT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fr/base/confidence.h"
#include "fr/index/job_index.h"
#include "fr/match/matcher.h"
#include "fr/model/loaded_trace.h"
#include "fr/report.pb.h"
#include "fr/stacks/python_stacks.h"
#include "fr/verdict/failure_class.h"
#include "fr/verdict/next_actions.h"
#include "fr/verdict/stragglers.h"
#include "fr/verdict/unrecorded_p2p.h"
#include "fr/waitfor/wait_for_graph.h"

namespace fr {

struct AnalyzeOptions;

// What a finding is about: a failure class of the contract, or evidence that names none.
enum class FindingTopic : uint8_t {
  kFailure,    // `failure_class` says which
  kStraggler,  // a rank consistently last to enqueue ("straggler")
  kDataLoss,   // files that could not be used ("data_loss")
  kMonitor,    // what the hosts' monitor snapshots show (`monitor_kind`)
  kStacks,     // what the live Python stacks show (`stack_kind`)
};

// What a finding from the live stacks is about.
enum class StackFindingKind : uint8_t {
  kWorkerGone,            // its debug-server worker refused the connection
  kWorkerSilent,          // its worker did not answer in time
  kOutsideCommunication,  // its main thread is outside communication while peers wait
};

// A rank whose newest op in a group differs from what the dumps hold to compare it with: the
// same op of every sibling group (same description) at the same seq, or its own previous op of
// that kind in the group; and no other member's dump shows the same op there. Where a peer left
// no dump, its report of a mismatch (in the logs) points at such a rank; the dumps alone cannot
// compare the op's members.
struct OpChange {
  int64_t rank = kUnknown;
  uint32_t group = kNoGroupIndex;  // index into JobIndex::groups
  int64_t seq = -1;
  std::string op;
  FailureClass kind = FailureClass::kSizeMismatch;  // or kDtypeMismatch
  bool unlike_siblings = false;
  bool unlike_own_previous = false;
  // Its own previous op of that kind had the siblings' signature: the difference is new here.
  bool previous_as_siblings = false;
  std::vector<std::string> evidence;
};

// One problem found, with what it rests on. Sentences (summary, evidence, stack frames) are
// for people and never read back by the analysis.
struct JudgedFinding {
  FindingTopic topic = FindingTopic::kFailure;
  FailureClass failure_class = FailureClass::kNone;  // kFailure only
  std::string monitor_kind;                          // kMonitor only: MonitorFinding::kind
  StackFindingKind stack_kind = StackFindingKind::kOutsideCommunication;  // kStacks only
  std::vector<int64_t> ranks;      // culprits, or the ranks it concerns
  uint32_t group = kNoGroupIndex;  // index into JobIndex::groups, or none
  int64_t seq = -1;                // collective (or p2p) seq; -1: none
  std::string op;
  Confidence confidence = Confidence::kHigh;
  std::string summary;
  std::vector<std::string> evidence;
  std::vector<std::string> stack;  // the culprit's frames, innermost first
  std::string stack_at;            // the op that stack was recorded at
  std::optional<int64_t> majority_rank;
  std::vector<std::string> majority_stack;
  // When its cause happened (ns), which orders findings; kUnknown: after every known one.
  int64_t cause_time_ns = kUnknown;

  // A finding whose class names culprit ranks (NamesCulprits).
  bool NamesCulprits() const {
    return topic == FindingTopic::kFailure && fr::NamesCulprits(failure_class);
  }
};

// The verdict of the dumps: the headline of the report.
struct DumpVerdict {
  FailureClass failure_class = FailureClass::kNone;
  std::vector<int64_t> culprits;  // ascending
  std::vector<int64_t> victims;   // ascending, never a culprit
  // The finding the headline comes from (index into Judgment::findings), or -1: its group, seq
  // and op are the verdict's.
  int lead = -1;
  Confidence confidence = Confidence::kHigh;
  std::string summary;
  std::vector<std::string> next_actions;
  // What next_actions were made from: the join with the logs makes them again when the logs
  // know more (why the culprit stopped).
  NextActionContext next_action_context;
  // The longest wait chains (waiter -> ... -> culprit), hops into Judgment::matched.blocks.
  std::vector<std::vector<WaitHop>> chains;
};

// Everything the report of the dumps is written from.
struct Judgment {
  JobIndex index;
  // With the waits inferred where send/recv go unrecorded among its blocks.
  MatchResult matched;
  std::vector<Straggler> stragglers;
  // Earliest cause first, data loss last; AnalyzeInto appends the monitor findings.
  std::vector<JudgedFinding> findings;
  DumpVerdict verdict;
  // Every rank the wait-for graph finds blocked by another, ascending (a culprit of a desync
  // may be one too: DumpVerdict::victims leaves those out).
  std::vector<int64_t> blocked_ranks;
  // Each rank's newest op per group that differs from its siblings' or its own before, by group
  // and rank (what a peer's report of a mismatch, in the logs, points at).
  std::vector<OpChange> op_changes;
  // Ranks without a usable file: missing, or with several conflicting ones (ascending).
  std::vector<int64_t> missing_ranks;
  // Ranks without a readable dump whose file exists (unreadable, not missing), ascending.
  std::vector<int64_t> unreadable_ranks;
  // Findings per kind beyond AnalyzeOptions::max_findings_per_kind, counted, not listed; keyed
  // by the finding kind's contract name.
  std::map<std::string, int64_t> findings_not_listed;
  // When the job's first recorded op was created (ns, that rank's clock): the earliest record 0
  // of a dump whose buffer never wrapped; kUnknown when every buffer wrapped or nothing is timed.
  int64_t first_record_ns = kUnknown;
  // Per rank with a dump, when its newest completed op completed (the watchdog's time, else its
  // creation; ns on that rank's clock): how long the rank made progress. Ranks with no
  // completed timed op are absent.
  std::map<int64_t, int64_t> last_completed_ns;
  // The live stacks judged (stack_evidence.h), when there were any: their groups go into the
  // report as they are.
  std::optional<StackJudgement> stacks;
};

// "all_reduce #12 in group 0 DP (scheduled, retired)": one entry as evidence and the ranks'
// last ops say it.
std::string DescribeEntry(const RankDump& dump, const Entry& entry);

// The dumps judged: index, matching, wait-for graph, findings, verdict.
Judgment JudgeDumps(const LoadedTrace& trace, const AnalyzeOptions& options);

// Analyze (analyze.h) with the Judgment it wrote the report from: the dumps judged and written,
// then the live stacks joined (stack_evidence.h, which may decide the verdict when the dumps
// found no failure), then the monitor snapshots' findings (added to `judgment` too).
report::Report AnalyzeInto(const LoadedTrace& trace, const AnalyzeOptions& options,
                           Judgment* judgment);

}  // namespace fr

#endif  // FR_VERDICT_JUDGMENT_H_
