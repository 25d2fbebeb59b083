#ifndef FR_MATCH_P2P_RHYTHM_H_
#define FR_MATCH_P2P_RHYTHM_H_

// Where a rank's sends and recvs with one peer stop repeating their own pattern.
//
// Two ranks deadlocked on a p2p channel pair (each one's pending op queued behind another of its
// own) look the same from the pairing alone: "rank A skipped a send" and "rank B posted an extra
// recv" leave identical FIFO queues. What tells them apart is each rank's own schedule: a
// pipeline stage repeats the same sends and recvs with a neighbour every step, and the rank that
// skipped or added an op breaks its own repetition there, while its peer's stays whole.

#include <cstdint>
#include <optional>
#include <vector>

#include "fr/index/job_index.h"
#include "fr/model/rank_dump.h"

namespace fr {

struct RhythmBreak {
  int64_t period = 0;            // ops per repetition (e.g. one training step's ops with the peer)
  int64_t sends_per_period = 0;  // how many of them are sends
  int64_t ops_in_rhythm = 0;     // ops that followed the repetition before the break
  int64_t position = 0;          // the first op off the repetition, 0-based among these ops
  bool expected_send = false;    // what the repetition has at that place
};

// `is_send`: a rank's ops with one peer, in program order (true for a send). Finds the shortest
// period, holding both sends and recvs, that the longest prefix repeats; when that prefix ends
// before the ops do, after at least two full repetitions, returns where it ends. nullopt when one
// period explains every op or when no period repeats twice before breaking (too few ops to know the
// rhythm).
std::optional<RhythmBreak> FindRhythmBreak(const std::vector<bool>& is_send);

// A rank's send/recv ops with `peer` in one group, as entry indices of its dump (oldest first),
// and the break of their rhythm, if any, as the entry index where it happens.
struct ChannelRhythm {
  std::vector<uint32_t> entries;
  std::optional<RhythmBreak> broken;
  uint32_t break_entry = 0;  // entries[broken->position] when broken
};
ChannelRhythm RhythmWithPeer(const RankDump& dump, const GroupMember& member, int64_t peer);

}  // namespace fr

#endif  // FR_MATCH_P2P_RHYTHM_H_
