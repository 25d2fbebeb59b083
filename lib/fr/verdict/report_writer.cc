#include "fr/verdict/report_writer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fr/base/parallel_for.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/model/counters.h"

namespace fr {
namespace {

using report::ProcessGroupRef;
using report::Report;

void FillGroupRef(const JobGroup& group, ProcessGroupRef* ref) {
  ref->set_name(group.name);
  ref->set_desc(group.desc);
  for (int64_t r : group.ranks) ref->add_ranks(static_cast<int32_t>(r));
}

std::string ConfidenceText(Confidence c) { return std::string(ConfidenceName(c)); }

std::string_view AnswerWords(RankAnswer answer) {
  switch (answer) {
    case RankAnswer::kRefused:
      return "connection refused: the process is gone";
    case RankAnswer::kTimedOut:
      return "no answer in time: the process may hold the GIL, be stopped or be swapping";
    case RankAnswer::kFailed:
    case RankAnswer::kAnswered:
      break;
  }
  return "the request failed";
}

// Every rank's main thread, grouped by identical stacks, and the workers that did not answer.
void WriteLiveStacks(const StackJudgement& judged, report::Report* report) {
  for (const StackGroup& group : judged.groups) {
    report::LiveStackGroup* out = report->add_live_stacks();
    for (int64_t rank : group.ranks) out->add_ranks(rank);
    out->set_ranks_text(FormatRankSet(group.ranks));
    out->set_place(std::string(StackPlaceName(group.place)));
    for (const PythonFrame& frame : group.frames) out->add_frames(ValidUtf8(DescribeFrame(frame)));
    out->set_snapshot(ValidUtf8(judged.newest_path));
  }
  for (const RankNoAnswer& silent : judged.no_answer) {
    report::LiveStackGroup* out = report->add_live_stacks();
    out->add_ranks(silent.rank);
    out->set_ranks_text(std::to_string(silent.rank));
    out->set_place("no answer");
    out->set_snapshot(ValidUtf8(judged.newest_path));
    out->set_error(ValidUtf8(
        silent.error.empty() ? std::string(AnswerWords(silent.answer))
                             : fmt::format("{} ({})", AnswerWords(silent.answer), silent.error)));
  }
}

}  // namespace

void WriteFinding(const JudgedFinding& finding, const JobIndex& index, report::Finding* out) {
  out->set_kind(FindingKindName(finding));
  for (int64_t r : finding.ranks) out->add_ranks(static_cast<int32_t>(r));
  if (finding.group != kNoGroupIndex) {
    FillGroupRef(index.groups[finding.group], out->mutable_process_group());
  }
  out->set_collective_seq_id(finding.seq);
  out->set_op(finding.op);
  out->set_confidence(ConfidenceText(finding.confidence));
  out->set_summary(finding.summary);
  for (const std::string& line : finding.evidence) out->add_evidence(line);
  for (const std::string& frame : finding.stack) out->add_stack(frame);
  out->set_stack_at(finding.stack_at);
  if (finding.majority_rank.has_value()) {
    out->set_majority_rank(static_cast<int32_t>(*finding.majority_rank));
  }
  for (const std::string& frame : finding.majority_stack) out->add_majority_stack(frame);
}

namespace {

class ReportWriter {
 public:
  ReportWriter(const LoadedTrace& trace, const AnalyzeOptions& options, const Judgment& judgment)
      : trace_(trace), options_(options), judgment_(judgment), index_(judgment.index) {
    for (size_t d = 0; d < trace.ranks.size(); ++d) dump_of_rank_[trace.ranks[d].rank] = d;
  }

  Report Write() {
    Report report;
    report.set_schema_version(1);
    FillInputs(&report);
    for (const JudgedFinding& finding : judgment_.findings) {
      WriteFinding(finding, index_, report.add_findings());
    }
    FillStragglers(&report);
    FillVerdict(&report);
    FillProcessGroups(&report);
    FillRanks(&report);
    FillStats(&report);
    if (judgment_.stacks.has_value()) WriteLiveStacks(*judgment_.stacks, &report);
    return report;
  }

 private:
  const RankDump* DumpOf(int64_t rank) const {
    auto it = dump_of_rank_.find(rank);
    return it == dump_of_rank_.end() ? nullptr : &trace_.ranks[it->second];
  }

  // Whether `rank` is known only from a claim: no file, not missing (LoadedTrace::claimed_ranks).
  bool Claimed(int64_t rank) const {
    return trace_.claimed_ranks_count > 0 && DumpOf(rank) == nullptr &&
           !std::binary_search(trace_.missing_ranks.begin(), trace_.missing_ranks.end(), rank) &&
           !index_.Unreadable(rank);
  }

  void FillInputs(Report* report) const {
    auto* inputs = report->mutable_inputs();
    // Paths are filesystem bytes; report strings must be UTF-8 (see ValidUtf8).
    inputs->set_source(ValidUtf8(options_.source));
    for (const RankDump& dump : trace_.ranks) inputs->add_ranks_loaded(dump.rank);
    // A rank whose file could not be read is not missing: files_rejected says what its file is.
    for (int64_t r : judgment_.missing_ranks) inputs->add_ranks_missing(static_cast<int32_t>(r));
    for (int64_t r : trace_.claimed_ranks) inputs->add_ranks_claimed(static_cast<int32_t>(r));
    inputs->set_ranks_claimed_count(trace_.claimed_ranks_count);
    for (const OtherJob& job : trace_.other_jobs) {
      report::OtherJob* other = inputs->add_other_jobs();
      for (const std::string& folder : job.folders) other->add_folders(ValidUtf8(folder));
      other->set_ranks(job.ranks);
      other->set_newest_ns(job.newest_ns);
    }
    for (const RejectedFile& file : trace_.rejected) {
      auto* rejected = inputs->add_files_rejected();
      rejected->set_path(ValidUtf8(file.path));
      rejected->set_rank(static_cast<int32_t>(file.rank));
      rejected->set_error(ValidUtf8(file.error));
    }
    for (const RankConflict& conflict : trace_.conflicts) {
      for (const std::string& path : conflict.paths) {
        auto* rejected = inputs->add_files_rejected();
        rejected->set_path(ValidUtf8(path));
        rejected->set_rank(static_cast<int32_t>(conflict.rank));
        rejected->set_error(
            ValidUtf8(fmt::format("{}: rank {} has several files ({}); none was used", path,
                                  conflict.rank, fmt::join(conflict.paths, ", "))));
      }
    }
    for (const SkippedFile& file : trace_.skipped) {
      auto* skipped = inputs->add_files_skipped();
      skipped->set_path(ValidUtf8(file.path));
      skipped->set_reason(file.reason);
    }
    for (const std::string& version : trace_.versions) inputs->add_versions(version);
    const MatchResult& matched = judgment_.matched;
    if (matched.dump_time_ns != kUnknown) inputs->set_dump_time_ns(matched.dump_time_ns);
    inputs->set_dump_time_source(matched.dump_time_source);
    inputs->set_dump_time_confidence(ConfidenceText(matched.dump_time_confidence));
  }

  void FillStragglers(Report* report) const {
    for (const Straggler& found : judgment_.stragglers) {
      auto* straggler = report->add_stragglers();
      straggler->set_rank(static_cast<int32_t>(found.rank));
      FillGroupRef(index_.groups[found.group], straggler->mutable_process_group());
      straggler->set_median_lateness_ms(found.median_lateness_ms);
      straggler->set_fraction_last(found.fraction_last);
      straggler->set_collectives_compared(found.collectives_compared);
    }
  }

  void FillVerdict(Report* report) const {
    const DumpVerdict& judged = judgment_.verdict;
    auto* verdict = report->mutable_verdict();
    verdict->set_collective_seq_id(-1);
    if (judged.lead >= 0) {
      const JudgedFinding& lead = judgment_.findings[judged.lead];
      auto* group = verdict->mutable_process_group();
      if (lead.group != kNoGroupIndex) FillGroupRef(index_.groups[lead.group], group);
      verdict->set_collective_seq_id(lead.seq);
      verdict->set_op(lead.op);
    }
    verdict->set_failure_class(std::string(FailureClassName(judged.failure_class)));
    for (int64_t r : judged.culprits) verdict->add_culprit_ranks(static_cast<int32_t>(r));
    verdict->set_confidence(ConfidenceText(judged.confidence));
    verdict->set_summary(judged.summary);
    for (int64_t r : judged.victims) verdict->add_victim_ranks(static_cast<int32_t>(r));
    for (const std::string& action : judged.next_actions) verdict->add_next_actions(action);
    for (const std::vector<WaitHop>& chain : judged.chains) {
      auto* out = verdict->add_chains();
      for (const WaitHop& hop : chain) {
        const Block& block = judgment_.matched.blocks[hop.block];
        auto* edge = out->add_edges();
        edge->set_waiter(static_cast<int32_t>(hop.waiter));
        edge->set_waits_for(static_cast<int32_t>(hop.waits_for));
        if (block.group != kNoGroupIndex) {
          FillGroupRef(index_.groups[block.group], edge->mutable_process_group());
        }
        edge->set_op(block.op);
        edge->set_seq_id(block.seq);
        edge->set_reason(std::string(BlockReasonText(block.reason)));
      }
    }
  }

  bool GroupSelected(const JobGroup& group) const {
    if (options_.pg_filter.empty()) return true;
    for (const std::string& wanted : options_.pg_filter) {
      if (wanted == group.name || wanted == group.desc) return true;
    }
    return false;
  }

  void FillProcessGroups(Report* report) const {
    for (uint32_t g = 0; g < index_.groups.size(); ++g) {
      const JobGroup& group = index_.groups[g];
      if (!GroupSelected(group)) continue;
      const GroupMatch& match = judgment_.matched.groups[g];
      auto* out = report->add_process_groups();
      FillGroupRef(group, out->mutable_group());
      for (const GroupMember& member : group.members) {
        if (member.dump >= 0 || member.dump_holds_none)
          out->add_ranks_loaded(static_cast<int32_t>(member.rank));
      }
      out->set_window_first_seq(match.window_first);
      out->set_window_last_seq(match.window_last);
      out->set_first_divergence_seq(match.first_divergence);
      out->set_collectives_matched(static_cast<int32_t>(match.collectives_matched));
      // Keyed by the state's name, so that equal-sized sets are listed alphabetically by state.
      std::map<std::tuple<std::string, int64_t, std::string>, std::vector<int64_t>> grouped;
      for (const MemberState& state : match.members) {
        // A member that no file shows and only a claim lists (LoadedTrace::claimed_ranks) is not
        // a missing rank of the job.
        std::string name(state.state == MemberProgress::kDumpMissing && Claimed(state.rank)
                             ? "claimed"
                             : MemberProgressName(state.state));
        grouped[{std::move(name), state.seq, state.op}].push_back(state.rank);
      }
      // Largest set first: "[0-4095 except 17] started ..." then "[17] ...".
      std::vector<std::pair<std::tuple<std::string, int64_t, std::string>, std::vector<int64_t>>>
          sorted(grouped.begin(), grouped.end());
      std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return a.second.size() > b.second.size();
      });
      for (const auto& [key, ranks] : sorted) {
        auto* state = out->add_states();
        // A claim may list a million ranks: its list is cut, ranks_text says them all.
        size_t listed = std::get<0>(key) == "claimed" ? kMaxClaimedRanksListed : ranks.size();
        for (size_t i = 0; i < std::min(listed, ranks.size()); ++i) {
          state->add_ranks(static_cast<int32_t>(ranks[i]));
        }
        state->set_ranks_text(FormatRankSetWithin(ranks, group.ranks));
        state->set_state(std::get<0>(key));
        state->set_seq_id(std::get<1>(key));
        state->set_op(std::get<2>(key));
      }
    }
  }

  void FillRanks(Report* report) const {
    std::set<int64_t> culprits(judgment_.verdict.culprits.begin(),
                               judgment_.verdict.culprits.end());
    std::set<int64_t> victims(judgment_.blocked_ranks.begin(), judgment_.blocked_ranks.end());
    std::set<int64_t> all;
    for (const RankDump& dump : trace_.ranks) all.insert(dump.rank);
    for (int64_t r : judgment_.missing_ranks) all.insert(r);
    for (int64_t r : judgment_.unreadable_ranks) all.insert(r);
    // Each dump's oldest op that did not finish, else its newest: a pass over every entry of a
    // healthy job, one dump per core. Finished includes retired (EntryFinished): Gloo and jobs
    // without TORCH_NCCL_ENABLE_TIMING never mark an op completed, and every rank's first op
    // was shown as where it stood.
    std::vector<std::optional<Entry>> shown_of_dump(trace_.ranks.size());
    ParallelFor(
        trace_.ranks.size(), options_.jobs,
        [&](size_t d) {
          const auto& entries = trace_.ranks[d].entries;
          for (const Entry& entry : entries) {
            if (!EntryFinished(entry)) {
              shown_of_dump[d] = entry;
              return;
            }
          }
          if (!entries.empty()) shown_of_dump[d] = entries.back();
        },
        /*cancel=*/nullptr, /*min_items_per_thread=*/64);
    for (int64_t rank : all) {
      auto* out = report->add_ranks();
      out->set_rank(static_cast<int32_t>(rank));
      const RankDump* dump = DumpOf(rank);
      std::string role = culprits.contains(rank)   ? "culprit"
                         : victims.contains(rank)  ? "victim"
                         : dump != nullptr         ? "healthy"
                         : index_.Unreadable(rank) ? "unreadable"
                                                   : "missing";
      out->set_role(role);
      if (dump != nullptr) out->set_host(ValidUtf8(dump->host));
      if (dump != nullptr) {
        const std::optional<Entry>& shown = shown_of_dump[dump - trace_.ranks.data()];
        if (shown.has_value()) out->set_last_op(DescribeEntry(*dump, *shown));
      }
    }
  }

  void FillStats(Report* report) const {
    const MatchResult& matched = judgment_.matched;
    auto* stats = report->mutable_stats();
    stats->set_ranks_loaded(static_cast<int32_t>(trace_.ranks.size()));
    stats->set_ranks_expected(static_cast<int32_t>(
        trace_.ranks.size() + judgment_.missing_ranks.size() + judgment_.unreadable_ranks.size()));
    stats->set_entries(index_.entries);
    stats->set_process_groups(static_cast<int32_t>(index_.groups.size()));
    stats->set_collectives_checked(static_cast<int32_t>(matched.collectives_checked));
    stats->set_p2p_ops_checked(static_cast<int32_t>(matched.p2p_ops_checked));
    auto& counters = *stats->mutable_counters();
    for (const RankDump& dump : trace_.ranks) {
      for (const auto& [name, count] : dump.oddities) counters[name] += count;
    }
    if (matched.in_flight_ops > 0) counters["ops_in_flight_not_stuck"] = matched.in_flight_ops;
    if (!trace_.rejected.empty()) counters["files_rejected"] = trace_.rejected.size();
    if (!trace_.skipped.empty()) counters["files_skipped"] = trace_.skipped.size();
    for (const auto& [kind, count] : judgment_.findings_not_listed) {
      counters["findings_not_listed:" + kind] = count;
    }
    std::map<std::string, int64_t> sorted(counters.begin(), counters.end());
    for (const auto& [name, value] : sorted) {
      auto* detail = stats->add_counter_details();
      detail->set_name(name);
      detail->set_value(value);
      const CounterInfo* info = FindCounter(name);
      detail->set_severity(info == nullptr ? "unregistered"
                                           : std::string(CounterSeverityName(info->severity)));
      if (info != nullptr) detail->set_description(std::string(info->description));
    }
  }

  const LoadedTrace& trace_;
  const AnalyzeOptions& options_;
  const Judgment& judgment_;
  const JobIndex& index_;
  std::map<int64_t, size_t> dump_of_rank_;
};

}  // namespace

std::string FindingKindName(const JudgedFinding& finding) {
  switch (finding.topic) {
    case FindingTopic::kFailure:
      return std::string(FailureClassName(finding.failure_class));
    case FindingTopic::kStraggler:
      return "straggler";
    case FindingTopic::kDataLoss:
      return "data_loss";
    case FindingTopic::kMonitor:
      return finding.monitor_kind;
    case FindingTopic::kStacks:
      switch (finding.stack_kind) {
        case StackFindingKind::kWorkerGone:
          return "worker_gone";
        case StackFindingKind::kWorkerSilent:
          return "worker_silent";
        case StackFindingKind::kOutsideCommunication:
          return "stack_outside_communication";
      }
      return "";
  }
  return "";
}

report::Report WriteDumpReport(const LoadedTrace& trace, const AnalyzeOptions& options,
                               const Judgment& judgment) {
  return ReportWriter(trace, options, judgment).Write();
}

}  // namespace fr
