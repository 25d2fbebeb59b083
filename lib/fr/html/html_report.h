// The self-contained HTML report: one file that opens offline on a laptop (no network, no
// scripts, no external fonts or images) and shows, in this order, the verdict and the root cause
// with its evidence lines, what to do next, the wait-for graph (victims collapsed by the op they
// wait in, the culprit as the sink), a timeline of the window around the failure (ranks grouped
// by role and where they stopped, the culprit highlighted, the initiating event marked), the
// process groups with problems (healthy ones folded into a count), the findings with their stacks
// on click (<details>), and what was read.
//
//   report::Report report = Analyze(trace, &logs, options);
//   Timeline timeline = BuildTimeline(trace, logs, report);
//   std::string html = WriteHtmlReport(report, timeline);   // fr-analyze report DIR -o r.html
//
// Sizes stay bounded at any scale: the timeline aggregates ranks into at most
// `HtmlReportOptions::max_timeline_rows` rows of `time_bins` cells (never one box per op), the
// graph into at most `max_graph_nodes` nodes, and every table is capped with a line saying how
// many rows were left out. Every string that came from a file is escaped and stripped of control
// characters. The output is deterministic: the same report and timeline give the same bytes.
#ifndef FR_HTML_HTML_REPORT_H_
#define FR_HTML_HTML_REPORT_H_

#include <cstddef>
#include <string>

#include "fr/report.pb.h"
#include "fr/timeline/timeline.h"

namespace fr {

struct HtmlReportOptions {
  // Up to this many ranks, the timeline has one row per rank; beyond it, one row per group of
  // ranks that share a role and the op they stopped in.
  size_t ranks_per_row_limit = 64;
  // Rows of the timeline picture at most; the rest are merged into one "other ranks" row.
  size_t max_timeline_rows = 40;
  // Columns of the timeline picture (cells across the window).
  size_t time_bins = 160;
  // Boxes of the wait-for graph at most (culprits included); the rest are counted.
  size_t max_graph_nodes = 40;
  // Rows of each table at most (process groups with problems, findings, files).
  size_t max_table_rows = 60;
  // The page's title; empty: "fr-analyze: <failure class>".
  std::string title;
  // A fragment to embed (a notebook cell's output): one <div class="fr-report"> with its scoped
  // <style>, no <html>, <head> or <body>. The page and the fragment show the same sections.
  bool fragment = false;
};

// The report as one HTML document (UTF-8). Never fails: missing parts are left out with a line
// that says so.
std::string WriteHtmlReport(const report::Report& report, const Timeline& timeline,
                            const HtmlReportOptions& options = {});

}  // namespace fr

#endif  // FR_HTML_HTML_REPORT_H_
