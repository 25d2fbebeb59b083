// The timeline picture: which ranks share a row, which window of time around the moment the job
// stopped is drawn, and how busy or waiting each row is in each cell of it, with the log events,
// the initiating event and the dump time marked on it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fr/html/html_report_internal.h"

namespace fr::html_internal {
namespace {

// "1.25 s", "340 ms", "12 us": a duration for axis labels.
std::string Duration(double ns) {
  double a = ns < 0 ? -ns : ns;
  if (a >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} us", ns / 1e3);
}

bool IsPendingState(const std::string& state) { return state == "scheduled" || state == "started"; }

}  // namespace

void HtmlWriter::TimelinePicture() {
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
                       timeline_.SliceName(s));
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
      out_ += fmt::format("<rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f8f9fa\"/>\n",
                          y, width, kRowH);
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

}  // namespace fr::html_internal
