// Where ranks stand in the program they share, judged by causality rather than clocks: ranks
// run one program, so the ops each recorded after the newest collective they all finished
// together are comparable progress, where enqueue times of different ranks are a race that a
// loaded host decides either way (docs/architecture.md, "Order by causality before clocks").
//
//   ProgramOrder order(trace, index);
//   std::map<int64_t, int64_t> ahead = order.ProgressSinceLastSharedCollective({3, 7});
//   // {3: 0, 7: 4}: rank 7 recorded four ops after the collective both last finished
#ifndef FR_VERDICT_PROGRAM_ORDER_H_
#define FR_VERDICT_PROGRAM_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "fr/index/job_index.h"
#include "fr/match/matcher.h"
#include "fr/model/loaded_trace.h"

namespace fr {

// Keeps references to `trace` and `index`, which must outlive it.
class ProgramOrder {
 public:
  ProgramOrder(const LoadedTrace& trace, const JobIndex& index);

  // The dump of `rank`, or nullptr when it left none that could be read.
  const RankDump* DumpOf(int64_t rank) const;
  // Its index into LoadedTrace::ranks, or -1.
  int64_t DumpIndexOf(int64_t rank) const;

  // For ranks that all have dumps: the newest collective that all of them finished in one
  // group they share (of such groups, the one whose collective was created last), as each
  // rank's index of its last entry of it. Empty when they finished none together.
  std::map<int64_t, size_t> LastSharedCollective(const std::vector<int64_t>& ranks) const;

  // How many entries each of `ranks` recorded after LastSharedCollective; empty when unknown.
  std::map<int64_t, int64_t> ProgressSinceLastSharedCollective(
      const std::vector<int64_t>& ranks) const;

  // Where each collective block among `blocks` (indices into `all_blocks`) stands in the
  // program: how many entries its first waiter recorded between the collective it last
  // finished together with `culprit` and every block's other waiters, and the block's own
  // entry. Ops the culprit never issued come in its program in the order of these positions.
  // p2p blocks get none (they are ordered after collectives anyway). Empty unless every
  // collective block has a waiter whose dump has it and such a shared collective exists.
  std::map<uint32_t, int64_t> ProgramPositions(int64_t culprit, const std::vector<uint32_t>& blocks,
                                               const std::vector<Block>& all_blocks) const;

 private:
  const LoadedTrace& trace_;
  const JobIndex& index_;
  std::map<int64_t, size_t> dump_of_rank_;
};

}  // namespace fr

#endif  // FR_VERDICT_PROGRAM_ORDER_H_
