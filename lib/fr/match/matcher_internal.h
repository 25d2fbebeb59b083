// The matcher's own parts, shared by its three files and by nothing else (not installed, not
// included outside lib/fr/match): one group's matcher, GroupMatcher, whose walk over the group
// (the stream heads, stuck or in flight, where each member stands) is in matcher.cc, whose
// collective checks (same op, dtypes and shapes at each seq; who blocks a collective head) are in
// collective_matcher.cc and whose send/recv pairing is in p2p_matcher.cc.
//
//   GroupMatcher(trace, index, g, &found[g], &result.groups[g], &heads[g], rolled_out).Run();
#ifndef FR_MATCH_MATCHER_INTERNAL_H_
#define FR_MATCH_MATCHER_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fr/index/job_index.h"
#include "fr/match/matcher.h"
#include "fr/model/loaded_trace.h"

namespace fr::match_internal {

// `ranks` ascending, without repeats.
std::vector<int64_t> Sorted(std::vector<int64_t> ranks);

// What must agree across members for one collective, as exact keys per attribute, so that the
// first differing attribute names the failure class and members can be grouped by value. Built
// only when members disagree.
struct Signature {
  std::string op;
  std::string dtype;
  std::string size;
};

// One group's collective stream heads (each member's oldest unfinished collective), kept after
// the group is matched: MatchJob may take a young head for a wait after all (PromoteYoungHeads).
struct GroupHeads {
  std::map<int64_t, std::vector<size_t>> judged;  // seq -> members judged waiting there
  std::vector<std::pair<int64_t, size_t>> young;  // (seq, member): younger than their timeout
};

class GroupMatcher {
 public:
  // Findings go to `result` (which may hold other groups' too), the group's standing to `match`,
  // its collective heads to `heads`.
  // `rolled_out`: per loaded dump, the groups in which its oldest unfinished collective rolled
  // out of its ring buffer (RolledOutPending).
  GroupMatcher(const LoadedTrace& trace, const JobIndex& index, uint32_t group_index,
               MatchResult* result, GroupMatch* match, GroupHeads* heads,
               const std::vector<std::vector<uint32_t>>& rolled_out)
      : trace_(trace),
        rolled_out_(rolled_out),
        index_(index),
        first_pending_(index.first_unfinished_entry),
        group_(index.groups[group_index]),
        group_index_(group_index),
        result_(*result),
        match_(*match),
        heads_(*heads) {
    timing_known_ = TimingKnown();
  }

  void Run() {
    CompareIssuedCollectives();
    FindBlockedHeads();
    DescribeMemberStates();
  }

  // Judges collective `seq` again with the members now in `heads.judged[seq]`, replacing the
  // blocks and stuck ops its first judgement left, and describes the members again (where
  // they stand depends on the group's blocks).
  void JudgeAgain(int64_t seq) {
    std::erase_if(result_.blocks, [&](const Block& b) {
      return !b.is_p2p && b.group == group_index_ && b.seq == seq;
    });
    std::erase_if(result_.stuck, [&](const StuckOp& o) {
      return !o.is_p2p && o.group == group_index_ && o.seq == seq;
    });
    JudgeCollectiveHead(seq, heads_.judged.at(seq));
    match_.members.clear();
    DescribeMemberStates();
  }

 private:
  const RankDump* DumpOf(const GroupMember& member) const {
    return member.dump < 0 ? nullptr : &trace_.ranks[member.dump];
  }

  void NoteDivergence(int64_t seq) {
    if (match_.first_divergence == kUnknown || seq < match_.first_divergence) {
      match_.first_divergence = seq;
    }
  }

  // What member `x` has done about collective `seq`.
  enum class Progress { kMissing, kNotIssued, kScheduled, kStarted, kCompleted };

  // The group's walk (matcher.cc).

  bool TimingKnown() const;

  Progress ProgressAt(const GroupMember& member, int64_t seq, const CollectiveUnit** unit) const;

  // An op younger than its timeout at dump time is in flight, not stuck, unless it has waited
  // far beyond the rank's own rhythm (a hang in progress, dumped before any timeout fired).
  // `seq`: the op's collective seq in this group, or -1 for a send/recv.
  bool IsStuck(const GroupMember& member, const Entry& entry, int64_t seq);

  // True when the members disagreed about collective `seq` (matched before heads are judged).
  bool Desynced(int64_t seq) const;

  // Each member's stream head in this group: its oldest op that did not complete. Heads of the
  // same collective seq are judged together; p2p heads per op.
  void FindBlockedHeads();

  void AddBlock(bool is_p2p, int64_t seq, std::string op, std::vector<int64_t> waiters,
                std::vector<int64_t> blockers, BlockReason reason, int64_t time_created_ns);

  // Where each member stands: at the lowest blocked seq when the group is blocked, otherwise at
  // its last issued collective.
  void DescribeMemberStates();

  // A member that issued an op but has an older unfinished op (in any group) is blocked behind
  // that one: its GPU runs ops in order once the compute stream waits on them.
  bool BlockedBehindEarlierOp(const GroupMember& member, uint32_t entry) const;

  // Collectives (collective_matcher.cc).

  // Walks every seq that all loaded members' buffers still cover, comparing what they issued.
  void CompareIssuedCollectives();

  // A unit at the very start of a wrapped ring buffer may have lost its first ops (a coalesced
  // group cut in the middle): what is left of it is no evidence of what the rank issued.
  bool CutByRingBuffer(const GroupMember& member, const CollectiveUnit& unit) const;

  // An entry without a profiling_name does not say which op the rank issued: no evidence of a
  // desync either way.
  bool Unnamed(const GroupMember& member, const CollectiveUnit& unit) const;

  // Returns true when every member that issued `seq` agrees.
  bool CompareAtSeq(int64_t seq,
                    const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued);

  // all_to_all may split unevenly per rank, but what all members send must equal what they all
  // receive. Only checkable when every member's entry is in hand.
  bool CheckAllToAllTotals(int64_t seq,
                           const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued);

  // Splits the members that issued `seq` by the first attribute on which they differ and blames
  // the minority. Returns the minority ranks.
  std::vector<int64_t> ReportMismatch(
      int64_t seq, const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued,
      const std::vector<Signature>& signatures);

  // The attribute value that the members of other groups with this group's desc issued most at
  // `seq`, when one value has a strict majority of them.
  template <typename Attribute>
  bool SiblingMajority(int64_t seq, const Attribute& attribute, std::string* value) const;

  void JudgeCollectiveHead(int64_t seq, const std::vector<size_t>& waiting);

  // Sends and recvs (p2p_matcher.cc).

  // In a group that carries only sends and recvs (pipeline stages), where it stops is a p2p seq:
  // the report gives such groups' seqs as p2p_seq_ids, so that a group whose send/recv waits
  // for good counts as a group with a problem, as one whose collective does.
  void NoteP2pDivergence(int64_t p2p_seq);

  // Send/recv heads: each must meet the partner op on its (src, dst) channel, in FIFO order.
  void JudgeP2pHeads(const std::vector<std::pair<size_t, uint32_t>>& heads);

  const LoadedTrace& trace_;
  const std::vector<std::vector<uint32_t>>& rolled_out_;
  const JobIndex& index_;
  const std::vector<int64_t>& first_pending_;
  const JobGroup& group_;
  uint32_t group_index_;
  MatchResult& result_;
  GroupMatch& match_;
  GroupHeads& heads_;
  bool timing_known_ = false;
};

}  // namespace fr::match_internal

#endif  // FR_MATCH_MATCHER_INTERNAL_H_
