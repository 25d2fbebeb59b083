#include "fr/match/p2p_rhythm.h"

#include <algorithm>

namespace fr {
namespace {

// How many leading ops repeat with period `p`: the first i >= p with a different op than
// p ops before it, or the count of ops when there is none.
int64_t RepeatedPrefix(const std::vector<bool>& is_send, int64_t p) {
  const int64_t n = static_cast<int64_t>(is_send.size());
  for (int64_t i = p; i < n; ++i) {
    if (is_send[i] != is_send[i - p]) return i;
  }
  return n;
}

}  // namespace

std::optional<RhythmBreak> FindRhythmBreak(const std::vector<bool>& is_send) {
  const int64_t n = static_cast<int64_t>(is_send.size());
  int64_t best_period = 0;
  int64_t best_prefix = 0;
  // Periods are tried shortest first, so a whole-window repetition stops the search at its
  // shortest period; a broken window costs at most n/3 passes up to the break.
  for (int64_t p = 1; 3 * p <= n; ++p) {
    // A repetition of one direction only (four recvs in a row) is a run, not a step: every
    // step with a neighbour both sends and receives.
    int64_t sends = std::count(is_send.begin(), is_send.begin() + p, true);
    if (sends == 0 || sends == p) continue;
    int64_t prefix = RepeatedPrefix(is_send, p);
    if (prefix == n) return std::nullopt;
    if (prefix > best_prefix) {
      best_prefix = prefix;
      best_period = p;
    }
  }
  // A rhythm is known only after it repeated twice; a shorter prefix says nothing about it.
  if (best_period == 0 || best_prefix < 2 * best_period) return std::nullopt;
  RhythmBreak broken;
  broken.period = best_period;
  broken.sends_per_period = std::count(is_send.begin(), is_send.begin() + best_period, true);
  broken.ops_in_rhythm = best_prefix;
  broken.position = best_prefix;
  broken.expected_send = is_send[best_prefix - best_period];
  return broken;
}

ChannelRhythm RhythmWithPeer(const RankDump& dump, const GroupMember& member, int64_t peer) {
  ChannelRhythm rhythm;
  std::vector<bool> is_send;
  for (uint32_t e : member.p2p_entries) {
    const Entry& entry = dump.entries[e];
    if (entry.peer_rank != peer || (entry.op != OpKind::kSend && entry.op != OpKind::kRecv)) {
      continue;
    }
    rhythm.entries.push_back(e);
    is_send.push_back(entry.op == OpKind::kSend);
  }
  rhythm.broken = FindRhythmBreak(is_send);
  if (rhythm.broken.has_value()) rhythm.break_entry = rhythm.entries[rhythm.broken->position];
  return rhythm;
}

}  // namespace fr
