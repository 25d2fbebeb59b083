// Inside the dumps' judgment: the judge that builds a Judgment (analyze.cc: the run and what
// it reads; judge_findings.cc: the findings, culprits first; judge_verdict.cc: the headline
// verdict and its wait chains). Not part of the API.
#ifndef FR_VERDICT_JUDGE_H_
#define FR_VERDICT_JUDGE_H_

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
#include "fr/verdict/analyze.h"
#include "fr/verdict/failure_class.h"
#include "fr/verdict/judgment.h"
#include "fr/verdict/next_actions.h"
#include "fr/verdict/program_order.h"
#include "fr/verdict/report_writer.h"
#include "fr/verdict/stack_evidence.h"
#include "fr/verdict/stragglers.h"
#include "fr/verdict/unrecorded_p2p.h"
#include "fr/waitfor/wait_for_graph.h"

namespace fr::verdict_internal {

inline constexpr int kMaxStackFrames = 12;
inline constexpr int kMaxChains = 3;

std::string GroupLabel(const JobGroup& group);

// Which cause names the root best when a culprit blocks others for several reasons: a desync
// first, then a GPU that never started, a p2p partner, an op never issued, a missing dump; relays
// and unreadable dumps last (they show no cause of their own).
int ReasonPriority(BlockReason reason);

FailureClass ClassOfMismatch(MismatchKind kind);

class Judge {
 public:
  Judge(const LoadedTrace& trace, const AnalyzeOptions& options)
      : trace_(trace), options_(options) {}

  Judgment Run();

 private:
  const RankDump* DumpOf(int64_t rank) const { return order_->DumpOf(rank); }
  const JobIndex& index() const { return judgment_.index; }
  const std::vector<Block>& blocks() const { return judgment_.matched.blocks; }

  // Ranks whose only files could not be read (ascending, distinct): not missing, unreadable.
  std::vector<int64_t> UnreadableRanks() const;

  // Ranks without a usable file: missing, or with several conflicting ones (ascending).
  std::vector<int64_t> MissingRanks() const;

  // Ranks without a readable dump: missing, or whose files could not be read.
  std::vector<int64_t> AbsentRanks() const;

  // "missing: 8-15", "missing: 8-15; unreadable: 3", "unreadable: 3".
  std::string MissingAndUnreadable() const;

  std::vector<std::string> StackOf(const RankDump& dump, const Entry& entry) const;

  // The entry `rank` recorded as collective `seq` of `group`, or nullopt.
  std::optional<Entry> EntryAt(const JobGroup& group, int64_t rank, int64_t seq,
                               const RankDump** dump_out) const;

  // The stack of `rank` at collective `seq` of `group`, when it recorded one.
  void AddStackAt(const JobGroup& group, int64_t rank, int64_t seq, JudgedFinding* finding) const;

  // The stack of the lowest majority member with one at collective `seq`, for comparison.
  void AddMajorityStack(const JobGroup& group, const std::vector<int64_t>& majority, int64_t seq,
                        JudgedFinding* finding) const;

  // True when `block` is the collective that `rank`'s oldest unfinished op belongs to: the rank
  // issued it and is still in it.
  bool SitsIn(int64_t rank, const Block& block) const;

  bool InStuckOp(int64_t rank) const;

  // Judgment::op_changes: each member's newest op in each group that differs from what the
  // group's siblings (same description) issued at the same seq, or from its own previous op of
  // that kind in the group, and that no other member's dump shows there: a size or dtype only it
  // used, which a peer that then stopped (Gloo aborts the rank that receives more than its op
  // holds) cannot show.
  void FindOpChanges();

  JudgedFinding& AddFinding(FailureClass failure_class);

  // One finding per culprit set blocked for the same reason at the same op.
  void AddCulpritFindings(const WaitForGraph& graph);

  void AddCulpritFinding(const Block& block, std::vector<int64_t>* culprit_ranks);

  // Ranks that wait on each other with every op queued behind another pending op of their own:
  // typically sends and recvs posted in an order the peers do not mirror (a skipped or extra p2p
  // op shifts the FIFO pairing). The dumps cannot say which side deviated.
  void AddDeadlockFinding(const std::vector<uint32_t>& cycle, const std::vector<int64_t>& ranks);

  static std::vector<int64_t> SortedCopy(std::vector<int64_t> ranks) {
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  }

  // In a p2p deadlock, the side that skipped or added an op is the one whose sends/recvs with
  // its peer stopped repeating their own pattern at or before where it waits; its peer's pattern
  // holds. `waits`: the blocks of the ranks waiting on each other (one waiter and one blocker
  // each). When exactly one of those ranks broke its rhythm, it becomes the finding's rank, its
  // place the finding's op, and the sentence that says so is returned; otherwise "" and the
  // finding is left alone.
  std::string DeviatedFromOwnRhythm(const std::vector<uint32_t>& waits, JudgedFinding* finding);

  // The blocks in which ranks of `ranks` wait for each other in `group`, one per waiter.
  std::vector<uint32_t> MutualP2pWaits(const std::vector<int64_t>& ranks, uint32_t group) const;

  void AddStuckFindings();

  // A desync that did not hang (or that hangs outside the recorded window) is still a failure.
  void AddSilentMismatchFindings();

  // Ranks consistently last to enqueue (stragglers.h), as findings with their evidence.
  void AddStragglerFindings();

  void SortFindings();

  void AddDataLossFindings();

  bool FindingSelected(const JudgedFinding& finding) const;

  void JudgeVerdict(const WaitForGraph& graph);

  // Every entry came from Gloo, which records no start or completion events at all.
  bool OnlyGloo() const;

  bool TimingSeen() const;

  // Entries rolled out of some ring buffer: pg_status knows more than the entries.
  bool BufferWrapped() const;

  std::vector<std::vector<WaitHop>> Chains(const WaitForGraph& graph,
                                           const std::set<int64_t>& culprits) const;

  const LoadedTrace& trace_;
  const AnalyzeOptions& options_;
  Judgment judgment_;
  // Over judgment_.index, while judging.
  std::optional<ProgramOrder> order_;
  // Ranks others wait for whose file exists but could not be read, ascending.
  std::vector<int64_t> unreadable_sinks_;
};

}  // namespace fr::verdict_internal

#endif  // FR_VERDICT_JUDGE_H_
