#include "fr/match/p2p_rhythm.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fr {
namespace {

// z[p]: how many ops from p on repeat the ops from 0 (the Z-function, O(n)). The ops up to i
// repeat with period p exactly when i <= p + z[p]: every period's prefix from one pass, so a
// window of a million ops costs a million steps, never a million per period tried.
std::vector<int64_t> ZFunction(const std::vector<bool>& s) {
  const int64_t n = static_cast<int64_t>(s.size());
  std::vector<int64_t> z(n, 0);
  if (n > 0) z[0] = n;
  for (int64_t i = 1, left = 0, right = 0; i < n; ++i) {
    if (i < right) z[i] = std::min(right - i, z[i - left]);
    while (i + z[i] < n && s[z[i]] == s[i + z[i]]) ++z[i];
    if (i + z[i] > right) {
      left = i;
      right = i + z[i];
    }
  }
  return z;
}

}  // namespace

std::optional<RhythmBreak> FindRhythmBreak(const std::vector<bool>& is_send) {
  const int64_t n = static_cast<int64_t>(is_send.size());
  const std::vector<int64_t> z = ZFunction(is_send);
  int64_t best_period = 0;
  int64_t best_prefix = 0;
  int64_t sends = 0;  // among the first p ops
  for (int64_t p = 1; 3 * p <= n; ++p) {
    sends += is_send[p - 1] ? 1 : 0;
    // A repetition of one direction only (four recvs in a row) is a run, not a step: every
    // step with a neighbour both sends and receives.
    if (sends == 0 || sends == p) continue;
    // Shortest first: a whole-window repetition ends the search at its shortest period.
    int64_t prefix = p + z[p];
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
