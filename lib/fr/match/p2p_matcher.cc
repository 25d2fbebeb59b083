// Matching sends and recvs: whether each pending send/recv head met its partner on its (src, dst)
// channel in FIFO order, and when not, why: the peer never posted it, is behind an earlier op,
// has not started, left no dump, or holds it in a batch that cannot complete.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fr/match/matcher_internal.h"

namespace fr::match_internal {

void GroupMatcher::NoteP2pDivergence(int64_t p2p_seq) {
  if (p2p_seq == kUnknown) return;
  for (const GroupMember& member : group_.members) {
    if (!member.units.empty()) return;
  }
  NoteDivergence(p2p_seq);
}

void GroupMatcher::JudgeP2pHeads(const std::vector<std::pair<size_t, uint32_t>>& heads) {
  // Pending sends and recvs per channel, in each side's order.
  absl::flat_hash_map<int64_t, size_t> member_of_rank;
  for (size_t m = 0; m < group_.members.size(); ++m) member_of_rank[group_.members[m].rank] = m;
  auto pending_on_channel = [&](const GroupMember& member, OpKind kind, int64_t peer,
                                uint32_t up_to_entry, bool inclusive) {
    const RankDump& dump = *DumpOf(member);
    int64_t count = 0;
    for (uint32_t e : member.p2p_entries) {
      if (e > up_to_entry || (!inclusive && e == up_to_entry)) break;
      const Entry& entry = dump.entries[e];
      if (entry.op == kind && entry.peer_rank == peer && !EntryFinished(entry)) {
        ++count;
      }
    }
    return count;
  };
  // Pass 1: what each head op's partner is doing.
  enum class PartnerState { kSkip, kPeerMissing, kAbsent, kBehind, kNotStarted, kStarted };
  struct Judged {
    size_t member;
    uint32_t entry;
    PartnerState partner = PartnerState::kSkip;
    size_t peer = 0;
    int64_t partner_batch = kUnknown;  // the partner op's p2p_seq_id
  };
  std::vector<Judged> judged;
  for (const auto& [m, e] : heads) {
    const GroupMember& member = group_.members[m];
    const RankDump& dump = *DumpOf(member);
    const Entry& entry = dump.entries[e];
    ++result_.p2p_ops_checked;
    Judged j{m, e};
    judged.push_back(j);
    // Not yet started and stuck behind this rank's own older op: it waits there, not here.
    if (entry.state == EntryState::kScheduled && BlockedBehindEarlierOp(member, e)) continue;
    if (entry.peer_rank == kUnknown) continue;
    auto peer_it = member_of_rank.find(entry.peer_rank);
    if (peer_it == member_of_rank.end()) continue;
    Judged& current = judged.back();
    current.peer = peer_it->second;
    const GroupMember& peer = group_.members[peer_it->second];
    if (peer.dump < 0) {
      current.partner = PartnerState::kPeerMissing;
      continue;
    }
    // This op is the k-th pending one on its channel; the partner must have posted k as well.
    OpKind partner_kind = entry.op == OpKind::kSend ? OpKind::kRecv : OpKind::kSend;
    int64_t position = pending_on_channel(member, entry.op, entry.peer_rank, e, true);
    const RankDump& peer_dump = *DumpOf(peer);
    std::optional<Entry> partner;
    uint32_t partner_index = 0;
    int64_t seen = 0;
    for (uint32_t pe : peer.p2p_entries) {
      const Entry& candidate = peer_dump.entries[pe];
      if (candidate.op == partner_kind && candidate.peer_rank == member.rank &&
          !EntryFinished(candidate) && ++seen == position) {
        partner = candidate;
        partner_index = pe;
        break;
      }
    }
    if (!partner.has_value()) {
      current.partner = PartnerState::kAbsent;
    } else if (partner->state == EntryState::kScheduled &&
               BlockedBehindEarlierOp(peer, partner_index)) {
      current.partner = PartnerState::kBehind;
    } else if (partner->state == EntryState::kScheduled && timing_known_ &&
               entry.state == EntryState::kStarted) {
      current.partner = PartnerState::kNotStarted;
    } else {
      current.partner = PartnerState::kStarted;
      current.partner_batch = partner->p2p_seq_id;
    }
  }
  // A batch (batch_isend_irecv) completes only as a whole: one op of it that waits holds the
  // others, so a peer matched with a held op is not going to complete either.
  // (rank, p2p_seq_id) -> the peers its waiting ops wait for.
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> held_batches;
  for (const Judged& j : judged) {
    if (j.partner != PartnerState::kStarted && j.partner != PartnerState::kSkip) {
      const GroupMember& member = group_.members[j.member];
      held_batches[{member.rank, DumpOf(member)->entries[j.entry].p2p_seq_id}].insert(
          group_.members[j.peer].rank);
    }
  }
  // A batch whose op is matched with an op of a held batch is held too, by that peer: the
  // hold passes along a pipeline, stage by stage.
  for (bool grew = true; grew;) {
    grew = false;
    for (const Judged& j : judged) {
      if (j.partner != PartnerState::kStarted) continue;
      const int64_t peer_rank = group_.members[j.peer].rank;
      if (!held_batches.contains({peer_rank, j.partner_batch})) continue;
      const GroupMember& member = group_.members[j.member];
      const std::set<int64_t>& holders = held_batches[{peer_rank, j.partner_batch}];
      // Held only by this member's own batch: the hold would come back to where it started.
      if (std::all_of(holders.begin(), holders.end(),
                      [&](int64_t r) { return r == member.rank; })) {
        continue;
      }
      int64_t own_batch = DumpOf(member)->entries[j.entry].p2p_seq_id;
      grew |= held_batches[{member.rank, own_batch}].insert(peer_rank).second;
    }
  }
  // Pass 2: blocks and stuck pairs.
  for (const Judged& j : judged) {
    if (j.partner == PartnerState::kSkip) continue;
    const GroupMember& member = group_.members[j.member];
    const RankDump& dump = *DumpOf(member);
    const Entry& entry = dump.entries[j.entry];
    const GroupMember& peer = group_.members[j.peer];
    std::string op(dump.strings.view(entry.op_name));
    auto block = [&](BlockReason reason) {
      AddBlock(true, entry.p2p_seq_id, op, {member.rank}, {peer.rank}, reason,
               entry.time_created_ns);
      NoteP2pDivergence(entry.p2p_seq_id);
    };
    switch (j.partner) {
      case PartnerState::kSkip:
        break;
      case PartnerState::kPeerMissing:
        block(index_.Unreadable(peer.rank) ? BlockReason::kDumpUnreadable
                                           : BlockReason::kDumpMissing);
        break;
      case PartnerState::kAbsent:
        block(entry.op == OpKind::kSend ? BlockReason::kNoMatchingRecv
                                        : BlockReason::kNoMatchingSend);
        break;
      case PartnerState::kBehind:
        block(BlockReason::kBehindEarlierOp);
        break;
      case PartnerState::kNotStarted:
        block(BlockReason::kNotStarted);
        break;
      case PartnerState::kStarted:
        if (auto held = held_batches.find({peer.rank, j.partner_batch});
            held != held_batches.end()) {
          const std::set<int64_t>& holders = held->second;
          bool only_by_member = std::all_of(holders.begin(), holders.end(),
                                            [&](int64_t r) { return r == member.rank; });
          auto own = held_batches.find({member.rank, entry.p2p_seq_id});
          if (only_by_member && own != held_batches.end() && !own->second.contains(peer.rank)) {
            // The peer waits for this member's batch, which waits for a third rank: this op
            // is pending only because of its own batch, not because of the peer.
            break;
          }
          block(entry.op == OpKind::kSend ? BlockReason::kRecvHeldByBatch
                                          : BlockReason::kSendHeldByBatch);
          // The peer's batch waits for a third rank, not for this one: the wait passes on
          // (two batches holding each other are a shifted FIFO pairing; this is not).
          result_.blocks.back().held_by_other_rank = !only_by_member;
        } else if (entry.op == OpKind::kSend &&
                   !held_batches.contains({member.rank, entry.p2p_seq_id})) {
          // Both sides posted and neither completed: the transport (reported by the sender).
          // Unless the sender's own batch waits elsewhere: it completes only as a whole.
          StuckOp stuck;
          stuck.group = group_index_;
          stuck.is_p2p = true;
          stuck.seq = entry.p2p_seq_id;
          stuck.op = op;
          stuck.ranks = Sorted({member.rank, peer.rank});
          stuck.timing_known = timing_known_;
          stuck.all_started = entry.state == EntryState::kStarted;
          stuck.time_created_ns = entry.time_created_ns;
          result_.stuck.push_back(std::move(stuck));
          NoteP2pDivergence(entry.p2p_seq_id);
        }
        break;
    }
  }
}

}  // namespace fr::match_internal
