// The judging half of the verdict: index, match, wait-for graph, then findings and the verdict
// as values (judgment.h). Nothing here writes the report; report_writer.cc does, from the
// Judgment alone.
#include "fr/verdict/analyze.h"

#include <algorithm>
#include <cctype>
#include <chrono>
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

namespace fr {
namespace {

// Adds the time since the last lap to a field of AnalyzeTimings, when there is one to fill.
class StageClock {
 public:
  explicit StageClock(AnalyzeTimings* timings)
      : timings_(timings), last_(std::chrono::steady_clock::now()) {}
  void Lap(int64_t AnalyzeTimings::*stage) {
    if (timings_ == nullptr) return;
    auto now = std::chrono::steady_clock::now();
    timings_->*stage += std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count();
    last_ = now;
  }

 private:
  AnalyzeTimings* timings_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

namespace verdict_internal {

std::string GroupLabel(const JobGroup& group) {
  return group.desc.empty() ? fmt::format("group {}", group.name)
                            : fmt::format("group {} ({})", group.name, group.desc);
}

int ReasonPriority(BlockReason reason) {
  if (reason == BlockReason::kDumpUnreadable) return 6;
  if (IsRelay(reason)) return 5;
  if (IsMismatch(reason)) return 0;
  if (reason == BlockReason::kNotStarted) return 1;
  if (reason == BlockReason::kNoMatchingRecv || reason == BlockReason::kNoMatchingSend ||
      IsHeldByBatch(reason)) {
    return 2;
  }
  if (reason == BlockReason::kNeverIssued) return 3;
  return 4;  // dump missing
}

FailureClass ClassOfMismatch(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::kOp:
      return FailureClass::kOpMismatch;
    case MismatchKind::kDtype:
      return FailureClass::kDtypeMismatch;
    case MismatchKind::kSize:
      return FailureClass::kSizeMismatch;
  }
  return FailureClass::kOpMismatch;
}

Judgment Judge::Run() {
  Judgment& j = judgment_;
  StageClock clock(options_.timings);
  j.index = BuildJobIndex(trace_, options_.dump_time_ns, options_.jobs, options_.died_ranks);
  clock.Lap(&AnalyzeTimings::index_ns);
  order_.emplace(trace_, j.index);
  // Stragglers read only the trace and the index, which nothing changes from here on: they are
  // found on a second core while the groups are matched.
  std::future<std::vector<Straggler>> stragglers =
      std::async(std::launch::async, [this] { return FindStragglers(trace_, judgment_.index); });
  j.matched = MatchJob(trace_, j.index, options_.jobs);
  j.stragglers = stragglers.get();
  clock.Lap(&AnalyzeTimings::match_ns);
  LinkSinksWaitingInUnrecordedOps(trace_, *order_, &j.matched.blocks);
  WaitForGraph graph(j.matched.blocks);

  j.unreadable_ranks = UnreadableRanks();
  j.missing_ranks = MissingRanks();
  FindOpChanges();
  AddCulpritFindings(graph);
  AddStuckFindings();
  AddSilentMismatchFindings();
  AddStragglerFindings();
  SortFindings();
  AddDataLossFindings();
  JudgeVerdict(graph);
  j.blocked_ranks = graph.victims();
  order_.reset();  // it refers to the index, which moves out with the judgment
  clock.Lap(&AnalyzeTimings::verdict_ns);
  return std::move(judgment_);
}

std::vector<int64_t> Judge::UnreadableRanks() const {
  std::vector<int64_t> ranks;
  for (const RejectedFile& file : trace_.rejected) {
    if (file.rank != kUnknown && DumpOf(file.rank) == nullptr) ranks.push_back(file.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::vector<int64_t> Judge::MissingRanks() const {
  std::set<int64_t> missing(index().ranks_without_file.begin(), index().ranks_without_file.end());
  for (const RankConflict& conflict : trace_.conflicts) missing.insert(conflict.rank);
  return {missing.begin(), missing.end()};
}

std::vector<int64_t> Judge::AbsentRanks() const {
  std::vector<int64_t> absent = judgment_.missing_ranks;
  for (int64_t r : judgment_.unreadable_ranks) absent.push_back(r);
  std::sort(absent.begin(), absent.end());
  return absent;
}

std::string Judge::MissingAndUnreadable() const {
  std::vector<std::string> parts;
  const std::vector<int64_t>& missing = judgment_.missing_ranks;
  if (!missing.empty()) parts.push_back(fmt::format("missing: {}", FormatRankSet(missing)));
  if (!judgment_.unreadable_ranks.empty()) {
    parts.push_back(fmt::format("unreadable: {}", FormatRankSet(judgment_.unreadable_ranks)));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::optional<Entry> Judge::EntryAt(const JobGroup& group, int64_t rank, int64_t seq,
                                    const RankDump** dump_out) const {
  for (const GroupMember& member : group.members) {
    if (member.rank != rank || member.dump < 0) continue;
    auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                               [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
    if (it == member.units.end() || it->seq != seq) return std::nullopt;
    *dump_out = &trace_.ranks[member.dump];
    return (*dump_out)->entries[it->first_entry];
  }
  return std::nullopt;
}

void Judge::AddMajorityStack(const JobGroup& group, const std::vector<int64_t>& majority,
                             int64_t seq, JudgedFinding* finding) const {
  for (int64_t rank : majority) {
    const RankDump* dump = nullptr;
    std::optional<Entry> entry = EntryAt(group, rank, seq, &dump);
    if (!entry.has_value() || entry->stack == kNoStack) continue;
    finding->majority_rank = rank;
    finding->majority_stack = StackOf(*dump, *entry);
    return;
  }
}

bool Judge::SitsIn(int64_t rank, const Block& block) const {
  if (block.is_p2p || block.group == kNoGroupIndex) return false;
  int64_t d = order_->DumpIndexOf(rank);
  if (d < 0) return false;
  int64_t first = index().first_unfinished_entry[d];
  if (first < 0) return false;
  const Entry& entry = trace_.ranks[d].entries[first];
  if (IsPointToPoint(entry.op) || entry.is_p2p) return false;
  return index().group_of_local[d][entry.group] == block.group &&
         entry.collective_seq_id == block.seq;
}

bool Judge::InStuckOp(int64_t rank) const {
  for (const StuckOp& stuck : judgment_.matched.stuck) {
    if (std::binary_search(stuck.ranks.begin(), stuck.ranks.end(), rank)) return true;
  }
  return false;
}

JudgedFinding& Judge::AddFinding(FailureClass failure_class) {
  JudgedFinding& finding = judgment_.findings.emplace_back();
  finding.failure_class = failure_class;
  return finding;
}

}  // namespace verdict_internal

std::string DescribeEntry(const RankDump& dump, const Entry& entry) {
  const ProcessGroup& group = dump.groups[entry.group];
  std::string seq = IsPointToPoint(entry.op) ? fmt::format("p2p #{}", entry.p2p_seq_id)
                                             : fmt::format("#{}", entry.collective_seq_id);
  std::string desc(dump.strings.view(group.desc));
  // Gloo never records completion: a retired op only says that it ended.
  std::string state(EntryStateName(entry.state));
  if (entry.retired && entry.state != EntryState::kCompleted) state += ", retired";
  return fmt::format("{} {} in group {}{} ({})", dump.strings.view(entry.op_name), seq,
                     dump.strings.view(group.name), desc.empty() ? "" : " " + desc, state);
}

namespace {

using verdict_internal::Judge;

}  // namespace

Judgment JudgeDumps(const LoadedTrace& trace, const AnalyzeOptions& options) {
  return Judge(trace, options).Run();
}

report::Report AnalyzeInto(const LoadedTrace& trace, const AnalyzeOptions& options,
                           Judgment* judgment) {
  AnalyzeOptions with_gone = options;
  if (options.stacks != nullptr) {
    // A worker that refuses connections is a process that is gone: its peers' waits end there.
    std::vector<int64_t> gone = RanksWhoseWorkerIsGone(*options.stacks);
    with_gone.died_ranks.insert(with_gone.died_ranks.end(), gone.begin(), gone.end());
    std::sort(with_gone.died_ranks.begin(), with_gone.died_ranks.end());
    with_gone.died_ranks.erase(
        std::unique(with_gone.died_ranks.begin(), with_gone.died_ranks.end()),
        with_gone.died_ranks.end());
  }
  *judgment = JudgeDumps(trace, with_gone);
  // The live stacks first among the supporting evidence: they may decide the verdict.
  if (options.stacks != nullptr) {
    JoinStackEvidence(*options.stacks, options.stacks_stalled_ns, !trace.ranks.empty(), judgment);
  }
  StageClock clock(options.timings);
  report::Report report = WriteDumpReport(trace, with_gone, *judgment);
  clock.Lap(&AnalyzeTimings::report_ns);
  if (options.monitors != nullptr) {
    // Supporting evidence from the hosts' side, after the dumps' own findings: it says what the
    // GPUs and processes were doing, not which rank others waited for.
    for (const MonitorFinding& seen : FindMonitorAnomalies(*options.monitors)) {
      JudgedFinding& finding = judgment->findings.emplace_back();
      finding.topic = FindingTopic::kMonitor;
      finding.monitor_kind = seen.kind;
      finding.ranks.assign(seen.ranks.begin(), seen.ranks.end());
      finding.confidence = Confidence::kMedium;
      finding.summary = ValidUtf8(seen.summary);
      for (const std::string& line : seen.evidence) finding.evidence.push_back(ValidUtf8(line));
      WriteFinding(finding, judgment->index, report.add_findings());
    }
  }
  return report;
}

report::Report Analyze(const LoadedTrace& trace, const AnalyzeOptions& options) {
  return Diagnose(trace, options).report;
}

Diagnosis Diagnose(const LoadedTrace& trace, const AnalyzeOptions& options) {
  Judgment judgment;
  Diagnosis diagnosis;
  diagnosis.report = AnalyzeInto(trace, options, &judgment);
  diagnosis.failed = IsFailureClass(judgment.verdict.failure_class);
  return diagnosis;
}

}  // namespace fr
