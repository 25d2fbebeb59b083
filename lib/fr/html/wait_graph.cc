// The wait-for graph: whom each victim waits for (the verdict's chains, then the timeline's flows,
// then the op it stopped in) and how the victims collapse into boxes by the op they wait in, laid
// out in columns toward the culprits, with the chains in words beneath it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fr/html/html_report_internal.h"

namespace fr::html_internal {

void HtmlWriter::WaitGraph() {
  struct Node {
    std::vector<int64_t> ranks;
    std::string what;  // empty for culprits
    int depth = 0;
    int target = -1;  // node index
  };
  std::vector<Node> nodes;
  std::map<int64_t, int> node_of_rank;
  if (culprits_.size() <= 8) {
    for (int64_t culprit : culprits_) {
      node_of_rank[culprit] = static_cast<int>(nodes.size());
      nodes.emplace_back().ranks = {culprit};
    }
  } else if (!culprits_.empty()) {
    Node all;
    for (int64_t culprit : culprits_) {
      all.ranks.push_back(culprit);
      node_of_rank[culprit] = 0;
    }
    nodes.push_back(std::move(all));
  }
  out_ += "<section id=\"wait-graph\">\n<h2>Who waits for whom</h2>\n";
  if (nodes.empty()) {
    out_ +=
        "<p class=\"note\">No culprit was named, so there is no wait-for graph to draw.</p>\n"
        "</section>\n";
    return;
  }
  // Layers outward from the culprits: a waiter joins once the box it waits for exists.
  for (int depth = 1; depth <= 64; ++depth) {
    std::map<std::tuple<std::string, int>, int> layer;
    for (const auto& [waiter, hop] : hops_) {
      if (node_of_rank.contains(waiter)) continue;
      auto target = node_of_rank.find(hop.target);
      if (target == node_of_rank.end() || nodes[target->second].depth != depth - 1) continue;
      auto key = std::make_tuple(hop.what, target->second);
      auto [it, added] = layer.try_emplace(key, static_cast<int>(nodes.size()));
      if (added) {
        Node& node = nodes.emplace_back();
        node.what = hop.what;
        node.depth = depth;
        node.target = target->second;
      }
      nodes[it->second].ranks.push_back(waiter);
    }
    if (layer.empty()) break;
    for (const auto& [key, n] : layer) {
      for (int64_t r : nodes[n].ranks) node_of_rank[static_cast<int64_t>(r)] = n;
    }
  }
  size_t unplaced = 0;
  for (const auto& [waiter, hop] : hops_) unplaced += node_of_rank.contains(waiter) ? 0 : 1;
  size_t hidden_nodes = 0, hidden_ranks = 0;
  if (nodes.size() > options_.max_graph_nodes) {
    // Keep the boxes nearest the culprits, the larger first within a column.
    std::vector<int> order(nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return std::make_tuple(nodes[a].depth, -static_cast<int64_t>(nodes[a].ranks.size())) <
             std::make_tuple(nodes[b].depth, -static_cast<int64_t>(nodes[b].ranks.size()));
    });
    std::vector<bool> keep(nodes.size(), false);
    for (size_t i = 0; i < order.size(); ++i) keep[order[i]] = i < options_.max_graph_nodes;
    // A kept box whose target is hidden is hidden too (it would point nowhere).
    for (int n : order) {
      if (keep[n] && nodes[n].target >= 0 && !keep[nodes[n].target]) keep[n] = false;
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (!keep[n]) {
        ++hidden_nodes;
        hidden_ranks += nodes[n].ranks.size();
        nodes[n].ranks.clear();
      }
    }
  }
  int max_depth = 0;
  std::map<int, int> column_size;
  std::vector<int> row(nodes.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].ranks.empty()) continue;
    max_depth = std::max(max_depth, nodes[n].depth);
    row[n] = column_size[nodes[n].depth]++;
  }
  int tallest = 0;
  for (const auto& [depth, size] : column_size) tallest = std::max(tallest, size);
  constexpr int kBoxW = 230, kBoxH = 44, kColumnW = 300, kRowH = 58, kMargin = 14;
  int width = kMargin * 2 + max_depth * kColumnW + kBoxW;
  int height = kMargin * 2 + tallest * kRowH;
  auto box_x = [&](int n) { return kMargin + (max_depth - nodes[n].depth) * kColumnW; };
  auto box_y = [&](int n) {
    int offset = (tallest - column_size[nodes[n].depth]) * kRowH / 2;
    return kMargin + offset + row[n] * kRowH;
  };
  out_ += fmt::format(
      "<svg id=\"wait-graph-svg\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"wait-for graph\">\n"
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
      "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
      "<path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#495057\"/></marker></defs>\n",
      width, height, width, height);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].ranks.empty() || nodes[n].target < 0) continue;
    int t = nodes[n].target;
    int x1 = box_x(static_cast<int>(n)) + kBoxW, y1 = box_y(static_cast<int>(n)) + kBoxH / 2;
    int x2 = box_x(t), y2 = box_y(t) + kBoxH / 2;
    int mid = (x1 + x2) / 2;
    out_ += fmt::format(
        "<path class=\"edge\" d=\"M {} {} C {} {} {} {} {} {}\" fill=\"none\" stroke=\"#495057\" "
        "stroke-width=\"1.4\" marker-end=\"url(#arrow)\"/>\n",
        x1, y1, mid, y1, mid, y2, x2 - 2, y2);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    if (node.ranks.empty()) continue;
    bool culprit = node.depth == 0;
    std::string ranks = FormatRankSet(node.ranks);
    std::string first = node.ranks.size() == 1
                            ? fmt::format("rank {}", ranks)
                            : fmt::format("{} [{}]", RankCount(node.ranks.size()), ranks);
    std::string second = culprit ? "culprit: waits for no one" : "wait in " + node.what;
    int x = box_x(static_cast<int>(n)), y = box_y(static_cast<int>(n));
    out_ += fmt::format(
        "<g class=\"node{}\"><title>{}\n{}</title>"
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"5\" fill=\"{}\" stroke=\"{}\" "
        "stroke-width=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\"{}>{}</text><text class=\"small\" x=\"{}\" "
        "y=\"{}\">{}</text></g>\n",
        culprit ? " culprit-node" : "", Esc(first), Esc(second), x, y, kBoxW, kBoxH,
        culprit ? "#fff5f5" : "#f8f9fa", culprit ? kCulpritColor : "#adb5bd", culprit ? 2 : 1,
        x + 8, y + 18, culprit ? " fill=\"#c92a2a\" font-weight=\"bold\"" : "",
        Esc(Shorten(first, 34)), x + 8, y + 35, Esc(Shorten(second, 36)));
  }
  out_ += "</svg>\n";
  if (hidden_nodes > 0) {
    out_ += fmt::format(
        "<p class=\"note\">{} more boxes ({}) farther from the culprits are not drawn.</p>\n",
        hidden_nodes, RankCount(hidden_ranks));
  }
  if (unplaced > 0) {
    out_ += fmt::format(
        "<p class=\"note\">{} wait for ranks that lead to no culprit (not drawn).</p>\n",
        RankCount(unplaced));
  }
  ChainsText();
  out_ += "</section>\n";
}

void HtmlWriter::ComputeHops() {
  for (const report::WaitChain& chain : report_.verdict().chains()) {
    for (const report::WaitEdge& edge : chain.edges()) {
      if (hops_.contains(edge.waiter())) continue;
      std::string what = edge.has_process_group() ? fmt::format("{} {} #{}",
                                                                edge.process_group().desc().empty()
                                                                    ? edge.process_group().name()
                                                                    : edge.process_group().desc(),
                                                                edge.op(), edge.seq_id())
                                                  : edge.op();
      hops_[edge.waiter()] = {edge.waits_for(), what};
    }
  }
  for (const Timeline::Flow& flow : timeline_.flows) {
    const Timeline::Slice& from = timeline_.slices[flow.from_slice];
    const Timeline::Slice& to = timeline_.slices[flow.to_slice];
    int64_t waiter = timeline_.ranks[from.track].rank;
    if (hops_.contains(waiter)) continue;
    hops_[waiter] = {timeline_.ranks[to.track].rank, SliceWhat(from)};
  }
  if (!culprits_.empty()) {
    for (size_t track = 0; track < timeline_.ranks.size(); ++track) {
      int64_t rank = timeline_.ranks[track].rank;
      auto role = role_.find(rank);
      if (hops_.contains(rank) || role == role_.end() || role->second != "victim" ||
          last_slice_[track] < 0) {
        continue;
      }
      hops_[rank] = {*culprits_.begin(), SliceWhat(timeline_.slices[last_slice_[track]])};
    }
  }
}

std::string HtmlWriter::SliceWhat(const Timeline::Slice& slice) const {
  std::string desc = DescOfLabel(timeline_.String(slice.group));
  return desc.empty() ? timeline_.SliceName(slice)
                      : fmt::format("{} {}", desc, timeline_.SliceName(slice));
}

void HtmlWriter::ChainsText() {
  const auto& chains = report_.verdict().chains();
  if (chains.empty()) return;
  out_ += "<details><summary>The longest wait chains, hop by hop</summary>\n<ul>\n";
  for (const report::WaitChain& chain : chains) {
    std::string text;
    for (const report::WaitEdge& edge : chain.edges()) {
      if (text.empty()) text = fmt::format("rank {}", edge.waiter());
      std::string where = edge.has_process_group()
                              ? fmt::format("{} #{} in {}", edge.op(), edge.seq_id(),
                                            GroupRefText(edge.process_group()))
                              : edge.op();
      text +=
          fmt::format(" \u2192 [{}: {}] \u2192 rank {}", where, edge.reason(), edge.waits_for());
    }
    out_ += fmt::format("<li class=\"mono\">{}</li>\n", Esc(text));
  }
  out_ += "</ul>\n</details>\n";
}

}  // namespace fr::html_internal
