// The wait-for graph across all process groups: an edge A -> B says that rank A is blocked in an
// op that cannot complete until rank B does something (issues its side, starts it, posts the
// matching recv). Its sinks — ranks others wait for and that wait for no one, or a cycle that
// waits only on itself — are the culprits; every other blocked rank is a victim. In a cycle
// that every wait of it passes through one rank, that rank alone is the culprit.
//
//   MatchResult matched = MatchJob(trace, index, {});
//   WaitForGraph graph(matched.blocks);
//   graph.culprits();            // e.g. {37}
//   graph.ChainFrom(3);          // 3 waits in DP all_reduce #812 for 7, which never sent to ...
//
// Blocks become intermediate nodes (waiters -> block -> blockers), so a collective with 4096
// waiters and one blocker costs 4097 edges, not 4096 x blockers.
#ifndef FR_WAITFOR_WAIT_FOR_GRAPH_H_
#define FR_WAITFOR_WAIT_FOR_GRAPH_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fr/match/matcher.h"

namespace fr {

// One hop of a chain: `waiter` is blocked by `blocks[block]` waiting for `waits_for`.
struct WaitHop {
  int64_t waiter = kUnknown;
  uint32_t block = 0;  // index into the blocks the graph was built from
  int64_t waits_for = kUnknown;
};

class WaitForGraph {
 public:
  // Keeps a reference to `blocks` (BlocksOn and the hops' `block` index into it, and ChainFrom
  // reads it): the vector must outlive the graph and must not change while the graph is used.
  // In the analysis both live in the same scope (MatchResult::blocks, then the graph).
  explicit WaitForGraph(const std::vector<Block>& blocks);
  WaitForGraph(std::vector<Block>&&) = delete;  // a temporary would dangle

  // Ranks in sink components that someone waits for, ascending.
  const std::vector<int64_t>& culprits() const { return culprits_; }
  // Blocked ranks that are not culprits, ascending.
  const std::vector<int64_t>& victims() const { return victims_; }
  // True when some culprits form a cycle (a deadlock of ranks waiting on each other).
  bool has_cycle() const { return has_cycle_; }

  // The shortest chain of hops from `rank` to a culprit; empty for culprits and unblocked ranks.
  std::vector<WaitHop> ChainFrom(int64_t rank) const;
  // The blocks whose blockers include `culprit` (what its victims wait for).
  std::vector<uint32_t> BlocksOn(int64_t culprit) const;
  // Length of ChainFrom(rank), or -1.
  int Distance(int64_t rank) const;

 private:
  int RankNode(int64_t rank) const;
  // Whether component `c` (of `component`, per node) still holds a cycle once node `removed` is
  // taken out.
  bool CyclicWithout(const std::vector<int>& component, int c, int removed) const;
  // The rank node of component `c` whose removal alone leaves it without a cycle, when exactly
  // one rank does; -1 otherwise.
  int SoleCycleBreaker(const std::vector<int>& component, int c) const;

  const std::vector<Block>& blocks_;
  std::vector<int64_t> rank_of_node_;  // for rank nodes [0, rank_count_)
  absl::flat_hash_map<int64_t, int> node_of_rank_;
  int rank_count_ = 0;
  std::vector<std::vector<int>> out_;  // adjacency: rank nodes, then block nodes
  std::vector<int> next_hop_;          // toward the nearest culprit; -1 when none
  std::vector<int> distance_;
  std::vector<int64_t> culprits_;
  std::vector<int64_t> victims_;
  bool has_cycle_ = false;
};

}  // namespace fr

#endif  // FR_WAITFOR_WAIT_FOR_GRAPH_H_
