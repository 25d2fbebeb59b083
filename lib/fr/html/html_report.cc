#include "fr/html/html_report.h"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fmt/format.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"

namespace fr {
namespace {

// Colours: one meaning each, the same in the graph, the timeline and the legend.
constexpr std::string_view kCulpritColor = "#c92a2a";
constexpr std::string_view kPendingColor = "#e8590c";
constexpr std::string_view kFinishedColor = "#4263eb";
constexpr std::string_view kEventColor = "#2b8a3e";

// Every rule is scoped to the report's root element, so that the same markup can sit inside a
// notebook page without restyling it; the page's own body rule is added only for a whole page.
constexpr std::string_view kPageStyle = "body{margin:0;background:#f8f9fa}";
constexpr std::string_view kStyle = R"css(
.fr-report{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
  color:#212529;max-width:1240px;margin:0 auto;padding:16px 24px 48px}
.fr-report section{background:#fff;border:1px solid #dee2e6;border-radius:6px;padding:12px 18px;
  margin:14px 0}
.fr-report h1{font-size:22px;margin:4px 0 8px}.fr-report h2{font-size:17px;margin:4px 0 10px}
.fr-report .verdict.fail{border-left:6px solid #c92a2a}
.fr-report .verdict.ok{border-left:6px solid #2f9e44}
.fr-report .class{font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.fr-report .confidence{font-size:14px;font-weight:normal;color:#495057;margin-left:8px}
.fr-report .summary{font-size:16px;margin:6px 0 10px}
.fr-report dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0}
.fr-report dl.facts dt{color:#495057}
.fr-report dl.facts dd{margin:0;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.fr-report .culprit{color:#c92a2a;font-weight:600}
.fr-report table{border-collapse:collapse;width:100%;font-size:13px}
.fr-report th,.fr-report td{text-align:left;padding:3px 8px;border-bottom:1px solid #e9ecef;
  vertical-align:top}
.fr-report th{background:#f1f3f5}
.fr-report td.mono,.fr-report .mono,.fr-report pre{font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.fr-report pre{white-space:pre-wrap;word-break:break-all;background:#f8f9fa;padding:6px 8px;
  margin:4px 0;font-size:12px}
.fr-report details>summary{cursor:pointer;color:#1c7ed6}
.fr-report .note{color:#868e96;font-size:13px}
.fr-report .legend span{display:inline-block;margin-right:14px}
.fr-report .legend i{display:inline-block;width:12px;height:12px;margin-right:4px;
  vertical-align:-2px}
.fr-report svg{max-width:100%;height:auto}
.fr-report svg text{font:12px "DejaVu Sans",sans-serif}.fr-report svg .small{font-size:11px}
.fr-report .finding{border-top:1px solid #e9ecef;padding:8px 0}
.fr-report .finding:first-of-type{border-top:0}
.fr-report .kind{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-weight:600}
)css";

// Text for HTML: valid UTF-8, control characters dropped (a hostile dump must not be able to
// smuggle anything into the page), markup characters escaped. Safe in text and in attributes.
std::string Esc(std::string_view raw) {
  std::string text = ValidUtf8(raw);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) break;
        out += c;
    }
  }
  return out;
}

// At most `limit` characters (UTF-8 aware), with an ellipsis when cut.
std::string Shorten(std::string_view text, size_t limit) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (chars++ == limit) return std::string(text.substr(0, i)) + "\u2026";
  }
  return std::string(text);
}

template <typename Repeated>
std::string RankText(const Repeated& ranks) {
  return FormatRankSet(std::vector<int64_t>(ranks.begin(), ranks.end()));
}

std::string RankCount(size_t n) { return n == 1 ? "1 rank" : fmt::format("{} ranks", n); }

// "2026-03-14 11:21:20.770 UTC" from ns since the epoch.
std::string UtcTime(int64_t ns) {
  time_t seconds = static_cast<time_t>(ns / 1000000000);
  int64_t millis = (ns % 1000000000) / 1000000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  struct tm tm {};
  if (gmtime_r(&seconds, &tm) == nullptr) return "?";
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

// "1.25 s", "340 ms", "12 us": a duration for axis labels.
std::string Duration(double ns) {
  double a = ns < 0 ? -ns : ns;
  if (a >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} us", ns / 1e3);
}

bool IsFailureVerdict(const report::Report& report) {
  const std::string& c = report.verdict().failure_class();
  const std::string& kind = report.verdict().root_cause().kind();
  return (c != "none" && c != "insufficient_evidence" && !c.empty()) ||
         (!kind.empty() && kind != "none" && kind != "unknown");
}

std::string GroupRefText(const report::ProcessGroupRef& group) {
  return group.desc().empty() ? fmt::format("group {}", group.name())
                              : fmt::format("group {} ({})", group.name(), group.desc());
}

// The desc inside a timeline group label "10 (DP)", else the label itself.
std::string DescOfLabel(const std::string& label) {
  size_t open = label.rfind(" (");
  if (open != std::string::npos && label.ends_with(")")) {
    return label.substr(open + 2, label.size() - open - 3);
  }
  return label;
}

bool IsPendingState(const std::string& state) { return state == "scheduled" || state == "started"; }

class HtmlWriter {
 public:
  HtmlWriter(const report::Report& report, const Timeline& timeline,
             const HtmlReportOptions& options)
      : report_(report), timeline_(timeline), options_(options) {
    for (const report::RankReport& rank : report.ranks()) role_[rank.rank()] = rank.role();
    for (int64_t culprit : report.verdict().culprit_ranks()) culprits_.insert(culprit);
    last_slice_.assign(timeline.ranks.size(), -1);
    for (size_t i = 0; i < timeline.slices.size(); ++i) {
      const Timeline::Slice& slice = timeline.slices[i];
      int64_t& last = last_slice_[slice.track];
      if (last < 0 || slice.begin_ns >= timeline.slices[last].begin_ns) last = i;
    }
    ComputeHops();
  }

  std::string Write() {
    const report::Verdict& v = report_.verdict();
    std::string title = options_.title.empty()
                            ? fmt::format("fr-analyze: {}",
                                          v.failure_class().empty() ? "report" : v.failure_class())
                            : options_.title;
    if (options_.fragment) {
      out_ += fmt::format("<div class=\"fr-report\">\n<style>{}</style>\n", kStyle);
    } else {
      out_ += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
      out_ += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
      // Says whose page this is: a report saved beside the evidence is never read as a log.
      out_ += "<meta name=\"generator\" content=\"fr-analyze\">\n";
      out_ += fmt::format(
          "<title>{}</title>\n<style>{}{}</style>\n</head>\n<body>\n<main class=\"fr-report\">\n",
          Esc(title), kPageStyle, kStyle);
    }
    // The verdict first, its root cause after it; with no dump read, the logs' root cause is
    // the whole answer and leads.
    bool logs_only =
        report_.inputs().ranks_loaded().empty() && !report_.verdict().root_cause().kind().empty();
    if (logs_only) RootCause();
    Verdict();
    if (!logs_only) RootCause();
    NextActions();
    WaitGraph();
    TimelinePicture();
    ProcessGroups();
    Findings();
    Inputs();
    out_ += options_.fragment ? "</div>\n" : "</main>\n</body>\n</html>\n";
    return std::move(out_);
  }

 private:
  void Verdict() {
    const report::Verdict& v = report_.verdict();
    out_ += fmt::format("<section id=\"verdict\" class=\"verdict {}\">\n",
                        IsFailureVerdict(report_) ? "fail" : "ok");
    out_ += fmt::format(
        "<h1><span class=\"class\" id=\"failure-class\">{}</span>"
        "<span class=\"confidence\">confidence {}</span></h1>\n",
        Esc(v.failure_class()), Esc(v.confidence()));
    out_ += fmt::format("<p class=\"summary\">{}</p>\n<dl class=\"facts\">\n", Esc(v.summary()));
    out_ +=
        fmt::format("<dt>culprits</dt><dd id=\"culprits\" class=\"culprit\">{}</dd>\n",
                    v.culprit_ranks().empty() ? "none named" : Esc(RankText(v.culprit_ranks())));
    if (!v.victim_ranks().empty()) {
      out_ += fmt::format("<dt>victims</dt><dd id=\"victims\">{} [{}]</dd>\n",
                          RankCount(v.victim_ranks().size()), Esc(RankText(v.victim_ranks())));
    }
    if (v.has_process_group()) {
      out_ += fmt::format("<dt>where</dt><dd>{} {} #{}</dd>\n",
                          Esc(GroupRefText(v.process_group())), Esc(v.op()), v.collective_seq_id());
    }
    const report::Inputs& in = report_.inputs();
    out_ += fmt::format("<dt>dumps</dt><dd>{} read", RankCount(in.ranks_loaded().size()));
    if (!in.ranks_missing().empty()) {
      out_ += fmt::format(", missing [{}]", Esc(RankText(in.ranks_missing())));
    }
    out_ += "</dd>\n";
    if (!in.source().empty()) out_ += fmt::format("<dt>source</dt><dd>{}</dd>\n", Esc(in.source()));
    out_ += "</dl>\n</section>\n";
  }

  void RootCause() {
    const report::RootCause& cause = report_.verdict().root_cause();
    if (cause.kind().empty()) return;
    out_ += "<section id=\"root-cause\">\n";
    out_ += fmt::format("<h2>Root cause from the logs: <span class=\"kind\">{}</span>",
                        Esc(cause.kind()));
    if (!cause.confidence().empty()) {
      out_ +=
          fmt::format("<span class=\"confidence\">confidence {}</span>", Esc(cause.confidence()));
    }
    out_ += "</h2>\n";
    if (!cause.summary().empty())
      out_ += fmt::format("<p class=\"summary\">{}</p>\n", Esc(cause.summary()));
    out_ += "<dl class=\"facts\">\n";
    if (!cause.time().empty()) out_ += fmt::format("<dt>when</dt><dd>{}</dd>\n", Esc(cause.time()));
    if (!cause.ranks().empty()) {
      out_ += fmt::format("<dt>ranks</dt><dd class=\"culprit\">{}</dd>\n",
                          Esc(RankText(cause.ranks())));
    }
    if (!cause.hosts().empty()) {
      std::vector<std::string> hosts(cause.hosts().begin(), cause.hosts().end());
      out_ += fmt::format("<dt>hosts</dt><dd>{}</dd>\n",
                          Esc(fmt::format("{}", fmt::join(hosts, ", "))));
    }
    std::map<std::string, std::string> detail(cause.detail().begin(), cause.detail().end());
    for (const auto& [key, value] : detail) {
      out_ += fmt::format("<dt>{}</dt><dd>{}</dd>\n", Esc(key), Esc(value));
    }
    const report::LauncherReport& launcher = report_.launcher();
    if (!launcher.names().empty()) {
      std::vector<std::string> names(launcher.names().begin(), launcher.names().end());
      out_ += fmt::format("<dt>launcher</dt><dd>{}</dd>\n",
                          Esc(fmt::format("{}", fmt::join(names, " > "))));
    }
    if (launcher.has_death_line()) {
      const report::EvidenceLine& line = launcher.death_line();
      out_ += fmt::format("<dt>its report of the death</dt><dd class=\"mono\">{}:{} {}</dd>\n",
                          Esc(line.file()), line.line(), Esc(Shorten(line.text(), 400)));
    }
    if (!launcher.note().empty()) {
      out_ += fmt::format("<dt>note</dt><dd>{}</dd>\n", Esc(launcher.note()));
    }
    out_ += "</dl>\n";
    if (!cause.disagreement().empty()) {
      out_ += fmt::format("<p><strong>The dumps and the logs disagree:</strong> {}</p>\n",
                          Esc(cause.disagreement()));
    }
    if (!cause.evidence().empty()) {
      out_ +=
          "<h2>Evidence, in corrected time order</h2>\n<table id=\"evidence\">\n"
          "<tr><th>time (corrected)</th><th>host</th><th>rank</th><th>where</th>"
          "<th>line</th></tr>\n";
      size_t shown = 0;
      for (const report::EvidenceLine& line : cause.evidence()) {
        if (shown++ == options_.max_table_rows) break;
        out_ += fmt::format(
            "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}:{}</td>"
            "<td class=\"mono\">{}</td></tr>\n",
            Esc(line.time()), Esc(line.host()),
            line.rank() >= 0 ? fmt::format("{}", line.rank()) : "", Esc(line.file()), line.line(),
            Esc(Shorten(line.text(), 400)));
      }
      out_ += "</table>\n";
      LeftOut(cause.evidence().size(), "evidence lines");
    }
    out_ += "</section>\n";
  }

  void NextActions() {
    const auto& actions = report_.verdict().next_actions();
    if (actions.empty()) return;
    out_ += "<section id=\"next-actions\">\n<h2>What to do next</h2>\n<ol>\n";
    for (const std::string& action : actions) out_ += fmt::format("<li>{}</li>\n", Esc(action));
    out_ += "</ol>\n</section>\n";
  }

  // The wait-for graph, collapsed: ranks that wait in the same kind of op (group desc, op, seq)
  // for the same box are one box, so a chain across three groups is three boxes however many
  // ranks wait. Culprits are the sinks on the right; each column to the left waits for the next.
  void WaitGraph() {
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

  // Each victim's first hop: the verdict's chains (they reach ranks without a dump too), then
  // the timeline's flows, then, for a victim neither names, the op it stopped in, toward the
  // first culprit (what the flows would say if that culprit had left a dump).
  void ComputeHops() {
    for (const report::WaitChain& chain : report_.verdict().chains()) {
      for (const report::WaitEdge& edge : chain.edges()) {
        if (hops_.contains(edge.waiter())) continue;
        std::string what =
            edge.has_process_group()
                ? fmt::format("{} {} #{}",
                              edge.process_group().desc().empty() ? edge.process_group().name()
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

  // "DP all_reduce #25": the kind of group and the op, the same for every group of that kind.
  std::string SliceWhat(const Timeline::Slice& slice) const {
    std::string desc = DescOfLabel(timeline_.String(slice.group));
    return desc.empty() ? timeline_.String(slice.name)
                        : fmt::format("{} {}", desc, timeline_.String(slice.name));
  }

  // The verdict's chains in words, under the picture.
  void ChainsText() {
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

  // Ranks grouped into rows, each row's time in ops shown as cells across the window.
  void TimelinePicture() {
    out_ += "<section id=\"timeline\">\n<h2>Timeline around the failure</h2>\n";
    if (timeline_.slices.empty()) {
      out_ +=
          "<p class=\"note\">The dumps record no op times, so there is no "
          "timeline.</p>\n</section>\n";
      return;
    }
    // Rows.
    auto role_order = [&](int64_t rank) {
      if (culprits_.contains(rank)) return 0;
      auto it = role_.find(rank);
      std::string role = it == role_.end() ? "" : it->second;
      return role == "victim" ? 1 : role == "healthy" ? 2 : 3;
    };
    struct Row {
      std::string label;
      std::string detail;
      std::vector<int64_t> ranks;
      bool culprit = false;
    };
    std::vector<Row> rows;
    std::vector<int> row_of_track(timeline_.ranks.size(), -1);
    std::vector<size_t> tracks(timeline_.ranks.size());
    for (size_t t = 0; t < tracks.size(); ++t) tracks[t] = t;
    std::stable_sort(tracks.begin(), tracks.end(), [&](size_t a, size_t b) {
      return std::make_tuple(role_order(timeline_.ranks[a].rank), timeline_.ranks[a].rank) <
             std::make_tuple(role_order(timeline_.ranks[b].rank), timeline_.ranks[b].rank);
    });
    auto stopped_in = [&](size_t track) -> std::string {
      int64_t last = last_slice_[track];
      if (last < 0) return "no op recorded";
      const Timeline::Slice& s = timeline_.slices[last];
      std::string desc = DescOfLabel(timeline_.String(s.group));
      return fmt::format("{} {}{}", timeline_.String(s.state), desc.empty() ? "" : desc + " ",
                         timeline_.String(s.name));
    };
    auto role_name = [&](int64_t rank) -> std::string {
      if (culprits_.contains(rank)) return "culprit";
      auto it = role_.find(rank);
      return it == role_.end() || it->second.empty() ? "rank" : it->second;
    };
    bool per_rank = timeline_.ranks.size() <= options_.ranks_per_row_limit;
    if (per_rank) {
      for (size_t track : tracks) {
        int64_t rank = timeline_.ranks[track].rank;
        row_of_track[track] = static_cast<int>(rows.size());
        Row& row = rows.emplace_back();
        row.label = fmt::format("rank {}", rank);
        row.detail = role_name(rank) + ", last: " + stopped_in(track);
        row.ranks = {rank};
        row.culprit = culprits_.contains(rank);
      }
    } else {
      std::map<std::tuple<int, std::string>, int> row_of_key;
      for (size_t track : tracks) {
        int64_t rank = timeline_.ranks[track].rank;
        bool culprit = culprits_.contains(rank);
        // A culprit gets a row of its own; other ranks share one by role and stopping point.
        auto hop = hops_.find(rank);
        std::string where = culprit              ? fmt::format("{}", rank)
                            : hop != hops_.end() ? "waits in " + hop->second.what
                                                 : "last: " + stopped_in(track);
        auto key = std::make_tuple(role_order(rank), where);
        auto [it, added] = row_of_key.try_emplace(key, static_cast<int>(rows.size()));
        if (added) {
          Row& row = rows.emplace_back();
          row.detail =
              culprit ? "culprit, last: " + stopped_in(track) : role_name(rank) + ", " + where;
          row.culprit = culprit;
        }
        row_of_track[track] = it->second;
        rows[it->second].ranks.push_back(rank);
      }
      size_t max_rows = std::max<size_t>(options_.max_timeline_rows, 2);
      if (rows.size() > max_rows) {
        size_t keep = max_rows - 1;
        Row other;
        other.detail = "rows merged to keep the picture readable";
        for (size_t r = keep; r < rows.size(); ++r) {
          other.ranks.insert(other.ranks.end(), rows[r].ranks.begin(), rows[r].ranks.end());
        }
        std::sort(other.ranks.begin(), other.ranks.end());
        other.label =
            fmt::format("other {} [{}]", RankCount(other.ranks.size()), FormatRankSet(other.ranks));
        for (int& row : row_of_track) row = std::min(row, static_cast<int>(keep));
        rows.resize(keep);
        rows.push_back(std::move(other));
      }
      for (Row& row : rows) {
        if (row.label.empty()) {
          row.label = row.ranks.size() == 1 ? fmt::format("rank {}", row.ranks[0])
                                            : fmt::format("{} [{}]", RankCount(row.ranks.size()),
                                                          FormatRankSet(row.ranks));
        }
      }
    }
    // The window: from a little before the first op anyone is still waiting in (or the
    // initiating event, if earlier) to the end of the recorded ops.
    int64_t data_begin = timeline_.slices.front().begin_ns, data_end = data_begin;
    for (const Timeline::Slice& s : timeline_.slices) {
      data_begin = std::min(data_begin, s.begin_ns);
      data_end = std::max(data_end, s.end_ns);
    }
    // The moment the job stopped: when a culprit issued its last op (it went silent then), else
    // when the first victim began to wait. The window runs until the last victim began to wait.
    int64_t hang = -1, last_wait = -1;
    for (size_t track = 0; track < timeline_.ranks.size(); ++track) {
      if (timeline_.ranks[track].culprit && last_slice_[track] >= 0) {
        int64_t b = timeline_.slices[last_slice_[track]].begin_ns;
        if (hang < 0 || b < hang) hang = b;
      }
    }
    // A victim stops enqueuing when it blocks: its last op is when it began to wait for good.
    for (size_t track = 0; track < timeline_.ranks.size(); ++track) {
      if (hops_.contains(timeline_.ranks[track].rank) && last_slice_[track] >= 0) {
        last_wait = std::max(last_wait, timeline_.slices[last_slice_[track]].begin_ns);
      }
    }
    if (hang < 0) {
      for (const Timeline::Flow& flow : timeline_.flows) {
        int64_t b = timeline_.slices[flow.from_slice].begin_ns;
        if (hang < 0 || b < hang) hang = b;
      }
    }
    if (hang < 0) hang = data_end - (data_end - data_begin) / 10;
    int64_t root_ns = report_.verdict().root_cause().time_ns();
    int64_t focus = hang;
    if (root_ns > 0 && root_ns < focus && root_ns >= data_begin) focus = root_ns;
    // How far back to look: the time the ranks took for their last kLeadOps ops before the focus
    // (the median over a sample of ranks), so that the picture shows the job's own pace before it
    // stopped, and as much after it. A hang of a 10-minute timeout drawn whole would be one bar.
    constexpr size_t kLeadOps = 24;
    std::vector<int64_t> leads;
    size_t stride = std::max<size_t>(1, timeline_.ranks.size() / 64);
    for (size_t track = 0; track < timeline_.ranks.size(); track += stride) {
      std::vector<int64_t> begins;
      for (int64_t i = last_slice_[track]; i >= 0 && timeline_.slices[i].track == track; --i) {
        if (timeline_.slices[i].begin_ns <= focus) begins.push_back(timeline_.slices[i].begin_ns);
        if (begins.size() == kLeadOps) break;
      }
      if (!begins.empty()) leads.push_back(focus - begins.back());
    }
    int64_t lead = 0;
    if (!leads.empty()) {
      std::nth_element(leads.begin(), leads.begin() + leads.size() / 2, leads.end());
      lead = leads[leads.size() / 2];
    }
    lead = std::max<int64_t>(lead, 1'000'000);
    int64_t begin = std::max(data_begin, focus - lead);
    int64_t end = std::min(data_end, std::max(focus + lead, last_wait + lead / 4));
    if (end <= begin) end = begin + 1;
    size_t bins = std::max<size_t>(options_.time_bins, 1);
    double bin_ns = static_cast<double>(end - begin) / static_cast<double>(bins);
    // Occupancy per row and cell: the fraction of the row's rank-time spent in ops.
    std::vector<double> pending(rows.size() * bins, 0.0), finished(rows.size() * bins, 0.0);
    // A rank works until its last enqueue and waits after it: ops that ended count only up to
    // the rank's last enqueue (the watchdog may notice completions much later), pending ones only
    // from it (a recv posted early is not a wait while the rank goes on issuing ops).
    for (size_t i = 0; i < timeline_.slices.size(); ++i) {
      const Timeline::Slice& s = timeline_.slices[i];
      int row = row_of_track[s.track];
      int64_t last_op = last_slice_[s.track];
      int64_t stopped = last_op < 0 ? s.end_ns : timeline_.slices[last_op].begin_ns;
      bool is_pending = IsPendingState(timeline_.String(s.state));
      int64_t from = is_pending ? std::max(s.begin_ns, stopped) : s.begin_ns;
      int64_t to =
          is_pending || static_cast<int64_t>(i) == last_op ? s.end_ns : std::min(s.end_ns, stopped);
      to = std::max(to, from + 1);
      if (row < 0 || to <= begin || from >= end) continue;
      double b = static_cast<double>(std::max(from, begin) - begin);
      double e = static_cast<double>(std::min(to, end) - begin);
      std::vector<double>& into = is_pending ? pending : finished;
      size_t first = std::min(bins - 1, static_cast<size_t>(b / bin_ns));
      size_t last = std::min(bins - 1, static_cast<size_t>(e / bin_ns));
      for (size_t bin = first; bin <= last; ++bin) {
        double lo = std::max(b, bin * bin_ns), hi = std::min(e, (bin + 1) * bin_ns);
        if (hi > lo) into[row * bins + bin] += (hi - lo) / bin_ns;
      }
    }
    constexpr int kLabelW = 300, kCellW = 5, kRowH = 18, kTop = 26, kAxisH = 34;
    int plot_w = static_cast<int>(bins) * kCellW;
    int width = kLabelW + plot_w + 20;
    int height = kTop + static_cast<int>(rows.size()) * kRowH + kAxisH;
    out_ +=
        "<p class=\"legend\">"
        "<span><i style=\"background:#e8590c\"></i>waiting: its last op still pending at the "
        "dump</span>"
        "<span><i style=\"background:#4263eb\"></i>working: issuing ops that ended</span>"
        "<span><i style=\"background:#2b8a3e\"></i>a log event</span>"
        "<span><i style=\"background:#c92a2a\"></i>culprit; the initiating event</span>"
        "</p>\n";
    out_ += fmt::format(
        "<svg id=\"timeline-svg\" width=\"{}\" height=\"{}\" "
        "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"timeline\">\n",
        width, height, width, height);
    for (size_t r = 0; r < rows.size(); ++r) {
      const Row& row = rows[r];
      int y = kTop + static_cast<int>(r) * kRowH;
      if (r % 2 == 1) {
        out_ +=
            fmt::format("<rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f8f9fa\"/>\n", y,
                        width, kRowH);
      }
      out_ +=
          fmt::format("<g class=\"row{}\"><title>{}: {}</title><text x=\"4\" y=\"{}\"{}>{}</text>",
                      row.culprit ? " culprit-row" : "", Esc(row.label), Esc(row.detail), y + 13,
                      row.culprit ? " fill=\"#c92a2a\" font-weight=\"bold\"" : "",
                      Esc(Shorten(row.label + " \u00b7 " + row.detail, 44)));
      for (size_t bin = 0; bin < bins; ++bin) {
        // Shares of the row's rank-time (overlapping ops of one rank can count twice: capped).
        double n = static_cast<double>(std::max<size_t>(row.ranks.size(), 1));
        double p = std::min(1.0, pending[r * bins + bin] / n);
        double f = std::min(1.0, finished[r * bins + bin] / n);
        bool working = f >= p;
        double share = working ? f : p;
        if (share < 0.02) continue;
        out_ += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
            "fill-opacity=\"{:.2f}\"/>",
            kLabelW + static_cast<int>(bin) * kCellW, y + 2, kCellW, kRowH - 4,
            working ? kFinishedColor : kPendingColor, 0.3 + 0.7 * share);
      }
      if (row.culprit) {
        out_ += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\" "
            "stroke-width=\"1.5\"/>",
            kLabelW - 2, y + 1, plot_w + 4, kRowH - 2, kCulpritColor);
      }
      out_ += "</g>\n";
    }
    // Log events: one tick per row and cell at most.
    std::set<std::pair<int, size_t>> ticks;
    for (const Timeline::Instant& instant : timeline_.instants) {
      if (instant.track < 0 || instant.ns < begin || instant.ns >= end) continue;
      int row = row_of_track[instant.track];
      size_t bin = std::min(bins - 1, static_cast<size_t>((instant.ns - begin) / bin_ns));
      if (row < 0 || !ticks.insert({row, bin}).second) continue;
      int x = kLabelW + static_cast<int>(bin) * kCellW + kCellW / 2;
      int y = kTop + row * kRowH;
      out_ += fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\">"
          "<title>{}: {}</title></line>\n",
          x, y + 1, x, y + kRowH - 1, kEventColor, Esc(timeline_.String(instant.name)),
          Esc(Shorten(timeline_.String(instant.text), 300)));
    }
    auto x_of = [&](int64_t ns) {
      return kLabelW + static_cast<int>(static_cast<double>(ns - begin) / bin_ns * kCellW);
    };
    int plot_bottom = kTop + static_cast<int>(rows.size()) * kRowH;
    if (root_ns >= begin && root_ns <= end && root_ns > 0) {
      int x = x_of(root_ns);
      out_ += fmt::format(
          "<g id=\"initiating-event\"><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
          "stroke-width=\"2\" stroke-dasharray=\"5 3\"/><text x=\"{}\" y=\"14\" fill=\"{}\">"
          "initiating event: {}</text></g>\n",
          x, kTop - 6, x, plot_bottom, kCulpritColor, std::max(x - 60, kLabelW), kCulpritColor,
          Esc(report_.verdict().root_cause().kind()));
    }
    int64_t dump_ns = report_.inputs().dump_time_ns();
    if (dump_ns >= begin && dump_ns <= end && dump_ns > 0) {
      int x = x_of(dump_ns);
      out_ += fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#868e96\" stroke-dasharray=\"2 "
          "3\"/>"
          "<text x=\"{}\" y=\"14\" fill=\"#868e96\" text-anchor=\"end\">dumps taken</text>\n",
          x, kTop - 6, x, plot_bottom, x);
    }
    // Axis: five ticks, times from the window's start.
    out_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#495057\"/>\n",
                        kLabelW, plot_bottom + 2, kLabelW + plot_w, plot_bottom + 2);
    for (int tick = 0; tick <= 4; ++tick) {
      int x = kLabelW + plot_w * tick / 4;
      double ns = static_cast<double>(end - begin) * tick / 4;
      out_ += fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#495057\"/>"
          "<text class=\"small\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">+{}</text>\n",
          x, plot_bottom + 2, x, plot_bottom + 7, x, plot_bottom + 20,
          tick == 0   ? "start"
          : tick == 4 ? "end"
                      : "middle",
          Duration(ns));
    }
    out_ += "</svg>\n";
    out_ += fmt::format(
        "<p class=\"note\">{} from {} (corrected clock){}; {} in {} rows{}. A cell's shade "
        "is the share of its row's ranks working or waiting then.</p>\n",
        Duration(static_cast<double>(end - begin)), UtcTime(begin),
        end < data_end ? fmt::format(", around the moment the job stopped; the pending ops go on "
                                     "{} past the right edge, to the dumps",
                                     Duration(static_cast<double>(data_end - end)))
                       : "",
        RankCount(timeline_.ranks.size()), rows.size(),
        per_rank ? "" : ", grouped by role and where each rank stopped");
    out_ += "</section>\n";
  }

  void ProcessGroups() {
    std::vector<const report::ProcessGroupReport*> problems;
    std::vector<const report::ProcessGroupReport*> healthy;
    for (const report::ProcessGroupReport& group : report_.process_groups()) {
      // The text report's rule: a group has a problem where its members disagree or stop.
      (group.first_divergence_seq() >= 0 ? problems : healthy).push_back(&group);
    }
    out_ += fmt::format(
        "<section id=\"process-groups\">\n<h2>Process groups: {} with problems, {} without</h2>\n",
        problems.size(), healthy.size());
    if (!problems.empty()) {
      out_ +=
          "<table id=\"problem-groups\">\n<tr><th>group</th><th>members</th>"
          "<th>first divergence</th><th>ranks</th><th>where they are</th></tr>\n";
      size_t shown = 0;
      for (const report::ProcessGroupReport* group : problems) {
        if (shown++ == options_.max_table_rows) break;
        std::string states;
        for (const report::RankStateGroup& state : group->states()) {
          if (!states.empty()) states += "<br>";
          // A member that did not issue the op its group stops at is shown with the last op it
          // did issue (what the state's op and seq are), as the text report does.
          const bool not_issued = state.state() == "not issued";
          states += fmt::format("[{}] {}{} {}", Esc(state.ranks_text()), Esc(state.state()),
                                not_issued ? " (last issued" : "", Esc(state.op()));
          if (state.seq_id() >= 0) states += fmt::format(" #{}", state.seq_id());
          if (not_issued) states += ")";
        }
        out_ += fmt::format(
            "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td>"
            "<td class=\"mono\">{}</td></tr>\n",
            Esc(GroupRefText(group->group())), Esc(RankText(group->group().ranks())),
            group->first_divergence_seq() >= 0 ? fmt::format("#{}", group->first_divergence_seq())
                                               : "-",
            group->collectives_matched() > 0
                ? fmt::format("{} matched", group->collectives_matched())
                : "",
            states);
      }
      out_ += "</table>\n";
      LeftOut(problems.size(), "groups with problems");
    }
    if (!healthy.empty()) {
      out_ +=
          fmt::format("<details><summary>{} groups without problems</summary>\n<p class=\"mono\">",
                      healthy.size());
      size_t shown = 0;
      for (const report::ProcessGroupReport* group : healthy) {
        if (shown++ == options_.max_table_rows * 4) break;
        out_ += fmt::format("{}{}", shown > 1 ? ", " : "", Esc(GroupRefText(group->group())));
      }
      out_ += "</p>\n";
      LeftOut(healthy.size(), "groups", options_.max_table_rows * 4);
      out_ += "</details>\n";
    }
    out_ += "</section>\n";
  }

  void Stack(std::string_view title, const google::protobuf::RepeatedPtrField<std::string>& stack,
             bool open) {
    if (stack.empty()) return;
    out_ += fmt::format("<details class=\"stack\"{}><summary>{}</summary><pre>",
                        open ? " open" : "", Esc(title));
    for (const std::string& frame : stack) out_ += Esc(frame) + "\n";
    out_ += "</pre></details>\n";
  }

  void Findings() {
    out_ += fmt::format("<section id=\"findings\">\n<h2>Findings ({})</h2>\n",
                        report_.findings().size());
    if (report_.findings().empty()) out_ += "<p class=\"note\">Nothing wrong was found.</p>\n";
    size_t shown = 0;
    for (const report::Finding& finding : report_.findings()) {
      if (shown++ == options_.max_table_rows) break;
      out_ += "<div class=\"finding\">\n";
      out_ +=
          fmt::format("<p><span class=\"kind\">{}</span> <span class=\"note\">({})</span> {}</p>\n",
                      Esc(finding.kind()), Esc(finding.confidence()), Esc(finding.summary()));
      if (!finding.evidence().empty()) {
        out_ += "<ul>\n";
        for (const std::string& line : finding.evidence()) {
          out_ += fmt::format("<li class=\"mono\">{}</li>\n", Esc(line));
        }
        out_ += "</ul>\n";
      }
      std::string at = finding.stack_at().empty() ? "" : " at " + finding.stack_at();
      std::string whose = finding.ranks().empty()
                              ? "Stack"
                              : fmt::format("Stack of rank {}", RankText(finding.ranks()));
      Stack(whose + at, finding.stack(), false);
      if (finding.has_majority_rank()) {
        Stack(fmt::format("Stack of rank {} (the majority) at the same collective",
                          finding.majority_rank()),
              finding.majority_stack(), false);
      }
      out_ += "</div>\n";
    }
    LeftOut(report_.findings().size(), "findings");
    out_ += "</section>\n";
  }

  void Inputs() {
    const report::Inputs& in = report_.inputs();
    out_ += "<section id=\"inputs\">\n<h2>What was read</h2>\n<dl class=\"facts\">\n";
    out_ += fmt::format("<dt>dumps read</dt><dd>{} [{}]</dd>\n",
                        RankCount(in.ranks_loaded().size()), Esc(RankText(in.ranks_loaded())));
    if (!in.ranks_missing().empty()) {
      out_ +=
          fmt::format("<dt>ranks missing</dt><dd>[{}]</dd>\n", Esc(RankText(in.ranks_missing())));
    }
    std::vector<std::string> versions(in.versions().begin(), in.versions().end());
    if (!versions.empty()) {
      out_ += fmt::format("<dt>dump versions</dt><dd>{}</dd>\n",
                          Esc(fmt::format("{}", fmt::join(versions, ", "))));
    }
    if (in.dump_time_ns() > 0) {
      out_ += fmt::format("<dt>dumps taken</dt><dd>{} ({}, confidence {})</dd>\n",
                          UtcTime(in.dump_time_ns()), Esc(in.dump_time_source()),
                          Esc(in.dump_time_confidence()));
    }
    out_ += fmt::format("<dt>log files</dt><dd>{}</dd>\n", report_.log_files().size());
    out_ += "</dl>\n";
    if (!in.files_rejected().empty()) {
      out_ +=
          "<h2>Files that could not be used</h2>\n<table id=\"rejected\">\n"
          "<tr><th>file</th><th>why</th></tr>\n";
      size_t shown = 0;
      for (const report::RejectedFile& file : in.files_rejected()) {
        if (shown++ == options_.max_table_rows) break;
        out_ += fmt::format("<tr><td class=\"mono\">{}</td><td>{}</td></tr>\n", Esc(file.path()),
                            Esc(file.error()));
      }
      out_ += "</table>\n";
      LeftOut(in.files_rejected().size(), "files");
    }
    if (!report_.timeline().hosts().empty()) {
      out_ +=
          "<h2>Host clocks</h2>\n<table id=\"host-clocks\">\n<tr><th>host</th><th>offset</th>"
          "<th>drift</th><th>how</th><th>confidence</th></tr>\n";
      size_t shown = 0;
      for (const report::HostClock& host : report_.timeline().hosts()) {
        if (shown++ == options_.max_table_rows) break;
        out_ += fmt::format(
            "<tr><td>{}</td><td class=\"mono\">{} ms</td><td class=\"mono\">{:.1f} ppm</td>"
            "<td>{}</td><td>{}</td></tr>\n",
            Esc(host.host()), host.offset_ms(), host.drift_ppm(), Esc(host.method()),
            Esc(host.confidence()));
      }
      out_ += "</table>\n";
      LeftOut(report_.timeline().hosts().size(), "hosts");
    }
    out_ += "</section>\n";
  }

  void LeftOut(size_t total, std::string_view what, size_t shown_at_most = 0) {
    size_t limit = shown_at_most == 0 ? options_.max_table_rows : shown_at_most;
    if (total > limit) {
      out_ += fmt::format(
          "<p class=\"note\">{} more {} not shown (the JSON report has them all).</p>\n",
          total - limit, what);
    }
  }

  const report::Report& report_;
  const Timeline& timeline_;
  const HtmlReportOptions& options_;
  std::map<int64_t, std::string> role_;
  std::set<int64_t> culprits_;
  std::vector<int64_t> last_slice_;  // per track, index into timeline_.slices or -1
  struct Hop {
    int64_t target = -1;
    std::string what;  // where the waiter waits: "DP all_reduce #25"
  };
  std::map<int64_t, Hop> hops_;  // victim -> its first hop
  std::string out_;
};

}  // namespace

std::string WriteHtmlReport(const report::Report& report, const Timeline& timeline,
                            const HtmlReportOptions& options) {
  return HtmlWriter(report, timeline, options).Write();
}

}  // namespace fr
