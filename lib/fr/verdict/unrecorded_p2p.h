// Waits the dumps cannot show: Gloo records collectives only (PyTorch 2.13, 2.14), so a rank
// blocked in a send/recv looks like a rank that waits on nothing, and the wait-for graph finds
// several independent culprits where one rank stopped first and the others stopped behind it.
//
//   if (PointToPointUnrecorded(trace)) {
//     LinkSinksWaitingInUnrecordedOps(trace, ProgramOrder(trace, index), &matched.blocks);
//   }
#ifndef FR_VERDICT_UNRECORDED_P2P_H_
#define FR_VERDICT_UNRECORDED_P2P_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "fr/match/matcher.h"
#include "fr/model/loaded_trace.h"
#include "fr/verdict/program_order.h"

namespace fr {

// Block::group of an inferred wait, which belongs to no known group (and JudgedFinding::group of
// a finding about no group): an index into JobIndex::groups that names none.
inline constexpr uint32_t kNoGroupIndex = std::numeric_limits<uint32_t>::max();

// True when the job ran send/recv that no dump can show: some entry came from Gloo and no entry
// anywhere is a point-to-point op.
bool PointToPointUnrecorded(const LoadedTrace& trace);

// Where send/recv go unrecorded (PointToPointUnrecorded), a sink of the wait-for graph that
// went on recording ops after another sink stopped is not an independent culprit: it kept
// working while the job was already hanging, then stopped in an op the recorder does not see.
// Appends to `blocks` a block linking it to the sink that stopped first, with the reason
// BlockReason::kUnrecordedP2p (the link is inferred) and the group kNoGroupIndex.
//
// "Stopped first" is judged by program progress where the sinks' dumps allow (ProgramOrder:
// the sink that recorded fewest ops after the newest collective all of them finished together
// is the one the others ran past). Without a shared collective, or when a sink left no dump,
// the times decide: the last recorded op of a sink with a dump, the first wait on a sink
// without one. Does nothing when send/recv are recorded or there are fewer than two sinks.
void LinkSinksWaitingInUnrecordedOps(const LoadedTrace& trace, const ProgramOrder& order,
                                     std::vector<Block>* blocks);

}  // namespace fr

#endif  // FR_VERDICT_UNRECORDED_P2P_H_
