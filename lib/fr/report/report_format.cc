#include "fr/report/report_format.h"

#include <vector>

#include "fmt/format.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/report/proto_json.h"
#include "fr/verdict/message_strings.h"

namespace fr {
namespace {

using report::Report;

// Groups with problems are listed in full; of the healthy ones only this many, then a count.
constexpr int kHealthyGroupsShown = 8;
constexpr int kStatesPerGroupShown = 6;

std::vector<int64_t> Ranks(const google::protobuf::RepeatedField<int32_t>& field) {
  return std::vector<int64_t>(field.begin(), field.end());
}

std::string GroupLabel(const report::ProcessGroupRef& group) {
  if (group.name().empty()) return "-";
  return group.desc().empty() ? fmt::format("group {}", group.name())
                              : fmt::format("group {} ({})", group.name(), group.desc());
}

std::string Seq(int64_t seq) { return seq < 0 ? std::string("-") : fmt::format("#{}", seq); }

// A long path cut to its file name.
std::string ShortPath(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash != std::string::npos && path.size() > 60 ? "..." + path.substr(slash) : path;
}

// The logs' answer, first: what happened, to whom, when, and the lines that say so.
void AppendRootCause(const Report& report, std::string* out) {
  if (!report.verdict().has_root_cause()) return;
  const auto& cause = report.verdict().root_cause();
  std::string who;
  if (cause.ranks_size() > 0)
    who = fmt::format(" on rank(s) {}", FormatRankSet(Ranks(cause.ranks())));
  if (cause.hosts_size() > 0) who += fmt::format(" ({})", fmt::join(cause.hosts(), ", "));
  *out += fmt::format("root cause: {}{}{} (confidence {})\n", cause.kind(), who,
                      cause.time().empty() ? "" : " at " + cause.time(), cause.confidence());
  *out += fmt::format("  {}\n", cause.summary());
  if (!cause.disagreement().empty()) *out += fmt::format("  note: {}\n", cause.disagreement());
  if (cause.evidence_size() > 0) *out += "  evidence:\n";
  for (const auto& line : cause.evidence()) {
    std::string where = ShortPath(line.file());
    *out += fmt::format("    {}:{} [{}{}] {}\n", where, line.line(),
                        line.time().empty() ? line.raw_time() : line.time(),
                        line.rank() >= 0 ? fmt::format(" rank {}", line.rank()) : "", line.text());
  }
  if (cause.stack_size() > 0) {
    *out += fmt::format("  where it raised, {} (innermost first):\n", cause.stack_at());
    for (const std::string& frame : cause.stack()) *out += fmt::format("    {}\n", frame);
  }
  const auto& launcher = report.launcher();
  if (launcher.names_size() > 0) {
    *out += fmt::format("  launcher: {}\n", fmt::join(launcher.names(), " > "));
  }
  if (launcher.has_death_line()) {
    const auto& line = launcher.death_line();
    bool listed = false;
    for (const auto& shown : cause.evidence()) {
      listed |= shown.file() == line.file() && shown.line() == line.line();
    }
    *out += fmt::format("    its report of the death: {}:{}{}\n", ShortPath(line.file()),
                        line.line(), listed ? " (in the evidence above)" : " " + line.text());
  }
  if (!launcher.note().empty()) *out += fmt::format("    note: {}\n", launcher.note());
  *out += "\n";
}

// How far each host's clock was off, when the logs came from several hosts.
void AppendClocks(const Report& report, std::string* out) {
  const auto& hosts = report.timeline().hosts();
  if (hosts.size() < 2) return;
  *out += "\nhost clocks (offset from the job's consensus clock):\n";
  int shown = 0;
  for (const auto& host : hosts) {
    if (++shown > 16) {
      *out += fmt::format("  ... {} more hosts (see --format json)\n", hosts.size() - 16);
      break;
    }
    *out +=
        fmt::format("  {:<16} {:+} ms ({}; {})\n", host.host().empty() ? "(unknown)" : host.host(),
                    host.offset_ms(), host.confidence(), host.method());
  }
}

void AppendVerdict(const Report& report, std::string* out) {
  const auto& v = report.verdict();
  *out += fmt::format("fr-analyze: {} (confidence {})\n", v.failure_class(), v.confidence());
  *out += fmt::format("  {}\n", v.summary());
  if (v.culprit_ranks_size() > 0) {
    std::vector<std::string> hosts;
    for (const auto& rank : report.ranks()) {
      if (rank.role() == "culprit" && !rank.host().empty()) {
        hosts.push_back(fmt::format("{} on {}", rank.rank(), rank.host()));
      }
    }
    // With a few culprits on known hosts, say where they ran: "5 on node01".
    bool with_hosts = !hosts.empty() &&
                      hosts.size() == static_cast<size_t>(v.culprit_ranks_size()) &&
                      hosts.size() <= 4;
    *out += fmt::format("  culprits: {}\n", with_hosts ? fmt::format("{}", fmt::join(hosts, ", "))
                                                       : FormatRankSet(Ranks(v.culprit_ranks())));
  }
  if (v.victim_ranks_size() > 0) {
    *out += fmt::format("  victims:  {} ranks [{}]\n", v.victim_ranks_size(),
                        FormatRankSet(Ranks(v.victim_ranks())));
  }
  if (!v.process_group().name().empty()) {
    *out += fmt::format("  where:    {} {} {}\n", GroupLabel(v.process_group()), v.op(),
                        Seq(v.collective_seq_id()));
  }
  if (v.chains_size() > 0) {
    *out += "\nhow the victims wait:\n";
    for (const auto& chain : v.chains()) {
      std::string line;
      for (const auto& edge : chain.edges()) {
        if (line.empty()) line = fmt::format("rank {}", edge.waiter());
        if (edge.process_group().name().empty() && edge.process_group().ranks_size() == 0) {
          // An inferred wait in an op no dump records: no group, no seq to show.
          line += fmt::format(" --[{}: {}]--> rank {}", edge.op(), edge.reason(), edge.waits_for());
        } else {
          line += fmt::format(" --[{} {} in {}: {}]--> rank {}", edge.op(), Seq(edge.seq_id()),
                              GroupLabel(edge.process_group()), edge.reason(), edge.waits_for());
        }
      }
      *out += fmt::format("  {}\n", line);
    }
  }
  // The lead finding's evidence and stack: what the culprit was doing.
  for (const auto& finding : report.findings()) {
    if (finding.kind() != v.failure_class()) continue;
    if (finding.evidence_size() > 0) {
      *out += "\nevidence:\n";
      for (const std::string& line : finding.evidence()) *out += fmt::format("  {}\n", line);
    }
    if (finding.stack_size() > 0) {
      *out += fmt::format("\nstack of rank {} at {} (innermost first):\n",
                          finding.ranks_size() > 0 ? finding.ranks(0) : -1,
                          finding.stack_at().empty() ? "its last op" : finding.stack_at());
      for (const std::string& frame : finding.stack()) *out += fmt::format("  {}\n", frame);
    }
    if (finding.has_majority_rank() && finding.majority_stack_size() > 0) {
      *out += fmt::format("\nstack of rank {} (majority) at the same collective:\n",
                          finding.majority_rank());
      for (const std::string& frame : finding.majority_stack()) {
        *out += fmt::format("  {}\n", frame);
      }
    }
    break;
  }
  if (v.next_actions_size() > 0) {
    *out += "\nnext actions:\n";
    int n = 1;
    for (const std::string& action : v.next_actions()) {
      *out += fmt::format("  {}. {}\n", n++, action);
    }
  }
}

// Every rank's main Python thread from the newest live snapshot, ranks with the same stack
// together (as py-spy users read them), the outermost frames cut.
void AppendLiveStacks(const Report& report, std::string* out) {
  if (report.live_stacks_size() == 0) return;
  constexpr int kFramesShown = 12;
  *out += fmt::format("\nlive stacks ({}; main threads, innermost first):\n",
                      report.live_stacks(0).snapshot());
  for (const report::LiveStackGroup& group : report.live_stacks()) {
    std::string who = group.ranks_size() == 1
                          ? fmt::format("rank {}", group.ranks_text())
                          : fmt::format("ranks {} ({})", group.ranks_text(), group.ranks_size());
    if (!group.error().empty()) {
      *out += fmt::format("  {}: {}: {}\n", who, group.place(), group.error());
      continue;
    }
    *out += fmt::format("  {} {}:\n", who, group.place());
    int shown = 0;
    for (const std::string& frame : group.frames()) {
      if (shown++ == kFramesShown) {
        *out += fmt::format("    ... {} more\n", group.frames_size() - kFramesShown);
        break;
      }
      *out += fmt::format("    {}\n", frame);
    }
  }
}

void AppendGroups(const Report& report, std::string* out) {
  std::vector<const report::ProcessGroupReport*> troubled, healthy;
  for (const auto& group : report.process_groups()) {
    (group.first_divergence_seq() >= 0 ? troubled : healthy).push_back(&group);
  }
  *out += fmt::format("\nprocess groups: {} with problems, {} without\n", troubled.size(),
                      healthy.size());
  auto append = [&](const report::ProcessGroupReport& group) {
    *out += fmt::format("  {} [{}]: window {}..{}, first divergence {}, {} matched\n",
                        GroupLabel(group.group()), FormatRankSet(Ranks(group.group().ranks())),
                        Seq(group.window_first_seq()), Seq(group.window_last_seq()),
                        Seq(group.first_divergence_seq()), group.collectives_matched());
    int shown = 0;
    for (const auto& state : group.states()) {
      if (shown++ == kStatesPerGroupShown) {
        *out += fmt::format("    ... {} more states\n", group.states_size() - kStatesPerGroupShown);
        break;
      }
      std::string what =
          state.state() == "not issued"
              ? (state.op().empty() ? std::string("not issued (nothing in this group)")
                                    : fmt::format("not issued (last issued {} {})", state.op(),
                                                  Seq(state.seq_id())))
          : state.state() == "dump missing" || state.state() == "dump unreadable" ? state.state()
          : state.op().starts_with("send ") || state.op().starts_with("recv ")
              ? fmt::format("{} {} p2p {}", state.state(), state.op(), Seq(state.seq_id()))
              : fmt::format("{} {} {}", state.state(), state.op(), Seq(state.seq_id()));
      *out += fmt::format("    [{}] {}\n", state.ranks_text(), what);
    }
  };
  for (const auto* group : troubled) append(*group);
  int shown = 0;
  for (const auto* group : healthy) {
    if (shown++ == kHealthyGroupsShown) {
      *out +=
          fmt::format("  ... and {} more healthy groups\n", healthy.size() - kHealthyGroupsShown);
      break;
    }
    append(*group);
  }
}

void AppendFindings(const Report& report, std::string* out) {
  if (report.findings_size() == 0) return;
  *out += fmt::format("\nfindings ({}), earliest cause first:\n", report.findings_size());
  int n = 1;
  for (const auto& finding : report.findings()) {
    *out += fmt::format("  {}. [{}, {}] {}\n", n++, finding.kind(), finding.confidence(),
                        finding.summary());
    for (const std::string& line : finding.evidence()) *out += fmt::format("       {}\n", line);
  }
  for (const auto& straggler : report.stragglers()) {
    *out += fmt::format(
        "  straggler: rank {} in {}, {:.1f} ms late (median), last in {:.0f}% of "
        "{} collectives\n",
        straggler.rank(), GroupLabel(straggler.process_group()), straggler.median_lateness_ms(),
        100 * straggler.fraction_last(), straggler.collectives_compared());
  }
}

void AppendInputs(const Report& report, std::string* out) {
  const auto& in = report.inputs();
  *out += fmt::format(
      "\ninputs: {} ranks loaded [{}] from {}; missing: {}; versions: {}\n", in.ranks_loaded_size(),
      FormatRankSet(Ranks(in.ranks_loaded())), in.source().empty() ? "-" : in.source(),
      in.ranks_missing_size() == 0 ? "none" : FormatRankSet(Ranks(in.ranks_missing())),
      in.versions_size() == 0 ? "-" : fmt::format("{}", fmt::join(in.versions(), ", ")));
  if (in.ranks_claimed_count() > 0) {
    *out += fmt::format(
        "  claimed: {} ranks that only one dump's process groups list and no file shows (from "
        "{}), not counted as the job's\n",
        in.ranks_claimed_count(), FormatRankSet(Ranks(in.ranks_claimed())));
  }
  for (const auto& job : in.other_jobs()) {
    *out += fmt::format("  another job set aside: {} ({} ranks); `fr-analyze {}` reads it\n",
                        fmt::join(job.folders(), ", "), job.ranks(),
                        job.folders_size() > 0 ? job.folders(0) : "");
  }
  for (const auto& file : in.files_rejected())
    *out += fmt::format("  rejected: {}\n", file.error());
  if (in.files_skipped_size() > 0) {
    *out +=
        fmt::format("  skipped {} files (not dumps, or dumps set aside: see `fr-analyze load`)\n",
                    in.files_skipped_size());
  }
  const auto& stats = report.stats();
  *out += fmt::format("  {} entries, {} process groups, {} collectives and {} p2p ops checked\n",
                      stats.entries(), stats.process_groups(), stats.collectives_checked(),
                      stats.p2p_ops_checked());
  if (stats.counter_details_size() > 0) {
    // Data loss and errors first, each with what it means; the harmless ones on one line.
    std::vector<std::string> info;
    for (const auto& counter : stats.counter_details()) {
      if (counter.severity() == "info") {
        info.push_back(fmt::format("{}={}", counter.name(), counter.value()));
      } else {
        *out += fmt::format("  {}: {}={} ({})\n", counter.severity(), counter.name(),
                            counter.value(), counter.description());
      }
    }
    if (!info.empty()) *out += fmt::format("  counters: {}\n", fmt::join(info, ", "));
  }
}

}  // namespace

std::string FormatReportText(const Report& unsafe) {
  Report report = unsafe;
  RewriteStrings(&report, TerminalSafe);
  std::string out;
  AppendRootCause(report, &out);
  AppendVerdict(report, &out);
  AppendLiveStacks(report, &out);
  AppendGroups(report, &out);
  AppendFindings(report, &out);
  AppendInputs(report, &out);
  AppendClocks(report, &out);
  return out;
}

absl::StatusOr<std::string> FormatProtoJson(const google::protobuf::Message& message) {
  return ProtoToJson(message);
}

absl::StatusOr<std::string> FormatReportJson(const Report& report) {
  return FormatProtoJson(report);
}

std::string FormatReportProto(const Report& unchecked) {
  Report report = unchecked;
  RewriteStrings(&report, ValidUtf8);
  std::string bytes;
  // Deterministic map order, so that the same report always gives the same bytes.
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    report.SerializeToCodedStream(&coded);
  }
  return bytes;
}

}  // namespace fr
