// Matching across ranks, per process group: did every member issue collective #s with the same
// op, shapes and dtypes, did each send meet its recv, and where is each member blocked?
//
//   JobIndex index = BuildJobIndex(trace);
//   MatchResult result = MatchJob(trace, index);
//   for (const Block& block : result.blocks) { ... block.waiters wait for block.blockers ... }
//
// Linear in the number of entries: each group is walked once with one cursor per member, and
// blocked heads are compared against per-member progress counters, never by rescanning ranks.
#ifndef FR_MATCH_MATCHER_H_
#define FR_MATCH_MATCHER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/base/confidence.h"
#include "fr/index/job_index.h"
#include "fr/model/loaded_trace.h"

namespace fr {

// What differs between members at one collective.
enum class MismatchKind : uint8_t { kOp, kDtype, kSize };
std::string_view MismatchKindName(MismatchKind kind);  // "op_mismatch", "dtype_mismatch", ...

struct Mismatch {
  uint32_t group = 0;
  int64_t seq = kUnknown;
  MismatchKind kind = MismatchKind::kOp;
  std::vector<int64_t> minority;  // ranks that differ from the majority, ascending
  std::vector<int64_t> majority;
  bool tie = false;                   // no strict majority: the minority is a guess
  bool completed = false;             // the collective completed anyway (silent desync)
  std::vector<std::string> evidence;  // "rank 3: all_reduce [[4, 4]] Float", one per variant
};

// Why waiters cannot go on. Verdict logic works on these values; the words come only when a
// report is rendered (BlockReasonText), so rewording a sentence never changes a verdict.
enum class BlockReason : uint8_t {
  kNeverIssued,      // the blockers never issued the op the waiters are in
  kDumpMissing,      // the blockers left no dump file
  kDumpUnreadable,   // the blockers' dump exists but could not be read: no evidence either way
  kNotStarted,       // the blockers issued it but their GPU never started it (needs timing)
  kNoMatchingRecv,   // a send whose recv the peer never posted
  kNoMatchingSend,   // a recv whose send the peer never posted
  kOpMismatch,       // the blockers issued a different op at the same seq
  kSizeMismatch,     // ... different shapes
  kDtypeMismatch,    // ... different dtypes
  kBehindEarlierOp,  // the blockers are themselves stuck in an earlier op (a relay)
  kRecvHeldByBatch,  // the matching recv sits in a batch that cannot complete
  kSendHeldByBatch,  // the matching send sits in a batch that cannot complete
  kUnrecordedP2p,    // inferred: blocked in a send/recv the recorder does not record (Gloo)
};
// The words of the report contract (WaitEdge.reason): "never issued", "dump missing", ...
std::string_view BlockReasonText(BlockReason reason);
BlockReason BlockReasonOf(MismatchKind kind);
inline bool IsMismatch(BlockReason r) {
  return r == BlockReason::kOpMismatch || r == BlockReason::kSizeMismatch ||
         r == BlockReason::kDtypeMismatch;
}
// A wait that only passes another wait on: the blockers are not where it started.
inline bool IsRelay(BlockReason r) {
  return r == BlockReason::kBehindEarlierOp || r == BlockReason::kUnrecordedP2p;
}
inline bool IsHeldByBatch(BlockReason r) {
  return r == BlockReason::kRecvHeldByBatch || r == BlockReason::kSendHeldByBatch;
}

// Waiters are blocked in an op (their stream head in `group`) that cannot complete until the
// blockers do something.
struct Block {
  uint32_t group = 0;
  bool is_p2p = false;
  int64_t seq = kUnknown;         // collective seq, or the waiter's p2p_seq_id
  std::string op;                 // op name of the waiters' entry, e.g. "all_reduce", "send"
  std::vector<int64_t> waiters;   // ascending
  std::vector<int64_t> blockers;  // ascending
  BlockReason reason = BlockReason::kNeverIssued;
  int64_t time_created_ns = kUnknown;  // earliest waiter's entry
  // Held by batch only: the blockers' batch waits for a rank other than the waiters, so the
  // blockers relay a wait that starts elsewhere.
  bool held_by_other_rank = false;
};
// A wait the blockers only pass on, for choosing where a culprit's fault started.
inline bool PassesWaitOn(const Block& block) {
  return block.reason == BlockReason::kBehindEarlierOp || block.held_by_other_rank;
}

// Every member issued the op and none completed it: the transport, NCCL or the network.
struct StuckOp {
  uint32_t group = 0;
  bool is_p2p = false;
  int64_t seq = kUnknown;
  std::string op;
  std::vector<int64_t> ranks;
  bool all_started = false;  // with timing: every member's GPU started it
  bool timing_known = false;
  int64_t time_created_ns = kUnknown;
};

// Where a member stands in one collective of a group.
enum class MemberProgress : uint8_t {
  kScheduled,
  kStarted,
  kCompleted,
  kNotIssued,
  kDumpMissing,
  kDumpUnreadable,
};
// "scheduled", "started", "completed", "not issued", "dump missing", "dump unreadable".
std::string_view MemberProgressName(MemberProgress progress);

// Where a member stands in a group, for the report's grouped rank states.
struct MemberState {
  int64_t rank = kUnknown;
  MemberProgress state = MemberProgress::kScheduled;
  std::string op;
  int64_t seq = kUnknown;
};

struct GroupMatch {
  int64_t window_first = kUnknown;  // first seq every loaded member's buffer covers
  int64_t window_last = kUnknown;   // last seq any member issued
  int64_t first_divergence = kUnknown;
  int64_t collectives_matched = 0;
  std::vector<MemberState> members;  // one per member, in group order
};

struct MatchResult {
  std::vector<GroupMatch> groups;  // parallel to JobIndex::groups
  std::vector<Mismatch> mismatches;
  std::vector<Block> blocks;
  std::vector<StuckOp> stuck;
  // Members with a pending op younger than its timeout that no stuck rank waits for: in
  // flight, not stuck. (A young op of a rank that stuck ranks wait for is where it waits.)
  int64_t in_flight_ops = 0;
  // Pending ops judged stuck although younger than their timeout, because their wait was far
  // beyond the rank's own rhythm (a hang in progress, dumped before any timeout fired); the
  // longest such wait and that rank's median gap between ops. Ops stuck past their timeout or
  // ended in an error are counted in `ops_known_stuck`.
  int64_t stalled_beyond_rhythm_ops = 0;
  int64_t longest_stall_ns = 0;
  int64_t stall_median_gap_ns = 0;
  int64_t ops_known_stuck = 0;
  int64_t collectives_checked = 0;
  int64_t p2p_ops_checked = 0;
  // When the dumps were taken (see dump_time.h): the job's time, its source and how sure it is.
  int64_t dump_time_ns = kUnknown;
  std::string dump_time_source;
  Confidence dump_time_confidence = Confidence::kLow;
};

// Ages are judged against the index's dump times (BuildJobIndex's `dump_time_ns`).
//
// Lifetimes: the result holds values and indices only (ranks, seqs, `group` indexes
// JobIndex::groups, GroupMatch i is JobIndex::groups[i]), never pointers into `trace` or `index`,
// so it may outlive both. While matching, pointers to the index's CollectiveUnits and the
// trace's entries are kept only for the duration of the call: both are read-only inputs here.
// Groups are matched on `jobs` threads (0: one per core); the result is the same on any number.
MatchResult MatchJob(const LoadedTrace& trace, const JobIndex& index, int jobs = 0);

}  // namespace fr

#endif  // FR_MATCH_MATCHER_H_
