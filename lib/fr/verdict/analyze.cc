#include "fr/verdict/analyze.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "fr/base/parallel_for.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/index/job_index.h"
#include "fr/match/matcher.h"
#include "fr/model/counters.h"
#include "fr/verdict/failure_class.h"
#include "fr/verdict/next_actions.h"
#include "fr/verdict/stack_evidence.h"
#include "fr/verdict/stragglers.h"
#include "fr/waitfor/wait_for_graph.h"

namespace fr {
namespace {

using report::Finding;
using report::ProcessGroupRef;
using report::Report;

constexpr int kMaxStackFrames = 12;
constexpr int kMaxChains = 3;

void FillGroupRef(const JobGroup& group, ProcessGroupRef* ref) {
  ref->set_name(group.name);
  ref->set_desc(group.desc);
  for (int64_t r : group.ranks) ref->add_ranks(static_cast<int32_t>(r));
}

std::string GroupLabel(const JobGroup& group) {
  return group.desc.empty() ? fmt::format("group {}", group.name)
                            : fmt::format("group {} ({})", group.name, group.desc);
}

// Precedence between causes created at the same time: the most specific wins.
// Block::group of an inferred wait (LinkSinksWaitingInUnrecordedOps), which belongs to no known
// group.
constexpr uint32_t kNoGroupIndex = std::numeric_limits<uint32_t>::max();

// Which cause names the root best when a culprit blocks others for several reasons: a desync
// first, then a GPU that never started, a p2p partner, an op never issued, a missing dump; relays
// and unreadable dumps last (they show no cause of their own).
int ReasonPriority(BlockReason reason) {
  if (reason == BlockReason::kDumpUnreadable) return 6;
  if (IsRelay(reason)) return 5;
  if (IsMismatch(reason)) return 0;
  if (reason == BlockReason::kNotStarted) return 1;
  if (reason == BlockReason::kNoMatchingRecv || reason == BlockReason::kNoMatchingSend ||
      IsHeldByBatch(reason)) {
    return 2;
  }
  if (reason == BlockReason::kNeverIssued) return 3;
  return 4;  // dump missing
}

class Analyzer {
 public:
  Analyzer(const LoadedTrace& trace, const AnalyzeOptions& options)
      : trace_(trace), options_(options) {
    for (size_t d = 0; d < trace.ranks.size(); ++d) dump_of_rank_[trace.ranks[d].rank] = d;
  }

  Report Run() {
    index_ = BuildJobIndex(trace_, options_.dump_time_ns, options_.jobs, options_.died_ranks);
    // Stragglers read only the trace and the index, which nothing changes from here on: they are
    // found on a second core while the groups are matched.
    std::future<std::vector<Straggler>> stragglers =
        std::async(std::launch::async, [this] { return FindStragglers(trace_, index_); });
    matched_ = MatchJob(trace_, index_, options_.jobs);
    stragglers_ = stragglers.get();
    LinkSinksWaitingInUnrecordedOps();
    WaitForGraph graph(matched_.blocks);

    Report report;
    report.set_schema_version(1);
    FillInputs(&report);
    AddCulpritFindings(graph, &report);
    AddStuckFindings(&report);
    AddSilentMismatchFindings(&report);
    AddStragglerFindings(&report);
    SortFindings(&report);
    AddDataLossFindings(&report);
    FillVerdict(graph, &report);
    FillProcessGroups(&report);
    FillRanks(graph, &report);
    FillStats(&report);
    return report;
  }

 private:
  const RankDump* DumpOf(int64_t rank) const {
    auto it = dump_of_rank_.find(rank);
    return it == dump_of_rank_.end() ? nullptr : &trace_.ranks[it->second];
  }

  // Ranks whose only files could not be read (ascending, distinct): not missing, unreadable.
  std::vector<int64_t> UnreadableRanks() const {
    std::vector<int64_t> ranks;
    for (const RejectedFile& file : trace_.rejected) {
      if (file.rank != kUnknown && DumpOf(file.rank) == nullptr) ranks.push_back(file.rank);
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    return ranks;
  }

  // Ranks without a readable dump: missing, or whose files could not be read.
  std::vector<int64_t> AbsentRanks(const Report& report) const {
    std::vector<int64_t> absent(report.inputs().ranks_missing().begin(),
                                report.inputs().ranks_missing().end());
    for (int64_t r : UnreadableRanks()) absent.push_back(r);
    std::sort(absent.begin(), absent.end());
    return absent;
  }

  // "missing: 8-15", "missing: 8-15; unreadable: 3", "unreadable: 3".
  std::string MissingAndUnreadable(const std::vector<int64_t>& missing) const {
    std::vector<std::string> parts;
    if (!missing.empty()) parts.push_back(fmt::format("missing: {}", FormatRankSet(missing)));
    std::vector<int64_t> unreadable = UnreadableRanks();
    if (!unreadable.empty()) {
      parts.push_back(fmt::format("unreadable: {}", FormatRankSet(unreadable)));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
  }

  // Whether `rank` is known only from a claim: no file, not missing (LoadedTrace::claimed_ranks).
  bool Claimed(int64_t rank) const {
    return trace_.claimed_ranks_count > 0 && DumpOf(rank) == nullptr &&
           !std::binary_search(trace_.missing_ranks.begin(), trace_.missing_ranks.end(), rank) &&
           !index_.Unreadable(rank);
  }

  void FillInputs(Report* report) {
    auto* inputs = report->mutable_inputs();
    // Paths are filesystem bytes; report strings must be UTF-8 (see ValidUtf8).
    inputs->set_source(ValidUtf8(options_.source));
    for (const RankDump& dump : trace_.ranks) inputs->add_ranks_loaded(dump.rank);
    // A rank whose file could not be read is not missing: files_rejected says what its file is.
    std::set<int64_t> missing(trace_.missing_ranks.begin(), trace_.missing_ranks.end());
    for (const RankConflict& conflict : trace_.conflicts) missing.insert(conflict.rank);
    for (int64_t r : missing) inputs->add_ranks_missing(static_cast<int32_t>(r));
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
    if (matched_.dump_time_ns != kUnknown) inputs->set_dump_time_ns(matched_.dump_time_ns);
    inputs->set_dump_time_source(matched_.dump_time_source);
    inputs->set_dump_time_confidence(matched_.dump_time_confidence);
  }

  // True when the job ran send/recv that no dump can show: Gloo records collectives only (2.13,
  // 2.14), so a rank blocked in a recv looks like a rank that waits on nothing.
  bool PointToPointUnrecorded() const {
    bool gloo = false;
    for (const RankDump& dump : trace_.ranks) {
      // The backend's string id, found once per dump rather than compared per entry.
      StringId gloo_id = kNoString;
      for (StringId id = 0; id < dump.strings.size() && gloo_id == kNoString; ++id) {
        if (dump.strings.view(id) == "gloo") gloo_id = id;
      }
      for (const Entry& entry : dump.entries) {
        if (IsPointToPoint(entry.op) || entry.is_p2p) return false;
        gloo |= entry.backend == gloo_id;
      }
    }
    return gloo;
  }

  // Where send/recv go unrecorded, a sink that went on recording ops after another sink stopped
  // is not an independent culprit: it kept working while the job was already hanging, then
  // stopped in an op the recorder does not see. It is linked to the sink that stopped first, by a
  // block whose reason says that the link is inferred.
  //
  // "Stopped first" is judged by program progress where the sinks' dumps allow: the ranks run one
  // program, so the sink that recorded fewest ops after the newest collective all of them
  // finished together is the one the others ran past. That order is causal (a rank's ops after a
  // shared collective all follow its completion everywhere), where comparing enqueue times of
  // different ranks' last ops is a race that a loaded machine decides either way. Without a
  // shared collective, or when a sink left no dump, the times decide: the last recorded op of a
  // sink with a dump, the first wait on a sink without one.
  void LinkSinksWaitingInUnrecordedOps() {
    if (!PointToPointUnrecorded()) return;
    WaitForGraph first(matched_.blocks);
    const std::vector<int64_t>& sinks = first.culprits();
    if (sinks.size() < 2) return;
    auto first_wait_on = [&](int64_t rank) {
      int64_t earliest = kUnknown;
      for (uint32_t b : first.BlocksOn(rank)) {
        int64_t t = matched_.blocks[b].time_created_ns;
        if (t != kUnknown && (earliest == kUnknown || t < earliest)) earliest = t;
      }
      return earliest;
    };
    auto last_activity = [&](int64_t rank) {
      const RankDump* dump = DumpOf(rank);
      int64_t last = kUnknown;
      if (dump == nullptr) return last;
      for (const Entry& entry : dump->entries) last = std::max(last, entry.time_created_ns);
      return last;
    };
    bool all_dumped = std::all_of(sinks.begin(), sinks.end(), [&](int64_t rank) {
      const RankDump* dump = DumpOf(rank);
      return dump != nullptr && !dump->entries.empty();
    });
    // Each sink's position: (ops recorded since the shared collective, or 0 when unknown; the time
    // it stopped). The origin is the least advanced; a sink strictly beyond it is linked.
    std::map<int64_t, std::pair<int64_t, int64_t>> position;
    std::map<int64_t, int64_t> progress;
    if (all_dumped) progress = ProgressSinceLastSharedCollective(sinks);
    for (int64_t sink : sinks) {
      // Without every dump, every sink is placed by the first wait on it, as the dumpless ones
      // must be: the two kinds of time are not comparable.
      int64_t stopped = all_dumped ? last_activity(sink) : first_wait_on(sink);
      position[sink] = {progress.empty() ? 0 : progress.at(sink), stopped};
    }
    int64_t origin = kUnknown;
    for (int64_t sink : sinks) {
      if (position[sink].second == kUnknown) continue;
      if (origin == kUnknown || position[sink] < position[origin]) origin = sink;
    }
    if (origin == kUnknown) return;
    const auto& [origin_progress, origin_stopped] = position[origin];
    for (int64_t sink : sinks) {
      if (sink == origin) continue;
      int64_t sink_last = last_activity(sink);
      if (sink_last == kUnknown) continue;
      bool beyond =
          progress.empty() ? sink_last > origin_stopped : progress.at(sink) > origin_progress;
      if (!beyond) continue;
      Block link;
      link.group = kNoGroupIndex;
      link.is_p2p = true;
      link.op = "send/recv";
      link.waiters = {sink};
      link.blockers = {origin};
      link.reason = BlockReason::kUnrecordedP2p;
      link.time_created_ns = sink_last;
      matched_.blocks.push_back(std::move(link));
    }
  }

  // For ranks that all have dumps: the newest collective that all of them finished in one group
  // they share (of such groups, the one whose collective was created last), as each rank's index
  // of its last entry of it. Ranks run one program, so entries after it are comparable progress.
  // Empty when they finished none together.
  std::map<int64_t, size_t> LastSharedCollective(const std::vector<int64_t>& ranks) const {
    std::map<uint32_t, size_t> members_in;  // the groups every rank is in, from its own dump
    for (int64_t rank : ranks) {
      auto dump = dump_of_rank_.find(rank);
      if (dump == dump_of_rank_.end()) return {};
      const std::vector<uint32_t>& groups = index_.group_of_local[dump->second];
      for (uint32_t g : std::set<uint32_t>(groups.begin(), groups.end())) ++members_in[g];
    }
    std::set<int64_t> wanted(ranks.begin(), ranks.end());
    std::map<int64_t, size_t> best;
    int64_t best_time = kUnknown;
    for (const auto& [g, count] : members_in) {
      if (count != wanted.size()) continue;
      std::vector<const GroupMember*> members;
      for (const GroupMember& member : index_.groups[g].members) {
        if (member.dump >= 0 && wanted.contains(member.rank)) members.push_back(&member);
      }
      if (members.size() != wanted.size()) continue;
      // The newest seq that every one of them finished.
      int64_t shared = std::numeric_limits<int64_t>::max();
      for (const GroupMember* member : members) {
        auto finished = std::find_if(
            member->units.rbegin(), member->units.rend(),
            [](const CollectiveUnit& unit) { return unit.state == EntryState::kCompleted; });
        if (finished == member->units.rend()) {
          shared = kUnknown;
          break;
        }
        shared = std::min(shared, finished->seq);
      }
      if (shared == kUnknown) continue;
      std::map<int64_t, size_t> last_entry;
      int64_t created = kUnknown;
      for (const GroupMember* member : members) {
        auto unit =
            std::lower_bound(member->units.begin(), member->units.end(), shared,
                             [](const CollectiveUnit& u, int64_t seq) { return u.seq < seq; });
        if (unit == member->units.end() || unit->seq != shared) break;
        const RankDump& dump = trace_.ranks[member->dump];
        last_entry[member->rank] = unit->first_entry + std::max<size_t>(unit->entry_count, 1) - 1;
        created = std::max(created, dump.entries[unit->first_entry].time_created_ns);
      }
      if (last_entry.size() != wanted.size()) continue;
      if (best_time == kUnknown || created > best_time) {
        best = std::move(last_entry);
        best_time = created;
      }
    }
    return best;
  }

  // How many entries each of `ranks` recorded after LastSharedCollective; empty when unknown.
  std::map<int64_t, int64_t> ProgressSinceLastSharedCollective(
      const std::vector<int64_t>& ranks) const {
    std::map<int64_t, int64_t> progress;
    for (const auto& [rank, last] : LastSharedCollective(ranks)) {
      progress[rank] = static_cast<int64_t>(DumpOf(rank)->entries.size() - 1 - last);
    }
    return progress;
  }

  // Where each collective block stands in the program the ranks share: how many entries its
  // first waiter recorded between the collective it last finished together with `culprit` and
  // every block's other waiters, and the block's own entry. Ops the culprit never issued come in
  // its program in the order of these positions. p2p blocks get none (they are ordered after
  // collectives anyway). Empty unless every collective block has a waiter whose dump has it and
  // such a shared collective exists.
  std::map<uint32_t, int64_t> ProgramPositions(int64_t culprit,
                                               const std::vector<uint32_t>& blocks) const {
    std::vector<int64_t> ranks = {culprit};
    std::map<uint32_t, std::pair<int64_t, size_t>> entry_of;  // block -> (waiter, entry index)
    for (uint32_t b : blocks) {
      const Block& block = matched_.blocks[b];
      // p2p waits are ordered apart (after every collective), so they need no position.
      if (block.is_p2p || block.group == kNoGroupIndex) continue;
      if (block.waiters.empty()) return {};
      int64_t waiter = block.waiters.front();
      const GroupMember* member = nullptr;
      for (const GroupMember& m : index_.groups[block.group].members) {
        if (m.rank == waiter && m.dump >= 0) member = &m;
      }
      if (member == nullptr) return {};
      auto unit =
          std::lower_bound(member->units.begin(), member->units.end(), block.seq,
                           [](const CollectiveUnit& u, int64_t seq) { return u.seq < seq; });
      if (unit == member->units.end() || unit->seq != block.seq) return {};
      entry_of[b] = {waiter, unit->first_entry};
      ranks.push_back(waiter);
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    std::map<int64_t, size_t> anchor = LastSharedCollective(ranks);
    if (anchor.empty()) return {};
    std::map<uint32_t, int64_t> positions;
    for (const auto& [b, at] : entry_of) {
      positions[b] = static_cast<int64_t>(at.second) - static_cast<int64_t>(anchor.at(at.first));
    }
    return positions;
  }

  // The culprit's last entry anywhere: what it was doing when everything stopped.
  std::optional<Entry> LastEntry(const RankDump& dump) const {
    if (dump.entries.empty()) return std::nullopt;
    return dump.entries.back();
  }

  std::string DescribeEntry(const RankDump& dump, const Entry& entry) const {
    const ProcessGroup& group = dump.groups[entry.group];
    std::string seq = IsPointToPoint(entry.op) ? fmt::format("p2p #{}", entry.p2p_seq_id)
                                               : fmt::format("#{}", entry.collective_seq_id);
    std::string desc(dump.strings.view(group.desc));
    // Gloo never records completion: a retired op only says that it ended.
    std::string state(EntryStateName(entry.state));
    if (entry.retired && entry.state != EntryState::kCompleted) state += ", retired";
    return fmt::format("{} {} in group {}{} ({})", dump.strings.view(entry.op_name), seq,
                       dump.strings.view(group.name), desc.empty() ? "" : " " + desc, state);
  }

  void AddStack(const RankDump& dump, const Entry& entry, Finding* finding) const {
    if (entry.stack == kNoStack) return;
    int count = 0;
    for (uint32_t f : dump.Stack(entry.stack)) {
      if (count++ == kMaxStackFrames) {
        finding->add_stack("...");
        break;
      }
      const Frame& frame = dump.frames[f];
      finding->add_stack(fmt::format("{} ({}:{})", dump.strings.view(frame.name),
                                     dump.strings.view(frame.filename), frame.line));
    }
  }

  // The entry `rank` recorded as collective `seq` of `group`, or nullptr.
  std::optional<Entry> EntryAt(const JobGroup& group, int64_t rank, int64_t seq,
                               const RankDump** dump_out) const {
    for (const GroupMember& member : group.members) {
      if (member.rank != rank || member.dump < 0) continue;
      auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                                 [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
      if (it == member.units.end() || it->seq != seq) return std::nullopt;
      *dump_out = &trace_.ranks[member.dump];
      return (*dump_out)->entries[it->first_entry];
    }
    return std::nullopt;
  }

  // The stack of `rank` at collective `seq` of `group`, when it recorded one.
  void AddStackAt(const JobGroup& group, int64_t rank, int64_t seq, Finding* finding) const {
    const RankDump* dump = nullptr;
    std::optional<Entry> entry = EntryAt(group, rank, seq, &dump);
    if (!entry.has_value()) return;
    AddStack(*dump, *entry, finding);
    if (finding->stack_size() > 0) finding->set_stack_at(ValidUtf8(DescribeEntry(*dump, *entry)));
  }

  // The stack of the lowest majority member with one at collective `seq`, for comparison.
  void AddMajorityStack(const JobGroup& group, const std::vector<int64_t>& majority, int64_t seq,
                        Finding* finding) const {
    for (int64_t rank : majority) {
      const RankDump* dump = nullptr;
      std::optional<Entry> entry = EntryAt(group, rank, seq, &dump);
      if (!entry.has_value() || entry->stack == kNoStack) continue;
      Finding scratch;
      AddStack(*dump, *entry, &scratch);
      finding->set_majority_rank(static_cast<int32_t>(rank));
      *finding->mutable_majority_stack() = scratch.stack();
      return;
    }
  }

  // One finding per culprit set blocked for the same reason at the same op.
  void AddCulpritFindings(const WaitForGraph& graph, Report* report) {
    struct Cause {
      uint32_t block;
      std::vector<int64_t> culprits;
    };
    std::map<uint32_t, Cause> by_block;
    std::vector<uint32_t> relay_cycle;
    std::vector<int64_t> relay_ranks;
    for (int64_t culprit : graph.culprits()) {
      std::vector<uint32_t> blocks = graph.BlocksOn(culprit);
      if (blocks.empty()) continue;
      std::map<uint32_t, int64_t> positions = ProgramPositions(culprit, blocks);
      auto position = [&](uint32_t b) {
        auto it = positions.find(b);
        return it == positions.end() ? 0 : it->second;
      };
      uint32_t best = *std::min_element(blocks.begin(), blocks.end(), [&](uint32_t a, uint32_t b) {
        const Block& x = matched_.blocks[a];
        const Block& y = matched_.blocks[b];
        // The earliest op others wait in is the root: what the culprit failed to do first.
        // Everything after it (sends it never reached, later collectives) follows from it.
        // "Blocked behind an earlier op" only relays a wait: prefer any direct cause.
        bool x_relay = x.reason == BlockReason::kBehindEarlierOp;
        bool y_relay = y.reason == BlockReason::kBehindEarlierOp;
        // Collectives align by seq across ranks; p2p waits only say "not yet", and a peer posts
        // its recv long before the culprit would have reached the send. So a collective the
        // culprit failed to join names the root better than a p2p op it failed to match.
        // Before any of that, the op the culprit itself sits in (its oldest unfinished op, a
        // desync it issued) is where it stopped: every op it never issued comes after it in its
        // own program, whatever the clocks of the ranks that wait there say. Among ops it never
        // issued, their place in the program (ProgramPositions) orders them where it is known;
        // enqueue times of different ranks are a race that a loaded host decides either way.
        bool x_elsewhere = !SitsIn(culprit, x);
        bool y_elsewhere = !SitsIn(culprit, y);
        return std::make_tuple(x_relay, x_elsewhere, x.is_p2p, position(a), x.time_created_ns,
                               ReasonPriority(x.reason),
                               a) < std::make_tuple(y_relay, y_elsewhere, y.is_p2p, position(b),
                                                    y.time_created_ns, ReasonPriority(y.reason), b);
      });
      // A rank that others wait for only because it is itself stuck in an earlier op that
      // blames no one (a stalled transport, an op still in flight) is not a culprit. If it is in
      // no stuck op either, it waits in a cycle of such relays: send/recv queued behind each
      // other (a p2p ordering deadlock), kept for below.
      if (matched_.blocks[best].reason == BlockReason::kBehindEarlierOp) {
        if (!InStuckOp(culprit)) relay_ranks.push_back(culprit);
        continue;
      }
      // Waited for, but its file could not be read: what it did is unknown, so it is neither
      // blamed nor cleared; the verdict says which file would settle it.
      if (std::all_of(blocks.begin(), blocks.end(), [&](uint32_t b) {
            return matched_.blocks[b].reason == BlockReason::kDumpUnreadable;
          })) {
        unreadable_sinks_.push_back(culprit);
        continue;
      }
      by_block[best].block = best;
      by_block[best].culprits.push_back(culprit);
    }
    if (by_block.empty() && relay_ranks.size() > 1) {
      // The waits among the deadlocked ranks themselves.
      std::sort(relay_ranks.begin(), relay_ranks.end());
      auto among = [&](const std::vector<int64_t>& ranks) {
        return std::any_of(ranks.begin(), ranks.end(), [&](int64_t r) {
          return std::binary_search(relay_ranks.begin(), relay_ranks.end(), r);
        });
      };
      for (uint32_t b = 0; b < matched_.blocks.size(); ++b) {
        if (among(matched_.blocks[b].waiters) && among(matched_.blocks[b].blockers)) {
          relay_cycle.push_back(b);
        }
      }
      if (!relay_cycle.empty()) AddDeadlockFinding(relay_cycle, relay_ranks, report);
    }
    for (auto& [b, cause] : by_block) {
      const Block& block = matched_.blocks[b];
      const JobGroup& group = index_.groups[block.group];
      bool batch_shift = IsHeldByBatch(block.reason);
      if (batch_shift) {
        // Batched p2p stuck against each other: a skipped or extra op on either side of the
        // channel shifts the FIFO pairing; both sides are named.
        cause.culprits.insert(cause.culprits.end(), block.waiters.begin(), block.waiters.end());
        std::sort(cause.culprits.begin(), cause.culprits.end());
        cause.culprits.erase(std::unique(cause.culprits.begin(), cause.culprits.end()),
                             cause.culprits.end());
      }
      Finding* finding = report->add_findings();
      finding->set_kind(std::string(FailureClassName(ClassOfReason(block.reason))));
      for (int64_t r : cause.culprits) finding->add_ranks(static_cast<int32_t>(r));
      FillGroupRef(group, finding->mutable_process_group());
      finding->set_collective_seq_id(block.seq);
      finding->set_op(block.op);
      std::string culprits = FormatRankSetWithin(cause.culprits, group.ranks);
      std::string plural = cause.culprits.size() > 1 ? "ranks" : "rank";
      std::string seq =
          block.is_p2p ? fmt::format("p2p #{}", block.seq) : fmt::format("#{}", block.seq);
      std::string waiters = block.waiters.size() == 1
                                ? fmt::format("rank {} is", block.waiters.front())
                                : fmt::format("{} ranks are", block.waiters.size());
      std::string confidence = "high";
      if (block.reason == BlockReason::kNeverIssued) {
        finding->set_summary(fmt::format(
            "{} {} never issued {} {} in {}, which {} blocked in; {} waiting on nothing else "
            "(stuck outside communication, or diverged control flow).",
            plural, culprits, block.op, seq, GroupLabel(group), waiters,
            cause.culprits.size() > 1 ? "they are" : "it is"));
      } else if (block.reason == BlockReason::kDumpMissing) {
        confidence = "medium";
        finding->set_summary(fmt::format(
            "{} {} left no dump, and {} blocked in {} {} in {} waiting for {}: it most likely "
            "crashed or hung before dumping.",
            plural, culprits, waiters, block.op, seq, GroupLabel(group),
            cause.culprits.size() > 1 ? "them" : "it"));
      } else if (block.reason == BlockReason::kNotStarted) {
        finding->set_summary(fmt::format(
            "{} {} enqueued {} {} in {} but {} GPU never started it, while its peers did.", plural,
            culprits, block.op, seq, GroupLabel(group),
            cause.culprits.size() > 1 ? "their" : "its"));
      } else if (batch_shift) {
        confidence = "low";
        finding->set_summary(fmt::format(
            "Ranks {} are stuck in batched sends/recvs (batch_isend_irecv) on the same channel in "
            "{}, each batch holding an op the other side cannot match: one of them skipped or "
            "added a p2p op, shifting the FIFO pairing. Which one is not in the dumps; compare "
            "their pipeline schedules.",
            culprits, GroupLabel(group)));
      } else if (block.reason == BlockReason::kNoMatchingRecv ||
                 block.reason == BlockReason::kNoMatchingSend) {
        finding->set_summary(
            fmt::format("{} {} never posted the {} that {} {} in {} needs ({} {} waiting).", plural,
                        culprits, block.reason == BlockReason::kNoMatchingRecv ? "recv" : "send",
                        block.op, seq, GroupLabel(group), FormatRankSet(block.waiters),
                        block.waiters.size() == 1 ? "is" : "are"));
      } else {
        bool tie = false;
        for (const Mismatch& mismatch : matched_.mismatches) {
          if (mismatch.group == block.group && mismatch.seq == block.seq) {
            tie |= mismatch.tie;
            for (const std::string& line : mismatch.evidence) finding->add_evidence(line);
          }
        }
        if (tie) confidence = "low";
        std::string what = block.reason == BlockReason::kOpMismatch      ? "a different op"
                           : block.reason == BlockReason::kDtypeMismatch ? "a different dtype"
                                                                         : "different tensor sizes";
        finding->set_summary(
            fmt::format("{} {} issued {} than the other members at {} {} in {}, "
                        "so the collective cannot complete.",
                        plural, culprits, what, block.op, seq, GroupLabel(group)));
      }
      // Sentences start with a capital even when they start with "rank".
      std::string summary = finding->summary();
      if (!summary.empty()) summary[0] = static_cast<char>(std::toupper(summary[0]));
      finding->set_summary(summary);
      finding->set_confidence(confidence);
      finding->add_evidence(fmt::format("waiting in {} {}: {}", block.op, seq,
                                        FormatRankSetWithin(block.waiters, group.ranks)));
      for (int64_t culprit : cause.culprits) {
        const RankDump* dump = DumpOf(culprit);
        if (dump == nullptr) {
          finding->add_evidence(fmt::format("rank {}: no dump", culprit));
          continue;
        }
        std::optional<Entry> last = LastEntry(*dump);
        if (!last.has_value()) {
          finding->add_evidence(fmt::format("rank {}: dump has no entries", culprit));
          continue;
        }
        finding->add_evidence(
            fmt::format("rank {} last recorded {}", culprit, DescribeEntry(*dump, *last)));
        for (const GroupMember& member : group.members) {
          if (member.rank == culprit && member.last_enqueued != kUnknown && !block.is_p2p) {
            finding->add_evidence(fmt::format("rank {} in {}: last issued #{}, last completed #{}",
                                              culprit, GroupLabel(group), member.last_enqueued,
                                              member.last_completed));
          }
        }
      }
      if (IsMismatch(block.reason)) {
        // A desync: the culprit's stack at the collective it issued differently, and a majority
        // member's stack at the same collective beside it.
        AddStackAt(group, cause.culprits.front(), block.seq, finding);
        AddMajorityStack(group, block.waiters, block.seq, finding);
      } else if (const RankDump* dump = DumpOf(cause.culprits.front()); dump != nullptr) {
        // Where the culprit stopped: its last op anywhere.
        if (std::optional<Entry> last = LastEntry(*dump)) {
          AddStack(*dump, *last, finding);
          finding->set_stack_at(ValidUtf8("its last op, " + DescribeEntry(*dump, *last)));
        }
      }
      finding_time_[report->findings_size() - 1] = block.time_created_ns;
    }
  }

  // True when `block` is the collective that `rank`'s oldest unfinished op belongs to: the rank
  // issued it and is still in it.
  bool SitsIn(int64_t rank, const Block& block) const {
    if (block.is_p2p || block.group == kNoGroupIndex) return false;
    auto it = dump_of_rank_.find(rank);
    if (it == dump_of_rank_.end()) return false;
    int64_t first = index_.first_unfinished_entry[it->second];
    if (first < 0) return false;
    const Entry& entry = trace_.ranks[it->second].entries[first];
    if (IsPointToPoint(entry.op) || entry.is_p2p) return false;
    return index_.group_of_local[it->second][entry.group] == block.group &&
           entry.collective_seq_id == block.seq;
  }

  bool InStuckOp(int64_t rank) const {
    for (const StuckOp& stuck : matched_.stuck) {
      if (std::binary_search(stuck.ranks.begin(), stuck.ranks.end(), rank)) return true;
    }
    return false;
  }

  // Ranks that wait on each other with every op queued behind another pending op of their own:
  // typically sends and recvs posted in an order the peers do not mirror (a skipped or extra p2p
  // op shifts the FIFO pairing). The dumps cannot say which side deviated.
  void AddDeadlockFinding(const std::vector<uint32_t>& blocks, const std::vector<int64_t>& ranks,
                          Report* report) {
    uint32_t earliest =
        *std::min_element(blocks.begin(), blocks.end(), [&](uint32_t a, uint32_t b) {
          return matched_.blocks[a].time_created_ns < matched_.blocks[b].time_created_ns;
        });
    const Block& first = matched_.blocks[earliest];
    bool p2p = std::any_of(blocks.begin(), blocks.end(),
                           [&](uint32_t b) { return matched_.blocks[b].is_p2p; });
    const JobGroup& group = index_.groups[first.group];
    Finding* finding = report->add_findings();
    finding->set_kind(p2p ? "p2p_unmatched" : "missing_participant");
    std::vector<int64_t> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t r : sorted) finding->add_ranks(static_cast<int32_t>(r));
    FillGroupRef(group, finding->mutable_process_group());
    finding->set_collective_seq_id(first.seq);
    finding->set_op(first.op);
    finding->set_confidence("low");
    finding->set_summary(fmt::format(
        "Ranks {} wait on each other: each one's pending {} is queued behind another pending op "
        "of its own, so none can progress (sends and recvs posted in an order the peers do not "
        "mirror, e.g. one skipped or extra p2p op). Which side deviated is not in the dumps.",
        FormatRankSet(sorted), p2p ? "send/recv" : "op"));
    for (uint32_t b : blocks) {
      const Block& block = matched_.blocks[b];
      finding->add_evidence(fmt::format(
          "rank {} waits in {} {} in {} for rank {}", FormatRankSet(block.waiters), block.op,
          block.is_p2p ? fmt::format("p2p #{}", block.seq) : fmt::format("#{}", block.seq),
          GroupLabel(index_.groups[block.group]), FormatRankSet(block.blockers)));
    }
    finding_time_[report->findings_size() - 1] = first.time_created_ns;
  }

  void AddStuckFindings(Report* report) {
    int kept = 0;
    for (const StuckOp& stuck : matched_.stuck) {
      if (kept++ >= options_.max_findings_per_kind) {
        ++dropped_[std::string(FailureClassName(FailureClass::kStuckCollective))];
        continue;
      }
      const JobGroup& group = index_.groups[stuck.group];
      Finding* finding = report->add_findings();
      finding->set_kind(std::string(FailureClassName(FailureClass::kStuckCollective)));
      FillGroupRef(group, finding->mutable_process_group());
      finding->set_collective_seq_id(stuck.seq);
      finding->set_op(stuck.op);
      finding->set_confidence(stuck.timing_known && stuck.all_started ? "medium" : "low");
      std::string seq =
          stuck.is_p2p ? fmt::format("p2p #{}", stuck.seq) : fmt::format("#{}", stuck.seq);
      if (stuck.timing_known && stuck.all_started) {
        finding->set_summary(fmt::format(
            "Every member of {} started {} {} and none completed it: the transport (NCCL, "
            "network) stalled, with no single rank to blame from these dumps.",
            GroupLabel(group), stuck.op, seq));
      } else if (stuck.timing_known) {
        // With timing, not all started: their GPUs (or the batch holding a send/recv, whose
        // members PyTorch records without events) had not reached it.
        finding->set_summary(fmt::format(
            "Every member of {} issued {} {} and none completed it, but not every member's GPU "
            "started it: they are held by earlier work, with no single rank to blame from this "
            "op alone.",
            GroupLabel(group), stuck.op, seq));
      } else {
        finding->set_summary(fmt::format(
            "Every member of {} issued {} {} and none completed it; without timing the dumps "
            "cannot tell a stalled transport from a stalled GPU.",
            GroupLabel(group), stuck.op, seq));
      }
      finding->add_evidence(fmt::format("{} {}: {}", stuck.all_started ? "started" : "issued",
                                        stuck.op, FormatRankSetWithin(stuck.ranks, group.ranks)));
      finding_time_[report->findings_size() - 1] = stuck.time_created_ns;
    }
  }

  // A desync that did not hang (or that hangs outside the recorded window) is still a failure.
  void AddSilentMismatchFindings(Report* report) {
    std::set<std::pair<uint32_t, int64_t>> blamed;
    for (const Block& block : matched_.blocks) {
      if (IsMismatch(block.reason)) blamed.emplace(block.group, block.seq);
    }
    std::map<std::string, int> kept;
    for (const Mismatch& mismatch : matched_.mismatches) {
      if (blamed.contains({mismatch.group, mismatch.seq})) continue;
      std::string kind(MismatchKindName(mismatch.kind));
      if (kept[kind]++ >= options_.max_findings_per_kind) {
        ++dropped_[kind];
        continue;
      }
      const JobGroup& group = index_.groups[mismatch.group];
      Finding* finding = report->add_findings();
      finding->set_kind(kind);
      for (int64_t r : mismatch.minority) finding->add_ranks(static_cast<int32_t>(r));
      FillGroupRef(group, finding->mutable_process_group());
      finding->set_collective_seq_id(mismatch.seq);
      finding->set_confidence(mismatch.tie ? "low" : mismatch.completed ? "medium" : "high");
      const RankDump* dump = DumpOf(mismatch.minority.empty() ? -1 : mismatch.minority.front());
      std::string op;
      for (const GroupMember& member : group.members) {
        if (dump == nullptr || member.rank != dump->rank) continue;
        for (const CollectiveUnit& unit : member.units) {
          if (unit.seq == mismatch.seq) {
            op = std::string(dump->strings.view(dump->entries[unit.first_entry].op_name));
          }
        }
      }
      if (dump != nullptr) AddStackAt(group, dump->rank, mismatch.seq, finding);
      AddMajorityStack(group, mismatch.majority, mismatch.seq, finding);
      finding->set_op(op);
      finding->set_summary(fmt::format(
          "{} {} disagreed with the other members of {} at collective #{} ({}){}.",
          mismatch.minority.size() > 1 ? "Ranks" : "Rank",
          FormatRankSetWithin(mismatch.minority, group.ranks), GroupLabel(group), mismatch.seq,
          kind,
          mismatch.completed ? ", and the collective completed anyway: results are suspect" : ""));
      for (const std::string& line : mismatch.evidence) finding->add_evidence(line);
      int64_t time = kUnknown;
      if (dump != nullptr) {
        for (const Entry& e : dump->entries) {
          if (e.collective_seq_id == mismatch.seq) {
            time = e.time_created_ns;
            break;
          }
        }
      }
      finding_time_[report->findings_size() - 1] = time;
    }
  }

  // Ranks consistently last to enqueue (stragglers.h), as findings with their evidence.
  void AddStragglerFindings(Report* report) {
    for (const Straggler& found : stragglers_) {
      const JobGroup& group = index_.groups[found.group];
      auto* straggler = report->add_stragglers();
      straggler->set_rank(static_cast<int32_t>(found.rank));
      FillGroupRef(group, straggler->mutable_process_group());
      straggler->set_median_lateness_ms(found.median_lateness_ms);
      straggler->set_fraction_last(found.fraction_last);
      straggler->set_collectives_compared(found.collectives_compared);
      Finding* finding = report->add_findings();
      finding->set_kind("straggler");
      finding->add_ranks(static_cast<int32_t>(found.rank));
      FillGroupRef(group, finding->mutable_process_group());
      finding->set_collective_seq_id(-1);
      finding->set_confidence(found.fraction_last > 0.9 ? "high" : "medium");
      finding->set_summary(fmt::format(
          "Rank {} enqueued its collectives {:.1f} ms after the median member (last in {:.0f}% "
          "of {} collectives): it slows every group it is in.",
          found.rank, found.median_lateness_ms, 100 * found.fraction_last,
          found.collectives_compared));
      finding_time_[report->findings_size() - 1] = std::numeric_limits<int64_t>::max() - 1;
    }
  }

  void SortFindings(Report* report) {
    std::vector<std::pair<int64_t, int>> order;
    for (int i = 0; i < report->findings_size(); ++i) {
      auto it = finding_time_.find(i);
      int64_t time = it == finding_time_.end() || it->second == kUnknown
                         ? std::numeric_limits<int64_t>::max()
                         : it->second;
      order.emplace_back(time, i);
    }
    std::stable_sort(order.begin(), order.end());
    google::protobuf::RepeatedPtrField<Finding> sorted;
    for (const auto& [time, i] : order) *sorted.Add() = report->findings(i);
    report->mutable_findings()->Swap(&sorted);
  }

  void AddDataLossFindings(Report* report) {
    if (trace_.rejected.empty() && trace_.conflicts.empty()) return;
    Finding* finding = report->add_findings();
    finding->set_kind("data_loss");
    std::set<int64_t> ranks;
    for (const RejectedFile& file : trace_.rejected) {
      if (file.rank != kUnknown) ranks.insert(file.rank);
      finding->add_evidence(ValidUtf8(file.error));
    }
    for (const RankConflict& conflict : trace_.conflicts) {
      ranks.insert(conflict.rank);
      finding->add_evidence(ValidUtf8(fmt::format("rank {}: several files ({}), none used",
                                                  conflict.rank, fmt::join(conflict.paths, ", "))));
    }
    for (int64_t r : ranks) finding->add_ranks(static_cast<int32_t>(r));
    finding->set_collective_seq_id(-1);
    finding->set_confidence("high");
    finding->set_summary(
        fmt::format("{} file(s) could not be used; the analysis treats their "
                    "ranks as having no dump.",
                    trace_.rejected.size() + trace_.conflicts.size()));
  }

  static bool IsCulpritKind(const std::string& kind) {
    std::optional<FailureClass> c = ParseFailureClass(kind);
    return c.has_value() && NamesCulprits(*c);
  }

  void FillVerdict(const WaitForGraph& graph, Report* report) {
    auto* verdict = report->mutable_verdict();
    verdict->set_collective_seq_id(-1);
    const Finding* lead = nullptr;
    std::set<int64_t> culprits;
    // The lead is the most certain cause, the earliest among equals (findings are in time
    // order): a doubtful finding, such as a desync that completed anyway, never outranks a
    // certain cause of the hang.
    auto certainty = [](const Finding& f) {
      return f.confidence() == "high" ? 2 : f.confidence() == "medium" ? 1 : 0;
    };
    // With --pg-filter, the headline comes from the selected groups when they hold a cause.
    bool filtered =
        !options_.pg_filter.empty() &&
        std::any_of(report->findings().begin(), report->findings().end(), [&](const Finding& f) {
          return IsCulpritKind(f.kind()) && FindingSelected(f);
        });
    bool outside_only = !options_.pg_filter.empty() && !filtered;
    for (const Finding& finding : report->findings()) {
      if (IsCulpritKind(finding.kind()) && (!filtered || FindingSelected(finding))) {
        if (lead == nullptr || certainty(finding) > certainty(*lead)) lead = &finding;
      }
    }
    // Other culprits come from findings as certain as the lead; doubtful ones stay findings.
    for (const Finding& finding : report->findings()) {
      if (lead != nullptr && IsCulpritKind(finding.kind()) &&
          (!filtered || FindingSelected(finding)) && certainty(finding) >= certainty(*lead)) {
        culprits.insert(finding.ranks().begin(), finding.ranks().end());
      }
    }
    if (lead == nullptr) {
      for (const Finding& finding : report->findings()) {
        if (ParseFailureClass(finding.kind()) == FailureClass::kStuckCollective) {
          lead = &finding;
          break;
        }
      }
    }
    size_t expected = trace_.ranks.size() +
                      static_cast<size_t>(report->inputs().ranks_missing_size()) +
                      UnreadableRanks().size();
    bool too_few = trace_.ranks.size() < 2 || trace_.ranks.size() * 2 < expected;
    FailureClass failure_class = FailureClass::kNone;
    std::string confidence = "high";
    std::string summary;
    if (lead != nullptr) {
      failure_class = *ParseFailureClass(lead->kind());
      confidence = lead->confidence();
      std::vector<int64_t> others;
      for (int64_t r : culprits) {
        if (std::find(lead->ranks().begin(), lead->ranks().end(), r) == lead->ranks().end()) {
          others.push_back(r);
        }
      }
      if (!others.empty() && failure_class != FailureClass::kStuckCollective) {
        summary = fmt::format("{} Other independent culprits: {}.", lead->summary(),
                              FormatRankSet(others));
      } else {
        summary = lead->summary();
      }
      *verdict->mutable_process_group() = lead->process_group();
      verdict->set_collective_seq_id(lead->collective_seq_id());
      verdict->set_op(lead->op());
      if (too_few && confidence == "high") confidence = "medium";
      if (too_few) {
        // What so few dumps can and cannot decide comes first.
        std::vector<int64_t> missing(report->inputs().ranks_missing().begin(),
                                     report->inputs().ranks_missing().end());
        bool blamed_have_dumps = std::all_of(lead->ranks().begin(), lead->ranks().end(),
                                             [&](int64_t r) { return DumpOf(r) != nullptr; });
        std::string limit =
            fmt::format("Only {} of {} ranks' dumps could be read ({}).", trace_.ranks.size(),
                        expected, MissingAndUnreadable(missing));
        missing = AbsentRanks(*report);  // whose dumps would settle it
        if (blamed_have_dumps) {
          summary = fmt::format("{} From them: {}", limit, summary);
        } else {
          // The blamed rank left no dump: among so many missing ones it may as well be another
          // victim of a culprit whose dump is missing too.
          failure_class = FailureClass::kInsufficientEvidence;
          confidence = "low";
          culprits.clear();
          summary = fmt::format(
              "{} They show ranks waiting for rank(s) {} that left no dump, but with most dumps "
              "missing that rank may be one more victim; the dumps of ranks {} would settle it. "
              "The wait seen: {}",
              limit,
              FormatRankSet(std::vector<int64_t>(lead->ranks().begin(), lead->ranks().end())),
              FormatRankSet(missing), lead->summary());
        }
      }
    } else if (too_few) {
      failure_class = FailureClass::kInsufficientEvidence;
      confidence = "low";
      summary = fmt::format(
          "Only {} of {} ranks' dumps could be read: too few to tell culprits from victims. The "
          "dumps of ranks {} would settle it.",
          trace_.ranks.size(), expected, FormatRankSet(AbsentRanks(*report)));
    } else if (!unreadable_sinks_.empty()) {
      failure_class = FailureClass::kInsufficientEvidence;
      confidence = "low";
      std::vector<std::string> errors;
      for (const RejectedFile& file : trace_.rejected) {
        if (std::binary_search(unreadable_sinks_.begin(), unreadable_sinks_.end(), file.rank)) {
          errors.push_back(file.error);
        }
      }
      summary = fmt::format(
          "Ranks wait for {} {}, whose dump could not be read{}: whether it is the cause or one "
          "more victim is not in the other dumps. A readable copy of its dump would settle it.",
          unreadable_sinks_.size() > 1 ? "ranks" : "rank", FormatRankSet(unreadable_sinks_),
          errors.empty() ? "" : fmt::format(" ({})", fmt::join(errors, "; ")));
    } else if (!trace_.missing_ranks.empty()) {
      // Nothing is seen stuck, but a rank left no file: a rank that died takes no dump with it,
      // and its peers' ops may have ended in errors that the recorder does not tell from
      // completion (Gloo retires both). The dumps cannot call such a job healthy.
      failure_class = FailureClass::kInsufficientEvidence;
      confidence = "low";
      summary = fmt::format(
          "Nothing in the {} dumps read is stuck or mismatched, but {} {} left no dump: a rank "
          "that died leaves none, and its peers' last ops may have ended in errors that the "
          "flight recorder does not tell from completion. The dumps or logs of {} would settle "
          "it.",
          trace_.ranks.size(), trace_.missing_ranks.size() > 1 ? "ranks" : "rank",
          FormatRankSet(trace_.missing_ranks),
          trace_.missing_ranks.size() > 1 ? "those ranks" : "that rank");
    } else if (matched_.in_flight_ops > 0) {
      summary = fmt::format(
          "No collective is stuck: {} op(s) were in flight but younger than their timeout when "
          "the dumps were taken, and every completed collective matched.",
          matched_.in_flight_ops);
    } else {
      summary = "Every collective in the dumps is matched across its group and nothing is stuck.";
    }
    if (IsFailureClass(failure_class) && index_.dump_times.job_ns == kUnknown) {
      // Pending ops were judged stuck for want of a dump time: the structure may be certain,
      // but not that the job had hung rather than been dumped on demand while running.
      if (confidence == "high") confidence = "medium";
      summary +=
          " The dump time is unknown (no usable file times), so pending ops were judged "
          "stuck; if the dumps were taken on demand from a running job, give --dump-time.";
    }
    if (IsFailureClass(failure_class) && matched_.stalled_beyond_rhythm_ops > 0 &&
        matched_.ops_known_stuck == 0 && index_.dump_times.job_ns != kUnknown) {
      // No op reached its timeout: the stall rests on the job's rhythm, not on a watchdog.
      if (confidence == "high") confidence = "medium";
      summary += fmt::format(
          " A hang in progress: no op had reached its timeout when the dumps were taken, but "
          "ranks had waited up to {:.1f} s, far beyond the job's rhythm ({:.1f} ms between a "
          "rank's ops at the median).",
          static_cast<double>(matched_.longest_stall_ns) / 1e9,
          static_cast<double>(matched_.stall_median_gap_ns) / 1e6);
    }
    if (outside_only && lead != nullptr) {
      summary = fmt::format("No cause lies in the selected groups ({}); outside them: {}",
                            fmt::join(options_.pg_filter, ", "), summary);
    }
    if (failure_class == FailureClass::kNone && report->stragglers_size() > 0) {
      summary +=
          fmt::format(" Rank {} is a straggler (see findings).", report->stragglers(0).rank());
    }
    verdict->set_failure_class(std::string(FailureClassName(failure_class)));
    for (int64_t r : culprits) verdict->add_culprit_ranks(static_cast<int32_t>(r));
    verdict->set_confidence(confidence);
    verdict->set_summary(summary);
    // The lead may blame a rank for what it did (a mismatch) while the graph also finds it
    // blocked elsewhere: it is then a culprit, never also its own victim.
    for (int64_t r : graph.victims()) {
      if (!culprits.contains(r)) verdict->add_victim_ranks(static_cast<int32_t>(r));
    }
    NextActionContext context;
    context.failure_class = failure_class;
    context.culprits.assign(culprits.begin(), culprits.end());
    // Blamed for what it did not do while leaving no file behind: its crash is the lead.
    context.culprit_dump_missing =
        lead != nullptr && lead->ranks_size() > 0 &&
        std::all_of(lead->ranks().begin(), lead->ranks().end(),
                    [&](int32_t r) { return DumpOf(r) == nullptr && !index_.Unreadable(r); });
    context.timing_recordable = !OnlyGloo();
    context.timing_known = TimingSeen();
    context.buffer_wrapped = BufferWrapped();
    // Ranks whose files could not be read too: a readable copy is what is missing.
    context.ranks_missing = AbsentRanks(*report);
    context.has_stragglers = report->stragglers_size() > 0;
    for (const std::string& action : NextActions(context)) verdict->add_next_actions(action);
    AddChains(graph, verdict);
  }

  // Every entry came from Gloo, which records no start or completion events at all.
  bool OnlyGloo() const {
    bool any = false;
    for (const RankDump& dump : trace_.ranks) {
      for (const Entry& entry : dump.entries) {
        if (dump.strings.view(entry.backend) != "gloo") return false;
        any = true;
      }
    }
    return any;
  }

  bool TimingSeen() const {
    for (const RankDump& dump : trace_.ranks) {
      for (const Entry& entry : dump.entries) {
        if (entry.time_discovered_started_ns != kUnknown || entry.state == EntryState::kStarted) {
          return true;
        }
      }
    }
    return false;
  }

  // Entries rolled out of some ring buffer: pg_status knows more than the entries.
  bool BufferWrapped() const {
    for (const JobGroup& group : index_.groups) {
      for (const GroupMember& member : group.members) {
        if (member.first_seq_in_buffer > 1) return true;
      }
    }
    return false;
  }

  void AddChains(const WaitForGraph& graph, report::Verdict* verdict) {
    // The most informative chains are the longest: they cross groups (a DP waiter blocked by a
    // PP peer blocked by the culprit). Ties go to the lowest rank.
    std::vector<std::pair<int, int64_t>> candidates;
    for (int64_t victim : graph.victims()) candidates.emplace_back(-graph.Distance(victim), victim);
    std::sort(candidates.begin(), candidates.end());
    std::set<std::vector<uint32_t>> seen_paths;
    for (const auto& [negative_distance, victim] : candidates) {
      if (verdict->chains_size() >= kMaxChains) break;
      std::vector<WaitHop> chain = graph.ChainFrom(victim);
      if (chain.empty()) continue;
      std::vector<uint32_t> path;
      for (const WaitHop& hop : chain) path.push_back(hop.block);
      if (!seen_paths.insert(path).second) continue;
      auto* out = verdict->add_chains();
      for (const WaitHop& hop : chain) {
        const Block& block = matched_.blocks[hop.block];
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

  bool FindingSelected(const Finding& finding) const {
    for (const std::string& wanted : options_.pg_filter) {
      if (wanted == finding.process_group().name() || wanted == finding.process_group().desc()) {
        return true;
      }
    }
    return false;
  }

  bool GroupSelected(const JobGroup& group) const {
    if (options_.pg_filter.empty()) return true;
    for (const std::string& wanted : options_.pg_filter) {
      if (wanted == group.name || wanted == group.desc) return true;
    }
    return false;
  }

  void FillProcessGroups(Report* report) {
    for (uint32_t g = 0; g < index_.groups.size(); ++g) {
      const JobGroup& group = index_.groups[g];
      if (!GroupSelected(group)) continue;
      const GroupMatch& match = matched_.groups[g];
      auto* out = report->add_process_groups();
      FillGroupRef(group, out->mutable_group());
      for (const GroupMember& member : group.members) {
        if (member.dump >= 0) out->add_ranks_loaded(static_cast<int32_t>(member.rank));
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

  void FillRanks(const WaitForGraph& graph, Report* report) {
    std::set<int64_t> culprits(report->verdict().culprit_ranks().begin(),
                               report->verdict().culprit_ranks().end());
    std::set<int64_t> victims(graph.victims().begin(), graph.victims().end());
    std::set<int64_t> all;
    for (const RankDump& dump : trace_.ranks) all.insert(dump.rank);
    for (int32_t r : report->inputs().ranks_missing()) all.insert(r);
    for (int64_t r : UnreadableRanks()) all.insert(r);
    // Each dump's oldest op that did not complete, else its newest: a pass over every entry of a
    // healthy job, one dump per core.
    std::vector<std::optional<Entry>> shown_of_dump(trace_.ranks.size());
    ParallelFor(
        trace_.ranks.size(), options_.jobs,
        [&](size_t d) {
          const auto& entries = trace_.ranks[d].entries;
          for (const Entry& entry : entries) {
            if (entry.state != EntryState::kCompleted) {
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

  void FillStats(Report* report) {
    auto* stats = report->mutable_stats();
    stats->set_ranks_loaded(static_cast<int32_t>(trace_.ranks.size()));
    stats->set_ranks_expected(static_cast<int32_t>(
        trace_.ranks.size() + report->inputs().ranks_missing_size() + UnreadableRanks().size()));
    stats->set_entries(index_.entries);
    stats->set_process_groups(static_cast<int32_t>(index_.groups.size()));
    stats->set_collectives_checked(static_cast<int32_t>(matched_.collectives_checked));
    stats->set_p2p_ops_checked(static_cast<int32_t>(matched_.p2p_ops_checked));
    auto& counters = *stats->mutable_counters();
    for (const RankDump& dump : trace_.ranks) {
      for (const auto& [name, count] : dump.oddities) counters[name] += count;
    }
    if (matched_.in_flight_ops > 0) counters["ops_in_flight_not_stuck"] = matched_.in_flight_ops;
    if (!trace_.rejected.empty()) counters["files_rejected"] = trace_.rejected.size();
    if (!trace_.skipped.empty()) counters["files_skipped"] = trace_.skipped.size();
    for (const auto& [kind, count] : dropped_) counters["findings_not_listed:" + kind] = count;
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
  // Ranks others wait for whose file exists but could not be read, ascending.
  std::vector<int64_t> unreadable_sinks_;
  std::map<int64_t, size_t> dump_of_rank_;
  JobIndex index_;
  MatchResult matched_;
  std::vector<Straggler> stragglers_;    // found while matching
  std::map<int, int64_t> finding_time_;  // finding index -> time of its cause
  std::map<std::string, int64_t> dropped_;
};

}  // namespace

Report Analyze(const LoadedTrace& trace, const AnalyzeOptions& options) {
  AnalyzeOptions with_gone = options;
  if (options.stacks != nullptr) {
    // A worker that refuses connections is a process that is gone: its peers' waits end there.
    std::vector<int64_t> gone = RanksWhoseWorkerIsGone(*options.stacks);
    with_gone.died_ranks.insert(with_gone.died_ranks.end(), gone.begin(), gone.end());
    std::sort(with_gone.died_ranks.begin(), with_gone.died_ranks.end());
    with_gone.died_ranks.erase(
        std::unique(with_gone.died_ranks.begin(), with_gone.died_ranks.end()),
        with_gone.died_ranks.end());
  }
  Report report = Analyzer(trace, with_gone).Run();
  // The live stacks first among the supporting evidence: they may decide the verdict.
  if (options.stacks != nullptr)
    JoinStackEvidence(*options.stacks, options.stacks_stalled_ns, &report);
  if (options.monitors != nullptr) {
    // Supporting evidence from the hosts' side, after the dumps' own findings: it says what the
    // GPUs and processes were doing, not which rank others waited for.
    for (const MonitorFinding& seen : FindMonitorAnomalies(*options.monitors)) {
      Finding* finding = report.add_findings();
      finding->set_kind(seen.kind);
      for (int32_t rank : seen.ranks) finding->add_ranks(rank);
      finding->set_collective_seq_id(-1);
      finding->set_confidence("medium");
      finding->set_summary(ValidUtf8(seen.summary));
      for (const std::string& line : seen.evidence) finding->add_evidence(ValidUtf8(line));
    }
  }
  return report;
}

bool IsFailure(const Report& report) {
  std::optional<FailureClass> c = ParseFailureClass(report.verdict().failure_class());
  const std::string& root = report.verdict().root_cause().kind();
  return (c.has_value() && IsFailureClass(*c)) || (!root.empty() && root != "none");
}

}  // namespace fr
