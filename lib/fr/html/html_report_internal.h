// The HTML report's own parts, shared by its three files and by nothing else (not installed, not
// included outside lib/fr/html): the text helpers every section uses (escaping, shortening, rank
// sets, times), the colours that mean the same in every picture, and HtmlWriter, which writes the
// page section by section. The page shell, its style and the text sections are in
// html_report.cc, the wait-for graph in wait_graph.cc and the timeline picture in
// timeline_picture.cc.
//
//   std::string html = HtmlWriter(report, timeline, options).Write();
#ifndef FR_HTML_HTML_REPORT_INTERNAL_H_
#define FR_HTML_HTML_REPORT_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fr/base/rank_set.h"
#include "fr/html/html_report.h"
#include "fr/report.pb.h"
#include "fr/timeline/timeline.h"

namespace fr::html_internal {

// Colours: one meaning each, the same in the graph, the timeline and the legend.
inline constexpr std::string_view kCulpritColor = "#c92a2a";
inline constexpr std::string_view kPendingColor = "#e8590c";
inline constexpr std::string_view kFinishedColor = "#4263eb";
inline constexpr std::string_view kEventColor = "#2b8a3e";

// Text for HTML: valid UTF-8, control characters dropped (a hostile dump must not be able to
// smuggle anything into the page), markup characters escaped. Safe in text and in attributes.
std::string Esc(std::string_view raw);

// At most `limit` characters (UTF-8 aware), with an ellipsis when cut.
std::string Shorten(std::string_view text, size_t limit);

template <typename Repeated>
std::string RankText(const Repeated& ranks) {
  return FormatRankSet(std::vector<int64_t>(ranks.begin(), ranks.end()));
}

// "1 rank", "3 ranks".
std::string RankCount(size_t n);

// "2026-03-14 11:21:20.770 UTC" from ns since the epoch.
std::string UtcTime(int64_t ns);

// "group 3 (DP)", or "group 3" when the group has no desc.
std::string GroupRefText(const report::ProcessGroupRef& group);

// The desc inside a timeline group label "10 (DP)", else the label itself.
std::string DescOfLabel(const std::string& label);

// Writes one report and its timeline as one page: one writer per page, Write() called once.
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

  // The whole page (or fragment), section by section.
  std::string Write();

 private:
  // The text sections (html_report.cc).
  void Verdict();
  void RootCause();
  void NextActions();
  void ProcessGroups();
  void Stack(std::string_view title, const google::protobuf::RepeatedPtrField<std::string>& stack,
             bool open);
  void Findings();
  void Inputs();
  // A line saying how many of `total` rows were not shown, when more than `shown_at_most`
  // (0: options_.max_table_rows).
  void LeftOut(size_t total, std::string_view what, size_t shown_at_most = 0);

  // The wait-for graph (wait_graph.cc).

  // The wait-for graph, collapsed: ranks that wait in the same kind of op (group desc, op, seq)
  // for the same box are one box, so a chain across three groups is three boxes however many
  // ranks wait. Culprits are the sinks on the right; each column to the left waits for the next.
  void WaitGraph();

  // Each victim's first hop: the verdict's chains (they reach ranks without a dump too), then
  // the timeline's flows, then, for a victim neither names, the op it stopped in, toward the
  // first culprit (what the flows would say if that culprit had left a dump).
  void ComputeHops();

  // "DP all_reduce #25": the kind of group and the op, the same for every group of that kind.
  std::string SliceWhat(const Timeline::Slice& slice) const;

  // The verdict's chains in words, under the picture.
  void ChainsText();

  // The timeline picture (timeline_picture.cc).

  // Ranks grouped into rows, each row's time in ops shown as cells across the window.
  void TimelinePicture();

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

}  // namespace fr::html_internal

#endif  // FR_HTML_HTML_REPORT_INTERNAL_H_
