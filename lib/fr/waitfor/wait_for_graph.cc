#include "fr/waitfor/wait_for_graph.h"

#include <algorithm>
#include <deque>

namespace fr {

WaitForGraph::WaitForGraph(const std::vector<Block>& blocks) : blocks_(blocks) {
  auto add_rank = [&](int64_t rank) {
    auto [it, inserted] = node_of_rank_.try_emplace(rank, static_cast<int>(rank_of_node_.size()));
    if (inserted) rank_of_node_.push_back(rank);
    return it->second;
  };
  for (const Block& block : blocks) {
    for (int64_t r : block.waiters) add_rank(r);
    for (int64_t r : block.blockers) add_rank(r);
  }
  rank_count_ = static_cast<int>(rank_of_node_.size());
  const int nodes = rank_count_ + static_cast<int>(blocks.size());
  out_.assign(nodes, {});
  for (size_t b = 0; b < blocks.size(); ++b) {
    int block_node = rank_count_ + static_cast<int>(b);
    for (int64_t r : blocks[b].waiters) out_[node_of_rank_[r]].push_back(block_node);
    for (int64_t r : blocks[b].blockers) out_[block_node].push_back(node_of_rank_[r]);
  }

  // Strongly connected components (iterative Tarjan: the graph can have 10^5 nodes).
  std::vector<int> index(nodes, -1), low(nodes, 0), component(nodes, -1);
  std::vector<bool> on_stack(nodes, false);
  std::vector<int> stack;
  std::vector<std::pair<int, size_t>> call;  // (node, next edge)
  int counter = 0, components = 0;
  for (int start = 0; start < nodes; ++start) {
    if (index[start] != -1) continue;
    call.emplace_back(start, 0);
    while (!call.empty()) {
      auto& [node, edge] = call.back();
      if (edge == 0 && index[node] == -1) {
        index[node] = low[node] = counter++;
        stack.push_back(node);
        on_stack[node] = true;
      }
      if (edge < out_[node].size()) {
        int next = out_[node][edge++];
        if (index[next] == -1) {
          call.emplace_back(next, 0);
        } else if (on_stack[next]) {
          low[node] = std::min(low[node], index[next]);
        }
        continue;
      }
      if (low[node] == index[node]) {
        int member;
        do {
          member = stack.back();
          stack.pop_back();
          on_stack[member] = false;
          component[member] = components;
        } while (member != node);
        ++components;
      }
      int finished = node;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[finished]);
    }
  }
  // A component is a sink when no edge leaves it; its ranks are culprits when someone waits on
  // them (every rank in the graph is either a waiter or a blocker, so a sink rank is waited on).
  std::vector<bool> leaves(components, false);
  std::vector<int> size(components, 0);
  for (int node = 0; node < nodes; ++node) {
    ++size[component[node]];
    for (int next : out_[node]) {
      if (component[next] != component[node]) leaves[component[node]] = true;
    }
  }
  // In a sink cycle, the one rank that every cycle passes through holds all the others: each
  // of them waits on it, directly or through a rank that does (a rank that left the program's
  // order and waits in an op its peers never reach, while they wait for it in the ops it
  // skipped). The fewest deviations that explain the deadlock are that rank's, so it alone is
  // the culprit. Where several ranks each break every cycle (two ranks waiting on each other),
  // the graph cannot tell which deviated and names them all.
  std::vector<int> breaker(components, -1);
  for (int c = 0; c < components; ++c) {
    if (!leaves[c] && size[c] > 1) breaker[c] = SoleCycleBreaker(component, c);
  }
  for (int node = 0; node < rank_count_; ++node) {
    int c = component[node];
    if (!leaves[c] && (breaker[c] < 0 || breaker[c] == node)) {
      culprits_.push_back(rank_of_node_[node]);
      if (size[c] > 1) has_cycle_ = true;
    } else {
      victims_.push_back(rank_of_node_[node]);
    }
  }
  std::sort(culprits_.begin(), culprits_.end());
  std::sort(victims_.begin(), victims_.end());

  // Breadth-first search backwards from the culprits gives every node its nearest culprit.
  std::vector<std::vector<int>> in(nodes);
  for (int node = 0; node < nodes; ++node) {
    for (int next : out_[node]) in[next].push_back(node);
  }
  next_hop_.assign(nodes, -1);
  distance_.assign(nodes, -1);
  std::deque<int> queue;
  for (int64_t culprit : culprits_) {
    int node = node_of_rank_[culprit];
    distance_[node] = 0;
    queue.push_back(node);
  }
  while (!queue.empty()) {
    int node = queue.front();
    queue.pop_front();
    for (int previous : in[node]) {
      if (distance_[previous] != -1) continue;
      distance_[previous] = distance_[node] + 1;
      next_hop_[previous] = node;
      queue.push_back(previous);
    }
  }
}

bool WaitForGraph::CyclicWithout(const std::vector<int>& component, int c, int removed) const {
  // Iterative three-colour depth-first search over the component's nodes but `removed`.
  enum : uint8_t { kWhite, kGrey, kBlack };
  std::vector<uint8_t> colour(out_.size(), kWhite);
  std::vector<std::pair<int, size_t>> call;
  for (int start = 0; start < static_cast<int>(out_.size()); ++start) {
    if (component[start] != c || start == removed || colour[start] != kWhite) continue;
    call.emplace_back(start, 0);
    colour[start] = kGrey;
    while (!call.empty()) {
      auto& [node, edge] = call.back();
      if (edge < out_[node].size()) {
        int next = out_[node][edge++];
        if (component[next] != c || next == removed) continue;
        if (colour[next] == kGrey) return true;
        if (colour[next] == kWhite) {
          colour[next] = kGrey;
          call.emplace_back(next, 0);
        }
        continue;
      }
      colour[node] = kBlack;
      call.pop_back();
    }
  }
  return false;
}

int WaitForGraph::SoleCycleBreaker(const std::vector<int>& component, int c) const {
  std::vector<int> ranks;
  size_t nodes = 0, edges = 0;
  for (size_t node = 0; node < out_.size(); ++node) {
    if (component[node] != c) continue;
    ++nodes;
    edges += out_[node].size();
    if (static_cast<int>(node) < rank_count_) ranks.push_back(static_cast<int>(node));
  }
  // Two ranks waiting on each other each break the cycle: nothing to choose between them.
  if (ranks.size() < 3) return -1;
  // One search per rank of the cycle: bounded so that a cycle of every rank of a huge job (where
  // the answer would be a guess anyway) does not cost minutes.
  constexpr size_t kMaxWork = 200'000'000;
  if (ranks.size() * (nodes + edges) > kMaxWork) return -1;
  int found = -1;
  for (int rank : ranks) {
    if (CyclicWithout(component, c, rank)) continue;
    if (found >= 0) return -1;  // a second rank breaks every cycle too
    found = rank;
  }
  return found;
}

int WaitForGraph::RankNode(int64_t rank) const {
  auto it = node_of_rank_.find(rank);
  return it == node_of_rank_.end() ? -1 : it->second;
}

std::vector<WaitHop> WaitForGraph::ChainFrom(int64_t rank) const {
  std::vector<WaitHop> chain;
  int node = RankNode(rank);
  if (node < 0) return chain;
  // Rank nodes and block nodes alternate; each hop crosses one block. Cycles among culprits have
  // distance 0, so the walk ends at the first culprit reached.
  while (node >= 0 && distance_[node] > 0) {
    int block_node = next_hop_[node];
    int target = block_node < 0 ? -1 : next_hop_[block_node];
    if (block_node < 0 || target < 0) break;
    chain.push_back(WaitHop{rank_of_node_[node], static_cast<uint32_t>(block_node - rank_count_),
                            rank_of_node_[target]});
    node = target;
  }
  return chain;
}

std::vector<uint32_t> WaitForGraph::BlocksOn(int64_t culprit) const {
  std::vector<uint32_t> result;
  for (uint32_t b = 0; b < blocks_.size(); ++b) {
    const auto& blockers = blocks_[b].blockers;
    if (std::binary_search(blockers.begin(), blockers.end(), culprit)) result.push_back(b);
  }
  return result;
}

int WaitForGraph::Distance(int64_t rank) const {
  int node = RankNode(rank);
  if (node < 0 || distance_[node] < 0) return -1;
  return distance_[node] / 2;
}

}  // namespace fr
