// Matching a job: each group's walk over its members' stream heads (stuck or in flight, where
// each member stands), the groups matched in parallel and joined, young heads that stuck ranks
// wait for taken as waits after all, and the words of the result's enums.
#include "fr/match/matcher.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "fr/base/parallel_for.h"
#include "fr/match/matcher_internal.h"

namespace fr {
namespace match_internal {
namespace {

constexpr int64_t kDefaultTimeoutMs = 600000;

}  // namespace

std::vector<int64_t> Sorted(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

bool GroupMatcher::TimingKnown() const {
  for (const GroupMember& member : group_.members) {
    const RankDump* dump = DumpOf(member);
    if (dump == nullptr) continue;
    const ProcessGroup& local = dump->groups[member.local_group];
    if (local.has_status && local.status.last_started_collective >= 0) return true;
    for (const CollectiveUnit& unit : member.units) {
      if (unit.state == EntryState::kStarted) return true;
      if (dump->entries[unit.first_entry].time_discovered_started_ns != kUnknown) return true;
    }
    // A group of only sends and recvs (pipeline stages) has no collective to show it.
    for (uint32_t e : member.p2p_entries) {
      const Entry& entry = dump->entries[e];
      if (entry.state == EntryState::kStarted) return true;
      if (entry.time_discovered_started_ns != kUnknown) return true;
    }
  }
  return false;
}

GroupMatcher::Progress GroupMatcher::ProgressAt(const GroupMember& member, int64_t seq,
                                                const CollectiveUnit** unit) const {
  *unit = nullptr;
  if (member.dump < 0) return member.dump_holds_none ? Progress::kNotIssued : Progress::kMissing;
  if (member.last_enqueued == kUnknown || member.last_enqueued < seq) return Progress::kNotIssued;
  auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                             [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
  if (it != member.units.end() && it->seq == seq) {
    *unit = &*it;
    switch (it->state) {
      case EntryState::kCompleted:
        return Progress::kCompleted;
      case EntryState::kStarted:
        return Progress::kStarted;
      default:
        return Progress::kScheduled;
    }
  }
  // Rolled out of the ring buffer: pg_status still knows.
  if (member.last_completed >= seq) return Progress::kCompleted;
  if (member.last_started >= seq) return Progress::kStarted;
  return Progress::kScheduled;
}

bool GroupMatcher::IsStuck(const GroupMember& member, const Entry& entry, int64_t seq) {
  // A member the logs say died and that never issued this collective: it can never complete,
  // however young it is.
  if (seq >= 0 && !index_.died_ranks.empty()) {
    for (const GroupMember& other : group_.members) {
      if (&other == &member ||
          !std::binary_search(index_.died_ranks.begin(), index_.died_ranks.end(), other.rank)) {
        continue;
      }
      if (other.dump < 0 || other.last_enqueued == kUnknown || other.last_enqueued < seq) {
        ++result_.ops_known_stuck;
        return true;
      }
    }
  }
  int64_t dump_time = index_.dump_times.per_dump[member.dump];
  if (dump_time == kUnknown || entry.time_created_ns == kUnknown) return true;
  int64_t timeout_ms = entry.timeout_ms > 0 ? entry.timeout_ms : kDefaultTimeoutMs;
  int64_t age = dump_time - entry.time_created_ns;
  if (age >= timeout_ms * 1'000'000) {
    ++result_.ops_known_stuck;
    return true;
  }
  const auto& stall_after = index_.dump_times.stall_after_ns;
  if (index_.dump_times.some_rank_went_idle && member.dump >= 0 &&
      static_cast<size_t>(member.dump) < stall_after.size() &&
      stall_after[member.dump] != kUnknown && age >= stall_after[member.dump]) {
    ++result_.stalled_beyond_rhythm_ops;
    if (age > result_.longest_stall_ns) {
      result_.longest_stall_ns = age;
      result_.stall_median_gap_ns = index_.dump_times.median_gap_ns[member.dump];
    }
    return true;
  }
  return false;
}

bool GroupMatcher::Desynced(int64_t seq) const {
  return std::any_of(result_.mismatches.begin(), result_.mismatches.end(),
                     [&](const Mismatch& m) { return m.group == group_index_ && m.seq == seq; });
}

void GroupMatcher::FindBlockedHeads() {
  std::map<int64_t, std::vector<size_t>>& collective_heads = heads_.judged;
  std::vector<std::pair<size_t, uint32_t>> p2p_heads;  // (member, entry)
  for (size_t m = 0; m < group_.members.size(); ++m) {
    const GroupMember& member = group_.members[m];
    const RankDump* dump = DumpOf(member);
    if (dump == nullptr) continue;
    const CollectiveUnit* coll = nullptr;
    for (const CollectiveUnit& unit : member.units) {
      if (unit.state != EntryState::kCompleted) {
        coll = &unit;
        break;
      }
    }
    int64_t p2p = -1;
    for (uint32_t e : member.p2p_entries) {
      if (!EntryFinished(dump->entries[e])) {
        p2p = e;
        break;
      }
    }
    bool coll_first = coll != nullptr && (p2p < 0 || coll->first_entry < p2p);
    // With a small ring buffer the rank's oldest unfinished collective may have rolled out:
    // pg_status says it completed only up to an older seq than the first unfinished one still
    // in the buffer. Its head is that older seq (judged from pg_status), not a later op that
    // a peer blocked behind it cannot have issued yet. Whether the later op is stuck still
    // tells whether the older one is.
    int64_t head_seq = coll_first ? coll->seq : kUnknown;
    if (coll_first && member.last_completed != kUnknown && member.last_completed + 1 < coll->seq &&
        member.last_completed + 1 < member.first_seq_in_buffer) {
      head_seq = member.last_completed + 1;
    }
    // A head that has not started while this rank has an older unfinished op elsewhere is not
    // where the rank waits: its wait is judged at that older op. (A head that rolled out is
    // older than anything in the buffer.)
    if (coll_first && head_seq == coll->seq && coll->state == EntryState::kScheduled &&
        BlockedBehindEarlierOp(member, coll->first_entry)) {
      continue;
    }
    if (coll_first) {
      // An op that ended in an error is where the rank stopped, however young it was; so is
      // one whose collective another member issued differently: it can never complete. (A
      // late rank's op can be younger than its timeout when the culprit's exit ends it and the
      // rank dumps before Gloo retires the failed op.)
      if (coll->retired_failed) ++result_.ops_known_stuck;
      if (!coll->retired_failed && !IsStuck(member, dump->entries[coll->first_entry], coll->seq) &&
          !Desynced(coll->seq)) {
        ++result_.in_flight_ops;
        heads_.young.emplace_back(head_seq, m);
        continue;
      }
      collective_heads[head_seq].push_back(m);
    } else if (p2p >= 0) {
      if (!IsStuck(member, dump->entries[p2p], -1)) {
        ++result_.in_flight_ops;
        continue;
      }
      // A batch (batch_isend_irecv) shares one p2p_seq_id: all its pending ops are the head.
      int64_t batch = dump->entries[p2p].p2p_seq_id;
      for (uint32_t e : member.p2p_entries) {
        const Entry& entry = dump->entries[e];
        if (e < static_cast<uint32_t>(p2p) || EntryFinished(entry)) continue;
        if (e != static_cast<uint32_t>(p2p) && (batch == kUnknown || entry.p2p_seq_id != batch)) {
          break;
        }
        p2p_heads.emplace_back(m, e);
      }
    }
  }
  for (const auto& [seq, waiters] : collective_heads) JudgeCollectiveHead(seq, waiters);
  if (!p2p_heads.empty()) JudgeP2pHeads(p2p_heads);
}

void GroupMatcher::AddBlock(bool is_p2p, int64_t seq, std::string op, std::vector<int64_t> waiters,
                            std::vector<int64_t> blockers, BlockReason reason,
                            int64_t time_created_ns) {
  if (waiters.empty() || blockers.empty()) return;
  Block block;
  block.group = group_index_;
  block.is_p2p = is_p2p;
  block.seq = seq;
  block.op = std::move(op);
  block.waiters = Sorted(std::move(waiters));
  block.blockers = Sorted(std::move(blockers));
  block.reason = reason;
  block.time_created_ns = time_created_ns;
  result_.blocks.push_back(std::move(block));
}

void GroupMatcher::DescribeMemberStates() {
  int64_t focus = kUnknown;
  for (const Block& block : result_.blocks) {
    if (block.group == group_index_ && !block.is_p2p) {
      focus = focus == kUnknown ? block.seq : std::min(focus, block.seq);
    }
  }
  for (const StuckOp& stuck : result_.stuck) {
    if (stuck.group == group_index_ && !stuck.is_p2p) {
      focus = focus == kUnknown ? stuck.seq : std::min(focus, stuck.seq);
    }
  }
  for (const GroupMember& member : group_.members) {
    MemberState state;
    state.rank = member.rank;
    const RankDump* dump = DumpOf(member);
    if (dump == nullptr) {
      state.state = member.dump_holds_none           ? MemberProgress::kNotIssued
                    : index_.Unreadable(member.rank) ? MemberProgress::kDumpUnreadable
                                                     : MemberProgress::kDumpMissing;
      match_.members.push_back(std::move(state));
      continue;
    }
    if (member.units.empty() && !member.p2p_entries.empty()) {
      // A p2p-only group (pipeline stages): where the member is on its sends and recvs, the
      // oldest unfinished one, else the last.
      uint32_t shown = member.p2p_entries.back();
      for (uint32_t e : member.p2p_entries) {
        if (!EntryFinished(dump->entries[e])) {
          shown = e;
          break;
        }
      }
      const Entry& entry = dump->entries[shown];
      state.state = entry.state == EntryState::kCompleted ? MemberProgress::kCompleted
                    : entry.state == EntryState::kStarted ? MemberProgress::kStarted
                                                          : MemberProgress::kScheduled;
      state.op = fmt::format("{} {} {}", dump->strings.view(entry.op_name),
                             entry.op == OpKind::kSend ? "to" : "from", entry.peer_rank);
      state.seq = entry.p2p_seq_id;
      match_.members.push_back(std::move(state));
      continue;
    }
    int64_t seq = focus != kUnknown ? focus : member.last_enqueued;
    const CollectiveUnit* unit = nullptr;
    Progress progress = seq == kUnknown ? Progress::kNotIssued : ProgressAt(member, seq, &unit);
    if (progress == Progress::kNotIssued) {
      state.state = MemberProgress::kNotIssued;
      seq = member.last_enqueued;
      ProgressAt(member, seq, &unit);
    } else {
      state.state = progress == Progress::kCompleted ? MemberProgress::kCompleted
                    : progress == Progress::kStarted ? MemberProgress::kStarted
                                                     : MemberProgress::kScheduled;
    }
    state.seq = seq;
    if (unit != nullptr) {
      state.op = std::string(dump->strings.view(dump->entries[unit->first_entry].op_name));
    } else if (seq != kUnknown) {
      state.op = "collective";  // its entry rolled out of the ring buffer; pg_status knows seq
    }
    match_.members.push_back(std::move(state));
  }
}

bool GroupMatcher::BlockedBehindEarlierOp(const GroupMember& member, uint32_t entry) const {
  // An unfinished collective of another group that rolled out of the buffer is older than
  // anything in it.
  for (uint32_t g : rolled_out_[member.dump]) {
    if (g != group_index_) return true;
  }
  int64_t first = first_pending_[member.dump];
  if (first < 0 || first >= static_cast<int64_t>(entry)) return false;
  // Ops of one batch (batch_isend_irecv) are launched together: none is behind another.
  const auto& entries = trace_.ranks[member.dump].entries;
  const Entry& older = entries[first];
  const Entry& op = entries[entry];
  bool same_batch = IsPointToPoint(op.op) && (older.is_p2p || IsPointToPoint(older.op)) &&
                    older.group == op.group && older.p2p_seq_id != kUnknown &&
                    older.p2p_seq_id == op.p2p_seq_id;
  return !same_batch;
}

}  // namespace match_internal

namespace {

using match_internal::GroupHeads;
using match_internal::GroupMatcher;

// Per loaded dump, the groups whose oldest unfinished collective rolled out of the dump's ring
// buffer: pg_status says the rank issued more than it completed, and completed only up to a seq
// older than the first one still in the buffer.
std::vector<std::vector<uint32_t>> RolledOutPending(const LoadedTrace& trace,
                                                    const JobIndex& index) {
  std::vector<std::vector<uint32_t>> rolled_out(trace.ranks.size());
  for (uint32_t g = 0; g < index.groups.size(); ++g) {
    for (const GroupMember& member : index.groups[g].members) {
      if (member.dump < 0 || member.last_completed == kUnknown ||
          member.first_seq_in_buffer == kUnknown || member.last_enqueued == kUnknown ||
          member.last_enqueued <= member.last_completed ||
          member.last_completed + 1 >= member.first_seq_in_buffer) {
        continue;
      }
      rolled_out[member.dump].push_back(g);
    }
  }
  return rolled_out;
}

// A young op is in flight only while its rank is free to go on. When ranks stuck for good wait
// for a rank whose op is younger than its timeout, that op is where the rank waits, not a sign
// that it waits on nothing: a rank whose dump came early (Gloo ends a peer's ops at once when it
// exits, and the rank dumps within a second) would otherwise be named a culprit that "never
// issued" what its waiters are in. So the young heads of waited-for ranks are judged like stuck
// ones, and so on down the chain. Young heads nobody waits on stay in flight (a healthy job
// dumped on demand has many). Collective heads only: a young send/recv stays in flight.
void PromoteYoungHeads(const LoadedTrace& trace, const JobIndex& index,
                       const std::vector<std::vector<uint32_t>>& rolled_out,
                       std::vector<GroupHeads>* heads, std::vector<MatchResult>* found,
                       std::vector<GroupMatch>* matches) {
  absl::flat_hash_map<int64_t, std::vector<std::pair<uint32_t, size_t>>> young_of_rank;
  for (uint32_t g = 0; g < heads->size(); ++g) {
    const GroupHeads& group = (*heads)[g];
    for (size_t i = 0; i < group.young.size(); ++i) {
      young_of_rank[index.groups[g].members[group.young[i].second].rank].emplace_back(g, i);
    }
  }
  if (young_of_rank.empty()) return;
  // Waited-for ranks with young heads, each taken once (the chain may come back to a rank).
  std::vector<int64_t> queue;
  absl::flat_hash_set<int64_t> queued;
  auto enqueue_blockers = [&](const std::vector<Block>& blocks) {
    for (const Block& block : blocks) {
      for (int64_t r : block.blockers) {
        if (young_of_rank.contains(r) && queued.insert(r).second) queue.push_back(r);
      }
    }
  };
  for (const MatchResult& group : *found) enqueue_blockers(group.blocks);
  while (!queue.empty()) {
    int64_t rank = queue.back();
    queue.pop_back();
    for (const auto& [g, i] : young_of_rank.at(rank)) {
      GroupHeads& group = (*heads)[g];
      const auto [seq, member] = group.young[i];
      std::vector<size_t>& judged = group.judged[seq];
      judged.insert(std::upper_bound(judged.begin(), judged.end(), member), member);
      --(*found)[g].in_flight_ops;
      GroupMatcher(trace, index, g, &(*found)[g], &(*matches)[g], &group, rolled_out)
          .JudgeAgain(seq);
      enqueue_blockers((*found)[g].blocks);
    }
  }
}

}  // namespace

std::string_view BlockReasonText(BlockReason reason) {
  switch (reason) {
    case BlockReason::kNeverIssued:
      return "never issued";
    case BlockReason::kDumpMissing:
      return "dump missing";
    case BlockReason::kDumpUnreadable:
      return "dump unreadable";
    case BlockReason::kNotStarted:
      return "issued but not started";
    case BlockReason::kNoMatchingRecv:
      return "no matching recv";
    case BlockReason::kNoMatchingSend:
      return "no matching send";
    case BlockReason::kOpMismatch:
      return "op_mismatch";
    case BlockReason::kSizeMismatch:
      return "size_mismatch";
    case BlockReason::kDtypeMismatch:
      return "dtype_mismatch";
    case BlockReason::kBehindEarlierOp:
      return "blocked behind an earlier op";
    case BlockReason::kRecvHeldByBatch:
      return "matching recv held by an incomplete batch";
    case BlockReason::kSendHeldByBatch:
      return "matching send held by an incomplete batch";
    case BlockReason::kUnrecordedP2p:
      return "presumably blocked in a send/recv that Gloo does not record";
  }
  return "never issued";
}

BlockReason BlockReasonOf(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::kOp:
      return BlockReason::kOpMismatch;
    case MismatchKind::kDtype:
      return BlockReason::kDtypeMismatch;
    case MismatchKind::kSize:
      return BlockReason::kSizeMismatch;
  }
  return BlockReason::kOpMismatch;
}

std::string_view MemberProgressName(MemberProgress progress) {
  switch (progress) {
    case MemberProgress::kScheduled:
      return "scheduled";
    case MemberProgress::kStarted:
      return "started";
    case MemberProgress::kCompleted:
      return "completed";
    case MemberProgress::kNotIssued:
      return "not issued";
    case MemberProgress::kDumpMissing:
      return "dump missing";
    case MemberProgress::kDumpUnreadable:
      return "dump unreadable";
  }
  return "scheduled";
}

std::string_view MismatchKindName(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::kOp:
      return "op_mismatch";
    case MismatchKind::kDtype:
      return "dtype_mismatch";
    case MismatchKind::kSize:
      return "size_mismatch";
  }
  return "op_mismatch";
}

MatchResult MatchJob(const LoadedTrace& trace, const JobIndex& index, int jobs) {
  MatchResult result;
  result.groups.resize(index.groups.size());
  result.dump_time_ns = index.dump_times.job_ns;
  result.dump_time_source = index.dump_times.source;
  result.dump_time_confidence = index.dump_times.confidence;
  // A group's matcher reads and writes only its own group's findings, so groups are matched in
  // parallel, each into a result of its own, and the results joined in group order: the same
  // lists, in the same order, as one after the other.
  std::vector<MatchResult> found(index.groups.size());
  std::vector<GroupHeads> heads(index.groups.size());
  const std::vector<std::vector<uint32_t>> rolled_out = RolledOutPending(trace, index);
  ParallelFor(
      index.groups.size(), jobs,
      [&](size_t g) {
        GroupMatcher(trace, index, static_cast<uint32_t>(g), &found[g], &result.groups[g],
                     &heads[g], rolled_out)
            .Run();
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/8);
  PromoteYoungHeads(trace, index, rolled_out, &heads, &found, &result.groups);
  for (MatchResult& group : found) {
    std::move(group.mismatches.begin(), group.mismatches.end(),
              std::back_inserter(result.mismatches));
    std::move(group.blocks.begin(), group.blocks.end(), std::back_inserter(result.blocks));
    std::move(group.stuck.begin(), group.stuck.end(), std::back_inserter(result.stuck));
    result.in_flight_ops += group.in_flight_ops;
    result.stalled_beyond_rhythm_ops += group.stalled_beyond_rhythm_ops;
    result.ops_known_stuck += group.ops_known_stuck;
    if (group.longest_stall_ns > result.longest_stall_ns) {
      result.longest_stall_ns = group.longest_stall_ns;
      result.stall_median_gap_ns = group.stall_median_gap_ns;
    }
    result.collectives_checked += group.collectives_checked;
    result.p2p_ops_checked += group.p2p_ops_checked;
  }
  return result;
}

}  // namespace fr
