#include "fr/html/html_report.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fr/load/load.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "fr/timeline/timeline.h"
#include "fr/verdict/analyze.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

namespace fs = std::filesystem;

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The text between `open` (the first occurrence at or after `from`) and the next `close`.
std::string Between(const std::string& text, const std::string& open, const std::string& close) {
  size_t begin = text.find(open);
  if (begin == std::string::npos) return "";
  begin += open.size();
  size_t end = text.find(close, begin);
  return end == std::string::npos ? "" : text.substr(begin, end - begin);
}

// A simulated job whose rank `stuck` never issued a DP collective, loaded from disk, analysed and
// drawn; the expectations come from what the simulation set up.
struct Drawn {
  GroundTruth truth;
  report::Report report;
  Timeline timeline;
  std::string html;
};

Drawn StuckJob(int tp, int pp, int dp, int64_t stuck) {
  JobSimulatorOptions options;
  options.tensor_parallel = tp;
  options.pipeline_parallel = pp;
  options.data_parallel = dp;
  options.steps = 8;
  options.fault.kind = FaultKind::kStuckBeforeOp;
  options.fault.rank = stuck;
  options.fault.step = 6;
  absl::StatusOr<SimulatedJob> simulated = SimulateJob(options);
  EXPECT_TRUE(simulated.ok()) << simulated.status();
  fs::path dir = fs::path(::testing::TempDir()) /
                 fmt::format("fr_html_{}_{}_{}", ::getpid(), tp * pp * dp, stuck);
  fs::remove_all(dir);
  EXPECT_TRUE(WriteSimulatedJob(*simulated, dir.string(), {}).ok());
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  EXPECT_TRUE(trace.ok()) << trace.status();
  Drawn drawn;
  drawn.truth = simulated->ground_truth();
  LogSet no_logs;
  AnalyzeOptions analyze;
  analyze.source = dir.string();
  drawn.report = Analyze(*trace, &no_logs, analyze);
  drawn.timeline = BuildTimeline(*trace, no_logs, drawn.report);
  drawn.html = WriteHtmlReport(drawn.report, drawn.timeline);
  fs::remove_all(dir);
  return drawn;
}

TEST(HtmlReportTest, VerdictComesFirstAndNamesTheInjectedCulprit) {
  Drawn drawn = StuckJob(2, 2, 4, 5);
  ASSERT_EQ(drawn.truth.culprit_ranks, std::vector<int64_t>{5});
  const std::string& html = drawn.html;
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(html.ends_with("</html>\n"));
  // The sections a reader meets, in this order: the verdict before any picture or table.
  std::vector<std::string> order = {"id=\"verdict\"",  "id=\"next-actions\"",   "id=\"wait-graph\"",
                                    "id=\"timeline\"", "id=\"process-groups\"", "id=\"findings\"",
                                    "id=\"inputs\""};
  size_t last = 0;
  for (const std::string& id : order) {
    size_t at = html.find(id);
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_GT(at, last) << id << " is out of order";
    last = at;
  }
  EXPECT_EQ(Between(html, "<dd id=\"culprits\" class=\"culprit\">", "</dd>"), "5");
  EXPECT_EQ(Between(html, "<span class=\"class\" id=\"failure-class\">", "</span>"),
            drawn.truth.failure_class);
}

TEST(HtmlReportTest, SelfContainedWithNothingToFetch) {
  Drawn drawn = StuckJob(2, 2, 2, 3);
  const std::string& html = drawn.html;
  EXPECT_EQ(Count(html, "<script"), 0);
  EXPECT_EQ(Count(html, "<link"), 0);
  EXPECT_EQ(Count(html, "<img"), 0);
  EXPECT_EQ(Count(html, "@import"), 0);
  EXPECT_EQ(Count(html, " src="), 0);
  EXPECT_EQ(Count(html, " href="), 0);
  // No URL at all (inline SVG needs no namespace in HTML), so nothing can be fetched.
  EXPECT_EQ(Count(html, "http://"), 0);
  EXPECT_EQ(Count(html, "https://"), 0);
  std::regex css_url(R"(url\(([^)]*)\))");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), css_url);
       it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE((*it)[1].str().starts_with("#")) << it->str();
  }
}

TEST(HtmlReportTest, WaitGraphEndsAtTheCulpritAndCountsEveryVictimOnce) {
  Drawn drawn = StuckJob(2, 2, 4, 5);
  std::string svg = Between(drawn.html, "<svg id=\"wait-graph-svg\"", "</svg>");
  ASSERT_FALSE(svg.empty());
  // One sink box, the culprit's.
  EXPECT_EQ(Count(svg, "class=\"node culprit-node\""), 1);
  EXPECT_NE(svg.find("<title>rank 5\nculprit"), std::string::npos);
  // Every victim sits in exactly one box: the box titles' rank counts add up to the victims.
  std::regex box(R"(<g class="node"><title>(?:rank \d+|(\d+) ranks \[))");
  int ranks_in_boxes = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator();
       ++it) {
    ranks_in_boxes += (*it)[1].matched ? std::stoi((*it)[1].str()) : 1;
  }
  EXPECT_EQ(ranks_in_boxes, drawn.report.verdict().victim_ranks_size());
  // Each box but the sink has one arrow out.
  EXPECT_EQ(Count(svg, "class=\"edge\""), Count(svg, "<g class=\"node\">"));
}

TEST(HtmlReportTest, TimelineHighlightsTheCulpritsRowAndShowsTheVictimsWaiting) {
  Drawn drawn = StuckJob(2, 2, 2, 6);
  std::string svg = Between(drawn.html, "<svg id=\"timeline-svg\"", "</svg>");
  ASSERT_FALSE(svg.empty());
  // 8 ranks: one row each; the culprit's row is the one outlined.
  EXPECT_EQ(Count(svg, "<g class=\"row"), 8);
  EXPECT_EQ(Count(svg, "<g class=\"row culprit-row\"><title>rank 6:"), 1);
  // Victims wait in ops that stay pending until the dumps: such cells are drawn.
  EXPECT_GT(Count(svg, "fill=\"#e8590c\""), 0);
  EXPECT_GT(Count(svg, "fill=\"#4263eb\""), 0);
}

TEST(HtmlReportTest, HostileTextIsEscapedAndControlCharactersDropped) {
  report::Report report;
  report.mutable_verdict()->set_failure_class("missing_participant");
  report.mutable_verdict()->set_summary("<script>alert(1)</script>\x1b[2J\x07 \"quoted\" & 'more'");
  report.mutable_verdict()->add_culprit_ranks(3);
  report::Finding* finding = report.add_findings();
  finding->set_kind("missing_participant");
  finding->add_stack("evil</pre><img src=x onerror=alert(1)> (x.py:1)");
  std::string html = WriteHtmlReport(report, Timeline());
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find('\x1b'), std::string::npos);
  EXPECT_EQ(html.find('\x07'), std::string::npos);
  EXPECT_NE(
      html.find("&lt;script&gt;alert(1)&lt;/script&gt;[2J &quot;quoted&quot; &amp; &#39;more&#39;"),
      std::string::npos);
  EXPECT_NE(html.find("evil&lt;/pre&gt;&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  // With no timeline, the picture says why it is absent instead of drawing nothing.
  EXPECT_NE(html.find("record no op times"), std::string::npos);
}

TEST(HtmlReportTest, SameInputGivesTheSameBytes) {
  Drawn drawn = StuckJob(2, 2, 2, 5);
  EXPECT_EQ(WriteHtmlReport(drawn.report, drawn.timeline), drawn.html);
}

// 4096 ranks x 200 ops, built directly (the simulator would take long): the page stays small,
// with rows and boxes capped, because ranks are aggregated instead of drawn one by one.
TEST(HtmlReportTest, StaysSmallAt4096Ranks) {
  constexpr int kRanks = 4096, kOps = 200, kStuck = 1234;
  Timeline timeline;
  report::Report report;
  report.mutable_verdict()->set_failure_class("missing_participant");
  report.mutable_verdict()->add_culprit_ranks(kStuck);
  uint32_t host = timeline.Intern("node0");
  timeline.hosts.push_back(host);
  uint32_t completed = timeline.Intern("completed"), scheduled = timeline.Intern("scheduled");
  std::vector<uint32_t> groups;
  for (int g = 0; g < 512; ++g) groups.push_back(timeline.Intern(fmt::format("{} (DP)", g + 10)));
  uint32_t op = timeline.Intern("all_reduce");
  for (int r = 0; r < kRanks; ++r) {
    timeline.ranks.push_back({.rank = r, .host = 0, .culprit = r == kStuck});
    report::RankReport* row = report.add_ranks();
    row->set_rank(r);
    row->set_role(r == kStuck ? "culprit" : "victim");
    if (r != kStuck) report.mutable_verdict()->add_victim_ranks(r);
    int ops = r == kStuck ? kOps - 1 : kOps;
    for (int s = 0; s < ops; ++s) {
      Timeline::Slice slice;
      slice.track = r;
      slice.begin_ns = 1'000'000'000LL + s * 10'000'000LL + r * 1000;
      slice.end_ns =
          s + 1 == kOps ? slice.begin_ns + 600'000'000'000LL : slice.begin_ns + 9'000'000;
      slice.group = groups[r % 512];
      slice.op = op;
      slice.state = s + 1 == kOps ? scheduled : completed;
      slice.seq = s;
      timeline.slices.push_back(slice);
    }
  }
  uint32_t culprit_last = 0;
  for (uint32_t i = 0; i < timeline.slices.size(); ++i) {
    if (timeline.slices[i].track == kStuck) culprit_last = i;
  }
  for (uint32_t i = 0; i < timeline.slices.size(); ++i) {
    const Timeline::Slice& s = timeline.slices[i];
    if (s.state == scheduled)
      timeline.flows.push_back({.id = i + 1ull, .from_slice = i, .to_slice = culprit_last});
  }
  std::string html = WriteHtmlReport(report, timeline);
  EXPECT_LT(html.size(), 1'500'000u) << "bytes";
  std::string svg = Between(html, "<svg id=\"timeline-svg\"", "</svg>");
  EXPECT_LE(Count(svg, "<g class=\"row"), 40);
  EXPECT_EQ(Count(svg, "<g class=\"row culprit-row\"><title>rank 1234:"), 1);
  std::string graph = Between(html, "<svg id=\"wait-graph-svg\"", "</svg>");
  EXPECT_LE(Count(graph, "<g class=\"node"), 40);
  // The 4095 victims wait in DP groups for the culprit: one box, not 4095.
  EXPECT_NE(graph.find("<title>4095 ranks ["), std::string::npos);
}

}  // namespace
}  // namespace fr
