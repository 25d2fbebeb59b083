// The page: its shell (a whole document or a fragment to embed), its one scoped style sheet, the
// order of its sections and the sections written as text and tables (the verdict, the root cause
// from the logs, what to do next, the process groups, the findings, what was read), and how text
// from the files is made safe for it.
#include "fr/html/html_report.h"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/html/html_report_internal.h"

namespace fr {
namespace html_internal {
namespace {

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
.fr-report td{overflow-wrap:anywhere}
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

bool IsFailureVerdict(const report::Report& report) {
  const std::string& c = report.verdict().failure_class();
  const std::string& kind = report.verdict().root_cause().kind();
  return (c != "none" && c != "insufficient_evidence" && !c.empty()) ||
         (!kind.empty() && kind != "none" && kind != "unknown");
}

}  // namespace

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

std::string Shorten(std::string_view text, size_t limit) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (chars++ == limit) return std::string(text.substr(0, i)) + "\u2026";
  }
  return std::string(text);
}

std::string RankCount(size_t n) { return n == 1 ? "1 rank" : fmt::format("{} ranks", n); }

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

std::string GroupRefText(const report::ProcessGroupRef& group) {
  return group.desc().empty() ? fmt::format("group {}", group.name())
                              : fmt::format("group {} ({})", group.name(), group.desc());
}

std::string DescOfLabel(const std::string& label) {
  size_t open = label.rfind(" (");
  if (open != std::string::npos && label.ends_with(")")) {
    return label.substr(open + 2, label.size() - open - 3);
  }
  return label;
}

std::string HtmlWriter::Write() {
  const report::Verdict& v = report_.verdict();
  std::string title =
      options_.title.empty()
          ? fmt::format("fr-analyze: {}", v.failure_class().empty() ? "report" : v.failure_class())
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

void HtmlWriter::Verdict() {
  const report::Verdict& v = report_.verdict();
  out_ += fmt::format("<section id=\"verdict\" class=\"verdict {}\">\n",
                      IsFailureVerdict(report_) ? "fail" : "ok");
  out_ += fmt::format(
      "<h1><span class=\"class\" id=\"failure-class\">{}</span>"
      "<span class=\"confidence\">confidence {}</span></h1>\n",
      Esc(v.failure_class()), Esc(v.confidence()));
  out_ += fmt::format("<p class=\"summary\">{}</p>\n<dl class=\"facts\">\n", Esc(v.summary()));
  out_ += fmt::format("<dt>culprits</dt><dd id=\"culprits\" class=\"culprit\">{}</dd>\n",
                      v.culprit_ranks().empty() ? "none named" : Esc(RankText(v.culprit_ranks())));
  if (!v.victim_ranks().empty()) {
    out_ += fmt::format("<dt>victims</dt><dd id=\"victims\">{} [{}]</dd>\n",
                        RankCount(v.victim_ranks().size()), Esc(RankText(v.victim_ranks())));
  }
  if (v.has_process_group()) {
    out_ += fmt::format("<dt>where</dt><dd>{} {} #{}</dd>\n", Esc(GroupRefText(v.process_group())),
                        Esc(v.op()), v.collective_seq_id());
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

void HtmlWriter::RootCause() {
  const report::RootCause& cause = report_.verdict().root_cause();
  if (cause.kind().empty()) return;
  out_ += "<section id=\"root-cause\">\n";
  out_ += fmt::format("<h2>Root cause from the logs: <span class=\"kind\">{}</span>",
                      Esc(cause.kind()));
  if (!cause.confidence().empty()) {
    out_ += fmt::format("<span class=\"confidence\">confidence {}</span>", Esc(cause.confidence()));
  }
  out_ += "</h2>\n";
  if (!cause.summary().empty())
    out_ += fmt::format("<p class=\"summary\">{}</p>\n", Esc(cause.summary()));
  out_ += "<dl class=\"facts\">\n";
  if (!cause.time().empty()) out_ += fmt::format("<dt>when</dt><dd>{}</dd>\n", Esc(cause.time()));
  if (!cause.ranks().empty()) {
    out_ +=
        fmt::format("<dt>ranks</dt><dd class=\"culprit\">{}</dd>\n", Esc(RankText(cause.ranks())));
  }
  if (!cause.hosts().empty()) {
    std::vector<std::string> hosts(cause.hosts().begin(), cause.hosts().end());
    out_ +=
        fmt::format("<dt>hosts</dt><dd>{}</dd>\n", Esc(fmt::format("{}", fmt::join(hosts, ", "))));
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
  if (!cause.stack().empty()) {
    out_ += fmt::format(
        "<h2>Where it raised</h2>\n<p class=\"mono\">{}</p>\n<ol id=\"raised-stack\" "
        "class=\"mono\">\n",
        Esc(cause.stack_at()));
    for (const std::string& frame : cause.stack()) out_ += fmt::format("<li>{}</li>\n", Esc(frame));
    out_ += "</ol>\n";
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

void HtmlWriter::NextActions() {
  const auto& actions = report_.verdict().next_actions();
  if (actions.empty()) return;
  out_ += "<section id=\"next-actions\">\n<h2>What to do next</h2>\n<ol>\n";
  for (const std::string& action : actions) out_ += fmt::format("<li>{}</li>\n", Esc(action));
  out_ += "</ol>\n</section>\n";
}

void HtmlWriter::ProcessGroups() {
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
          group->collectives_matched() > 0 ? fmt::format("{} matched", group->collectives_matched())
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

void HtmlWriter::Stack(std::string_view title,
                       const google::protobuf::RepeatedPtrField<std::string>& stack, bool open) {
  if (stack.empty()) return;
  out_ += fmt::format("<details class=\"stack\"{}><summary>{}</summary><pre>", open ? " open" : "",
                      Esc(title));
  for (const std::string& frame : stack) out_ += Esc(frame) + "\n";
  out_ += "</pre></details>\n";
}

void HtmlWriter::Findings() {
  out_ +=
      fmt::format("<section id=\"findings\">\n<h2>Findings ({})</h2>\n", report_.findings().size());
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

void HtmlWriter::Inputs() {
  const report::Inputs& in = report_.inputs();
  out_ += "<section id=\"inputs\">\n<h2>What was read</h2>\n<dl class=\"facts\">\n";
  out_ += fmt::format("<dt>dumps read</dt><dd>{} [{}]</dd>\n", RankCount(in.ranks_loaded().size()),
                      Esc(RankText(in.ranks_loaded())));
  if (!in.ranks_missing().empty()) {
    out_ += fmt::format("<dt>ranks missing</dt><dd>[{}]</dd>\n", Esc(RankText(in.ranks_missing())));
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

void HtmlWriter::LeftOut(size_t total, std::string_view what, size_t shown_at_most) {
  size_t limit = shown_at_most == 0 ? options_.max_table_rows : shown_at_most;
  if (total > limit) {
    out_ +=
        fmt::format("<p class=\"note\">{} more {} not shown (the JSON report has them all).</p>\n",
                    total - limit, what);
  }
}

}  // namespace html_internal

std::string WriteHtmlReport(const report::Report& report, const Timeline& timeline,
                            const HtmlReportOptions& options) {
  return html_internal::HtmlWriter(report, timeline, options).Write();
}

}  // namespace fr
