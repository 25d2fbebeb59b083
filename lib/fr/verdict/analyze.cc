// The judging half of the verdict: index, match, wait-for graph, then findings and the verdict
// as values (judgment.h). Nothing here writes the report; report_writer.cc does, from the
// Judgment alone.
#include "fr/verdict/analyze.h"

#include <algorithm>
#include <cctype>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/index/job_index.h"
#include "fr/match/matcher.h"
#include "fr/match/p2p_rhythm.h"
#include "fr/verdict/failure_class.h"
#include "fr/verdict/judgment.h"
#include "fr/verdict/next_actions.h"
#include "fr/verdict/program_order.h"
#include "fr/verdict/report_writer.h"
#include "fr/verdict/stack_evidence.h"
#include "fr/verdict/stragglers.h"
#include "fr/verdict/unrecorded_p2p.h"
#include "fr/waitfor/wait_for_graph.h"

namespace fr {
namespace {

constexpr int kMaxStackFrames = 12;
constexpr int kMaxChains = 3;

std::string GroupLabel(const JobGroup& group) {
  return group.desc.empty() ? fmt::format("group {}", group.name)
                            : fmt::format("group {} ({})", group.name, group.desc);
}

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

FailureClass ClassOfMismatch(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::kOp:
      return FailureClass::kOpMismatch;
    case MismatchKind::kDtype:
      return FailureClass::kDtypeMismatch;
    case MismatchKind::kSize:
      return FailureClass::kSizeMismatch;
  }
  return FailureClass::kOpMismatch;
}

}  // namespace

std::string DescribeEntry(const RankDump& dump, const Entry& entry) {
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

namespace {

class Judge {
 public:
  Judge(const LoadedTrace& trace, const AnalyzeOptions& options)
      : trace_(trace), options_(options) {}

  Judgment Run() {
    Judgment& j = judgment_;
    j.index = BuildJobIndex(trace_, options_.dump_time_ns, options_.jobs, options_.died_ranks);
    order_.emplace(trace_, j.index);
    // Stragglers read only the trace and the index, which nothing changes from here on: they are
    // found on a second core while the groups are matched.
    std::future<std::vector<Straggler>> stragglers =
        std::async(std::launch::async, [this] { return FindStragglers(trace_, judgment_.index); });
    j.matched = MatchJob(trace_, j.index, options_.jobs);
    j.stragglers = stragglers.get();
    LinkSinksWaitingInUnrecordedOps(trace_, *order_, &j.matched.blocks);
    WaitForGraph graph(j.matched.blocks);

    j.unreadable_ranks = UnreadableRanks();
    j.missing_ranks = MissingRanks();
    AddCulpritFindings(graph);
    AddStuckFindings();
    AddSilentMismatchFindings();
    AddStragglerFindings();
    SortFindings();
    AddDataLossFindings();
    JudgeVerdict(graph);
    j.blocked_ranks = graph.victims();
    order_.reset();  // it refers to the index, which moves out with the judgment
    return std::move(judgment_);
  }

 private:
  const RankDump* DumpOf(int64_t rank) const { return order_->DumpOf(rank); }
  const JobIndex& index() const { return judgment_.index; }
  const std::vector<Block>& blocks() const { return judgment_.matched.blocks; }

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

  // Ranks without a usable file: missing, or with several conflicting ones (ascending).
  std::vector<int64_t> MissingRanks() const {
    std::set<int64_t> missing(index().ranks_without_file.begin(), index().ranks_without_file.end());
    for (const RankConflict& conflict : trace_.conflicts) missing.insert(conflict.rank);
    return {missing.begin(), missing.end()};
  }

  // Ranks without a readable dump: missing, or whose files could not be read.
  std::vector<int64_t> AbsentRanks() const {
    std::vector<int64_t> absent = judgment_.missing_ranks;
    for (int64_t r : judgment_.unreadable_ranks) absent.push_back(r);
    std::sort(absent.begin(), absent.end());
    return absent;
  }

  // "missing: 8-15", "missing: 8-15; unreadable: 3", "unreadable: 3".
  std::string MissingAndUnreadable() const {
    std::vector<std::string> parts;
    const std::vector<int64_t>& missing = judgment_.missing_ranks;
    if (!missing.empty()) parts.push_back(fmt::format("missing: {}", FormatRankSet(missing)));
    if (!judgment_.unreadable_ranks.empty()) {
      parts.push_back(fmt::format("unreadable: {}", FormatRankSet(judgment_.unreadable_ranks)));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
  }

  std::vector<std::string> StackOf(const RankDump& dump, const Entry& entry) const {
    std::vector<std::string> stack;
    if (entry.stack == kNoStack) return stack;
    int count = 0;
    for (uint32_t f : dump.Stack(entry.stack)) {
      if (count++ == kMaxStackFrames) {
        stack.push_back("...");
        break;
      }
      const Frame& frame = dump.frames[f];
      stack.push_back(fmt::format("{} ({}:{})", dump.strings.view(frame.name),
                                  dump.strings.view(frame.filename), frame.line));
    }
    return stack;
  }

  // The entry `rank` recorded as collective `seq` of `group`, or nullopt.
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
  void AddStackAt(const JobGroup& group, int64_t rank, int64_t seq, JudgedFinding* finding) const {
    const RankDump* dump = nullptr;
    std::optional<Entry> entry = EntryAt(group, rank, seq, &dump);
    if (!entry.has_value()) return;
    std::vector<std::string> stack = StackOf(*dump, *entry);
    finding->stack.insert(finding->stack.end(), stack.begin(), stack.end());
    if (!finding->stack.empty()) finding->stack_at = ValidUtf8(DescribeEntry(*dump, *entry));
  }

  // The stack of the lowest majority member with one at collective `seq`, for comparison.
  void AddMajorityStack(const JobGroup& group, const std::vector<int64_t>& majority, int64_t seq,
                        JudgedFinding* finding) const {
    for (int64_t rank : majority) {
      const RankDump* dump = nullptr;
      std::optional<Entry> entry = EntryAt(group, rank, seq, &dump);
      if (!entry.has_value() || entry->stack == kNoStack) continue;
      finding->majority_rank = rank;
      finding->majority_stack = StackOf(*dump, *entry);
      return;
    }
  }

  // True when `block` is the collective that `rank`'s oldest unfinished op belongs to: the rank
  // issued it and is still in it.
  bool SitsIn(int64_t rank, const Block& block) const {
    if (block.is_p2p || block.group == kNoGroupIndex) return false;
    int64_t d = order_->DumpIndexOf(rank);
    if (d < 0) return false;
    int64_t first = index().first_unfinished_entry[d];
    if (first < 0) return false;
    const Entry& entry = trace_.ranks[d].entries[first];
    if (IsPointToPoint(entry.op) || entry.is_p2p) return false;
    return index().group_of_local[d][entry.group] == block.group &&
           entry.collective_seq_id == block.seq;
  }

  bool InStuckOp(int64_t rank) const {
    for (const StuckOp& stuck : judgment_.matched.stuck) {
      if (std::binary_search(stuck.ranks.begin(), stuck.ranks.end(), rank)) return true;
    }
    return false;
  }

  JudgedFinding& AddFinding(FailureClass failure_class) {
    JudgedFinding& finding = judgment_.findings.emplace_back();
    finding.failure_class = failure_class;
    return finding;
  }

  // One finding per culprit set blocked for the same reason at the same op.
  void AddCulpritFindings(const WaitForGraph& graph) {
    struct Cause {
      uint32_t block;
      std::vector<int64_t> culprits;
    };
    std::map<uint32_t, Cause> by_block;
    std::vector<uint32_t> relay_cycle;
    std::vector<int64_t> relay_ranks;
    for (int64_t culprit : graph.culprits()) {
      std::vector<uint32_t> on = graph.BlocksOn(culprit);
      if (on.empty()) continue;
      std::map<uint32_t, int64_t> positions = order_->ProgramPositions(culprit, on, blocks());
      auto position = [&](uint32_t b) {
        auto it = positions.find(b);
        return it == positions.end() ? 0 : it->second;
      };
      uint32_t best = *std::min_element(on.begin(), on.end(), [&](uint32_t a, uint32_t b) {
        const Block& x = blocks()[a];
        const Block& y = blocks()[b];
        // The earliest op others wait in is the root: what the culprit failed to do first.
        // Everything after it (sends it never reached, later collectives) follows from it.
        // "Blocked behind an earlier op" only relays a wait: prefer any direct cause.
        bool x_relay = PassesWaitOn(x);
        bool y_relay = PassesWaitOn(y);
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
      if (PassesWaitOn(blocks()[best])) {
        if (!InStuckOp(culprit)) relay_ranks.push_back(culprit);
        continue;
      }
      // Waited for, but its file could not be read: what it did is unknown, so it is neither
      // blamed nor cleared; the verdict says which file would settle it.
      if (std::all_of(on.begin(), on.end(), [&](uint32_t b) {
            return blocks()[b].reason == BlockReason::kDumpUnreadable;
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
      for (uint32_t b = 0; b < blocks().size(); ++b) {
        if (among(blocks()[b].waiters) && among(blocks()[b].blockers)) relay_cycle.push_back(b);
      }
      if (!relay_cycle.empty()) AddDeadlockFinding(relay_cycle, relay_ranks);
    }
    for (auto& [b, cause] : by_block) AddCulpritFinding(blocks()[b], &cause.culprits);
  }

  void AddCulpritFinding(const Block& block, std::vector<int64_t>* culprit_ranks) {
    std::vector<int64_t>& culprits_of = *culprit_ranks;
    const JobGroup& group = index().groups[block.group];
    bool batch_shift = IsHeldByBatch(block.reason) && !block.held_by_other_rank;
    if (batch_shift) {
      // Batched p2p stuck against each other: a skipped or extra op on either side of the
      // channel shifts the FIFO pairing; both sides are named.
      culprits_of.insert(culprits_of.end(), block.waiters.begin(), block.waiters.end());
      std::sort(culprits_of.begin(), culprits_of.end());
      culprits_of.erase(std::unique(culprits_of.begin(), culprits_of.end()), culprits_of.end());
    }
    JudgedFinding& finding = AddFinding(ClassOfReason(block.reason));
    finding.ranks = culprits_of;
    finding.group = block.group;
    finding.seq = block.seq;
    finding.op = block.op;
    std::string culprits = FormatRankSetWithin(culprits_of, group.ranks);
    std::string plural = culprits_of.size() > 1 ? "ranks" : "rank";
    std::string seq =
        block.is_p2p ? fmt::format("p2p #{}", block.seq) : fmt::format("#{}", block.seq);
    std::string waiters = block.waiters.size() == 1
                              ? fmt::format("rank {} is", block.waiters.front())
                              : fmt::format("{} ranks are", block.waiters.size());
    Confidence confidence = Confidence::kHigh;
    if (block.reason == BlockReason::kNeverIssued) {
      finding.summary = fmt::format(
          "{} {} never issued {} {} in {}, which {} blocked in; {} waiting on nothing else "
          "(stuck outside communication, or diverged control flow).",
          plural, culprits, block.op, seq, GroupLabel(group), waiters,
          culprits_of.size() > 1 ? "they are" : "it is");
    } else if (block.reason == BlockReason::kDumpMissing) {
      confidence = Confidence::kMedium;
      finding.summary = fmt::format(
          "{} {} left no dump, and {} blocked in {} {} in {} waiting for {}: it most likely "
          "crashed or hung before dumping.",
          plural, culprits, waiters, block.op, seq, GroupLabel(group),
          culprits_of.size() > 1 ? "them" : "it");
    } else if (block.reason == BlockReason::kNotStarted) {
      finding.summary = fmt::format(
          "{} {} enqueued {} {} in {} but {} GPU never started it, while its peers did.", plural,
          culprits, block.op, seq, GroupLabel(group), culprits_of.size() > 1 ? "their" : "its");
    } else if (batch_shift) {
      confidence = Confidence::kLow;
      const std::string held = fmt::format(
          "Ranks {} are stuck in batched sends/recvs (batch_isend_irecv) on the same channel in "
          "{}, each batch holding an op the other side cannot match: one of them skipped or "
          "added a p2p op, shifting the FIFO pairing.",
          culprits, GroupLabel(group));
      std::string deviated =
          DeviatedFromOwnRhythm(MutualP2pWaits(culprits_of, block.group), &finding);
      if (!deviated.empty()) {
        confidence = Confidence::kMedium;
        culprits_of = finding.ranks;
        finding.summary = fmt::format("{} {}", held, deviated);
      } else {
        finding.summary = fmt::format(
            "{} Which one is not in the dumps; compare their pipeline "
            "schedules.",
            held);
      }
    } else if (block.reason == BlockReason::kNoMatchingRecv ||
               block.reason == BlockReason::kNoMatchingSend) {
      finding.summary =
          fmt::format("{} {} never posted the {} that {} {} in {} needs ({} {} waiting).", plural,
                      culprits, block.reason == BlockReason::kNoMatchingRecv ? "recv" : "send",
                      block.op, seq, GroupLabel(group), FormatRankSet(block.waiters),
                      block.waiters.size() == 1 ? "is" : "are");
    } else {
      bool tie = false;
      for (const Mismatch& mismatch : judgment_.matched.mismatches) {
        if (mismatch.group == block.group && mismatch.seq == block.seq) {
          tie |= mismatch.tie;
          for (const std::string& line : mismatch.evidence) finding.evidence.push_back(line);
        }
      }
      if (tie) confidence = Confidence::kLow;
      std::string what = block.reason == BlockReason::kOpMismatch      ? "a different op"
                         : block.reason == BlockReason::kDtypeMismatch ? "a different dtype"
                                                                       : "different tensor sizes";
      finding.summary = fmt::format(
          "{} {} issued {} than the other members at {} {} in {}, "
          "so the collective cannot complete.",
          plural, culprits, what, block.op, seq, GroupLabel(group));
    }
    // Sentences start with a capital even when they start with "rank".
    if (!finding.summary.empty()) {
      finding.summary[0] = static_cast<char>(std::toupper(finding.summary[0]));
    }
    finding.confidence = confidence;
    finding.evidence.push_back(fmt::format("waiting in {} {}: {}", block.op, seq,
                                           FormatRankSetWithin(block.waiters, group.ranks)));
    for (int64_t culprit : culprits_of) {
      const RankDump* dump = DumpOf(culprit);
      if (dump == nullptr) {
        finding.evidence.push_back(fmt::format("rank {}: no dump", culprit));
        continue;
      }
      if (dump->entries.empty()) {
        finding.evidence.push_back(fmt::format("rank {}: dump has no entries", culprit));
        continue;
      }
      finding.evidence.push_back(fmt::format("rank {} last recorded {}", culprit,
                                             DescribeEntry(*dump, dump->entries.back())));
      for (const GroupMember& member : group.members) {
        if (member.rank == culprit && member.last_enqueued != kUnknown && !block.is_p2p) {
          finding.evidence.push_back(
              fmt::format("rank {} in {}: last issued #{}, last completed #{}", culprit,
                          GroupLabel(group), member.last_enqueued, member.last_completed));
        }
      }
    }
    if (IsMismatch(block.reason)) {
      // A desync: the culprit's stack at the collective it issued differently, and a majority
      // member's stack at the same collective beside it.
      AddStackAt(group, culprits_of.front(), block.seq, &finding);
      AddMajorityStack(group, block.waiters, block.seq, &finding);
    } else if (const RankDump* dump = DumpOf(culprits_of.front());
               dump != nullptr && !dump->entries.empty()) {
      // Where the culprit stopped: its last op anywhere.
      Entry last = dump->entries.back();
      finding.stack = StackOf(*dump, last);
      finding.stack_at = ValidUtf8("its last op, " + DescribeEntry(*dump, last));
    }
    finding.cause_time_ns = block.time_created_ns;
  }

  // Ranks that wait on each other with every op queued behind another pending op of their own:
  // typically sends and recvs posted in an order the peers do not mirror (a skipped or extra p2p
  // op shifts the FIFO pairing). The dumps cannot say which side deviated.
  void AddDeadlockFinding(const std::vector<uint32_t>& cycle, const std::vector<int64_t>& ranks) {
    uint32_t earliest = *std::min_element(cycle.begin(), cycle.end(), [&](uint32_t a, uint32_t b) {
      return blocks()[a].time_created_ns < blocks()[b].time_created_ns;
    });
    const Block& first = blocks()[earliest];
    bool p2p =
        std::any_of(cycle.begin(), cycle.end(), [&](uint32_t b) { return blocks()[b].is_p2p; });
    JudgedFinding& finding =
        AddFinding(p2p ? FailureClass::kP2pUnmatched : FailureClass::kMissingParticipant);
    finding.ranks = ranks;
    std::sort(finding.ranks.begin(), finding.ranks.end());
    finding.group = first.group;
    finding.seq = first.seq;
    finding.op = first.op;
    finding.confidence = Confidence::kLow;
    finding.cause_time_ns = first.time_created_ns;
    std::string deviated = p2p ? DeviatedFromOwnRhythm(cycle, &finding) : "";
    std::string waiting = FormatRankSet(SortedCopy(ranks));
    if (!deviated.empty()) {
      finding.confidence = Confidence::kMedium;
      finding.summary = fmt::format(
          "Ranks {} wait on each other: each one's pending send/recv is queued behind another "
          "pending op of its own, so none can progress. {}",
          waiting, deviated);
    } else {
      finding.summary = fmt::format(
          "Ranks {} wait on each other: each one's pending {} is queued behind another pending "
          "op of its own, so none can progress (sends and recvs posted in an order the peers do "
          "not mirror, e.g. one skipped or extra p2p op). Which side deviated is not in the "
          "dumps.",
          waiting, p2p ? "send/recv" : "op");
    }
    for (uint32_t b : cycle) {
      const Block& block = blocks()[b];
      finding.evidence.push_back(fmt::format(
          "rank {} waits in {} {} in {} for rank {}", FormatRankSet(block.waiters), block.op,
          block.is_p2p ? fmt::format("p2p #{}", block.seq) : fmt::format("#{}", block.seq),
          GroupLabel(index().groups[block.group]), FormatRankSet(block.blockers)));
    }
  }

  static std::vector<int64_t> SortedCopy(std::vector<int64_t> ranks) {
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  }

  // In a p2p deadlock, the side that skipped or added an op is the one whose sends/recvs with
  // its peer stopped repeating their own pattern at or before where it waits; its peer's pattern
  // holds. `waits`: the blocks of the ranks waiting on each other (one waiter and one blocker
  // each). When exactly one of those ranks broke its rhythm, it becomes the finding's rank, its
  // place the finding's op, and the sentence that says so is returned; otherwise "" and the
  // finding is left alone.
  std::string DeviatedFromOwnRhythm(const std::vector<uint32_t>& waits, JudgedFinding* finding) {
    struct Deviation {
      int64_t rank;
      int64_t peer;
      ChannelRhythm rhythm;
      const RankDump* dump;
    };
    std::vector<Deviation> deviations;
    std::set<int64_t> checked;
    for (uint32_t b : waits) {
      const Block& block = blocks()[b];
      if (!block.is_p2p || block.waiters.size() != 1 || block.blockers.size() != 1) return "";
      const int64_t rank = block.waiters.front();
      const int64_t peer = block.blockers.front();
      const JobGroup& group = index().groups[block.group];
      const GroupMember* member = nullptr;
      for (const GroupMember& m : group.members) {
        if (m.rank == rank) member = &m;
      }
      const RankDump* dump = DumpOf(rank);
      if (member == nullptr || dump == nullptr) return "";
      ChannelRhythm rhythm = RhythmWithPeer(*dump, *member, peer);
      checked.insert(rank);
      if (!rhythm.broken.has_value()) continue;
      // A break after the op the rank waits in is the run-ahead of a rank whose wait started
      // earlier, not the cause of that wait.
      int64_t at = dump->entries[rhythm.break_entry].p2p_seq_id;
      if (at == kUnknown || block.seq == kUnknown || at > block.seq) continue;
      deviations.push_back({rank, peer, std::move(rhythm), dump});
    }
    if (deviations.size() != 1 || checked.size() < 2) return "";
    const Deviation& d = deviations.front();
    const RhythmBreak& broken = *d.rhythm.broken;
    const Entry& at = d.dump->entries[d.rhythm.break_entry];
    finding->ranks = {d.rank};
    // Where the others wait for it: the op its missing one would have paired with.
    for (uint32_t b : waits) {
      const Block& block = blocks()[b];
      if (block.blockers.front() != d.rank) continue;
      finding->group = block.group;
      finding->seq = block.seq;
      finding->op = block.op;
      finding->cause_time_ns = block.time_created_ns;
    }
    const std::string_view posted = at.op == OpKind::kSend ? "send" : "recv";
    const std::string_view expected = broken.expected_send ? "send" : "recv";
    finding->evidence.push_back(fmt::format(
        "rank {}'s sends/recvs with rank {} repeat every {} ops ({} sends, {} recvs) for {} ops; "
        "its {} at p2p #{} stands where that repetition has a {}",
        d.rank, d.peer, broken.period, broken.sends_per_period,
        broken.period - broken.sends_per_period, broken.ops_in_rhythm, posted, at.p2p_seq_id,
        expected));
    std::vector<int64_t> steady;
    for (int64_t rank : checked) {
      if (rank != d.rank) steady.push_back(rank);
    }
    finding->evidence.push_back(
        fmt::format("the sends/recvs of rank{} {} keep their own repetition up to where {} wait{}",
                    steady.size() > 1 ? "s" : "", FormatRankSet(steady),
                    steady.size() > 1 ? "they" : "it", steady.size() > 1 ? "" : "s"));
    return fmt::format(
        "Rank {} broke its own rhythm with rank {}: at p2p #{} it posted a {} where each earlier "
        "repetition of its {} ops had a {} (a {} skipped, or an extra {}), and its peers wait "
        "for the op it never posted.",
        d.rank, d.peer, at.p2p_seq_id, posted, broken.period, expected, expected, posted);
  }

  // The blocks in which ranks of `ranks` wait for each other in `group`, one per waiter.
  std::vector<uint32_t> MutualP2pWaits(const std::vector<int64_t>& ranks, uint32_t group) const {
    std::vector<uint32_t> waits;
    std::set<int64_t> seen;
    for (uint32_t b = 0; b < blocks().size(); ++b) {
      const Block& block = blocks()[b];
      if (!block.is_p2p || block.group != group || block.waiters.size() != 1 ||
          block.blockers.size() != 1) {
        continue;
      }
      int64_t waiter = block.waiters.front();
      bool both = std::find(ranks.begin(), ranks.end(), waiter) != ranks.end() &&
                  std::find(ranks.begin(), ranks.end(), block.blockers.front()) != ranks.end();
      if (both && seen.insert(waiter).second) waits.push_back(b);
    }
    return waits;
  }

  void AddStuckFindings() {
    int kept = 0;
    for (const StuckOp& stuck : judgment_.matched.stuck) {
      if (kept++ >= options_.max_findings_per_kind) {
        ++judgment_
              .findings_not_listed[std::string(FailureClassName(FailureClass::kStuckCollective))];
        continue;
      }
      const JobGroup& group = index().groups[stuck.group];
      JudgedFinding& finding = AddFinding(FailureClass::kStuckCollective);
      finding.group = stuck.group;
      finding.seq = stuck.seq;
      finding.op = stuck.op;
      finding.confidence =
          stuck.timing_known && stuck.all_started ? Confidence::kMedium : Confidence::kLow;
      std::string seq =
          stuck.is_p2p ? fmt::format("p2p #{}", stuck.seq) : fmt::format("#{}", stuck.seq);
      if (stuck.timing_known && stuck.all_started) {
        finding.summary = fmt::format(
            "Every member of {} started {} {} and none completed it: the transport (NCCL, "
            "network) stalled, with no single rank to blame from these dumps.",
            GroupLabel(group), stuck.op, seq);
      } else if (stuck.timing_known) {
        // With timing, not all started: their GPUs (or the batch holding a send/recv, whose
        // members PyTorch records without events) had not reached it.
        finding.summary = fmt::format(
            "Every member of {} issued {} {} and none completed it, but not every member's GPU "
            "started it: they are held by earlier work, with no single rank to blame from this "
            "op alone.",
            GroupLabel(group), stuck.op, seq);
      } else {
        finding.summary = fmt::format(
            "Every member of {} issued {} {} and none completed it; without timing the dumps "
            "cannot tell a stalled transport from a stalled GPU.",
            GroupLabel(group), stuck.op, seq);
      }
      finding.evidence.push_back(fmt::format("{} {}: {}", stuck.all_started ? "started" : "issued",
                                             stuck.op,
                                             FormatRankSetWithin(stuck.ranks, group.ranks)));
      finding.cause_time_ns = stuck.time_created_ns;
    }
  }

  // A desync that did not hang (or that hangs outside the recorded window) is still a failure.
  void AddSilentMismatchFindings() {
    std::set<std::pair<uint32_t, int64_t>> blamed;
    for (const Block& block : blocks()) {
      if (IsMismatch(block.reason)) blamed.emplace(block.group, block.seq);
    }
    std::map<FailureClass, int> kept;
    for (const Mismatch& mismatch : judgment_.matched.mismatches) {
      if (blamed.contains({mismatch.group, mismatch.seq})) continue;
      FailureClass kind = ClassOfMismatch(mismatch.kind);
      if (kept[kind]++ >= options_.max_findings_per_kind) {
        ++judgment_.findings_not_listed[std::string(FailureClassName(kind))];
        continue;
      }
      const JobGroup& group = index().groups[mismatch.group];
      JudgedFinding& finding = AddFinding(kind);
      finding.ranks = mismatch.minority;
      finding.group = mismatch.group;
      finding.seq = mismatch.seq;
      finding.confidence = mismatch.tie         ? Confidence::kLow
                           : mismatch.completed ? Confidence::kMedium
                                                : Confidence::kHigh;
      const RankDump* dump = DumpOf(mismatch.minority.empty() ? -1 : mismatch.minority.front());
      for (const GroupMember& member : group.members) {
        if (dump == nullptr || member.rank != dump->rank) continue;
        for (const CollectiveUnit& unit : member.units) {
          if (unit.seq == mismatch.seq) {
            finding.op = std::string(dump->strings.view(dump->entries[unit.first_entry].op_name));
          }
        }
      }
      if (dump != nullptr) AddStackAt(group, dump->rank, mismatch.seq, &finding);
      AddMajorityStack(group, mismatch.majority, mismatch.seq, &finding);
      finding.summary = fmt::format(
          "{} {} disagreed with the other members of {} at collective #{} ({}){}.",
          mismatch.minority.size() > 1 ? "Ranks" : "Rank",
          FormatRankSetWithin(mismatch.minority, group.ranks), GroupLabel(group), mismatch.seq,
          FailureClassName(kind),
          mismatch.completed ? ", and the collective completed anyway: results are suspect" : "");
      for (const std::string& line : mismatch.evidence) finding.evidence.push_back(line);
      if (dump != nullptr) {
        for (const Entry& e : dump->entries) {
          if (e.collective_seq_id == mismatch.seq) {
            finding.cause_time_ns = e.time_created_ns;
            break;
          }
        }
      }
    }
  }

  // Ranks consistently last to enqueue (stragglers.h), as findings with their evidence.
  void AddStragglerFindings() {
    for (const Straggler& found : judgment_.stragglers) {
      JudgedFinding& finding = judgment_.findings.emplace_back();
      finding.topic = FindingTopic::kStraggler;
      finding.ranks = {found.rank};
      finding.group = found.group;
      finding.confidence = found.fraction_last > 0.9 ? Confidence::kHigh : Confidence::kMedium;
      finding.summary = fmt::format(
          "Rank {} enqueued its collectives {:.1f} ms after the median member (last in {:.0f}% "
          "of {} collectives): it slows every group it is in.",
          found.rank, found.median_lateness_ms, 100 * found.fraction_last,
          found.collectives_compared);
      // After every cause with a time: a straggler slows the job, it does not stop it.
      finding.cause_time_ns = std::numeric_limits<int64_t>::max() - 1;
    }
  }

  void SortFindings() {
    auto time = [](const JudgedFinding& f) {
      return f.cause_time_ns == kUnknown ? std::numeric_limits<int64_t>::max() : f.cause_time_ns;
    };
    std::stable_sort(
        judgment_.findings.begin(), judgment_.findings.end(),
        [&](const JudgedFinding& a, const JudgedFinding& b) { return time(a) < time(b); });
  }

  void AddDataLossFindings() {
    if (trace_.rejected.empty() && trace_.conflicts.empty()) return;
    JudgedFinding& finding = judgment_.findings.emplace_back();
    finding.topic = FindingTopic::kDataLoss;
    std::set<int64_t> ranks;
    for (const RejectedFile& file : trace_.rejected) {
      if (file.rank != kUnknown) ranks.insert(file.rank);
      finding.evidence.push_back(ValidUtf8(file.error));
    }
    for (const RankConflict& conflict : trace_.conflicts) {
      ranks.insert(conflict.rank);
      finding.evidence.push_back(
          ValidUtf8(fmt::format("rank {}: several files ({}), none used", conflict.rank,
                                fmt::join(conflict.paths, ", "))));
    }
    finding.ranks.assign(ranks.begin(), ranks.end());
    finding.confidence = Confidence::kHigh;
    finding.summary = fmt::format(
        "{} file(s) could not be used; the analysis treats their "
        "ranks as having no dump.",
        trace_.rejected.size() + trace_.conflicts.size());
  }

  bool FindingSelected(const JudgedFinding& finding) const {
    const JobGroup* group =
        finding.group == kNoGroupIndex ? nullptr : &index().groups[finding.group];
    for (const std::string& wanted : options_.pg_filter) {
      if (group == nullptr ? wanted.empty() : (wanted == group->name || wanted == group->desc)) {
        return true;
      }
    }
    return false;
  }

  void JudgeVerdict(const WaitForGraph& graph) {
    const std::vector<JudgedFinding>& findings = judgment_.findings;
    DumpVerdict& verdict = judgment_.verdict;
    const JudgedFinding* lead = nullptr;
    std::set<int64_t> culprits;
    // The lead is the most certain cause, the earliest among equals (findings are in time
    // order): a doubtful finding, such as a desync that completed anyway, never outranks a
    // certain cause of the hang. With --pg-filter, the headline comes from the selected groups
    // when they hold a cause.
    bool filtered = !options_.pg_filter.empty() &&
                    std::any_of(findings.begin(), findings.end(), [&](const JudgedFinding& f) {
                      return f.NamesCulprits() && FindingSelected(f);
                    });
    bool outside_only = !options_.pg_filter.empty() && !filtered;
    for (const JudgedFinding& finding : findings) {
      if (finding.NamesCulprits() && (!filtered || FindingSelected(finding))) {
        if (lead == nullptr || finding.confidence > lead->confidence) lead = &finding;
      }
    }
    // Other culprits come from findings as certain as the lead; doubtful ones stay findings.
    for (const JudgedFinding& finding : findings) {
      if (lead != nullptr && finding.NamesCulprits() && (!filtered || FindingSelected(finding)) &&
          finding.confidence >= lead->confidence) {
        culprits.insert(finding.ranks.begin(), finding.ranks.end());
      }
    }
    if (lead == nullptr) {
      for (const JudgedFinding& finding : findings) {
        if (finding.topic == FindingTopic::kFailure &&
            finding.failure_class == FailureClass::kStuckCollective) {
          lead = &finding;
          break;
        }
      }
    }
    size_t expected =
        trace_.ranks.size() + judgment_.missing_ranks.size() + judgment_.unreadable_ranks.size();
    bool too_few = trace_.ranks.size() < 2 || trace_.ranks.size() * 2 < expected;
    FailureClass failure_class = FailureClass::kNone;
    Confidence confidence = Confidence::kHigh;
    std::string summary;
    const MatchResult& matched = judgment_.matched;
    if (lead != nullptr) {
      verdict.lead = static_cast<int>(lead - findings.data());
      failure_class = lead->failure_class;
      confidence = lead->confidence;
      std::vector<int64_t> others;
      for (int64_t r : culprits) {
        if (std::find(lead->ranks.begin(), lead->ranks.end(), r) == lead->ranks.end()) {
          others.push_back(r);
        }
      }
      if (!others.empty() && failure_class != FailureClass::kStuckCollective) {
        summary =
            fmt::format("{} Other independent culprits: {}.", lead->summary, FormatRankSet(others));
      } else {
        summary = lead->summary;
      }
      if (too_few) {
        // What so few dumps can and cannot decide comes first.
        confidence = std::min(confidence, Confidence::kMedium);
        bool blamed_have_dumps = std::all_of(lead->ranks.begin(), lead->ranks.end(),
                                             [&](int64_t r) { return DumpOf(r) != nullptr; });
        std::string limit = fmt::format("Only {} of {} ranks' dumps could be read ({}).",
                                        trace_.ranks.size(), expected, MissingAndUnreadable());
        if (blamed_have_dumps) {
          summary = fmt::format("{} From them: {}", limit, summary);
        } else {
          // The blamed rank left no dump: among so many missing ones it may as well be another
          // victim of a culprit whose dump is missing too.
          failure_class = FailureClass::kInsufficientEvidence;
          confidence = Confidence::kLow;
          culprits.clear();
          summary = fmt::format(
              "{} They show ranks waiting for rank(s) {} that left no dump, but with most dumps "
              "missing that rank may be one more victim; the dumps of ranks {} would settle it. "
              "The wait seen: {}",
              limit, FormatRankSet(lead->ranks), FormatRankSet(AbsentRanks()), lead->summary);
        }
      }
    } else if (too_few) {
      failure_class = FailureClass::kInsufficientEvidence;
      confidence = Confidence::kLow;
      std::vector<int64_t> absent = AbsentRanks();
      if (trace_.ranks.empty()) {
        summary =
            "No flight-recorder dump could be read: nothing here tells culprits from victims. "
            "The ranks' dumps would settle it.";
      } else if (absent.empty()) {
        summary = fmt::format(
            "Only {} rank's dump was read and no other rank is known: one rank cannot show who "
            "waits for whom. The other ranks' dumps would settle it.",
            trace_.ranks.size());
      } else {
        summary = fmt::format(
            "Only {} of {} ranks' dumps could be read: too few to tell culprits from victims. "
            "The dumps of ranks {} would settle it.",
            trace_.ranks.size(), expected, FormatRankSet(absent));
      }
    } else if (!unreadable_sinks_.empty()) {
      failure_class = FailureClass::kInsufficientEvidence;
      confidence = Confidence::kLow;
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
      confidence = Confidence::kLow;
      summary = fmt::format(
          "Nothing in the {} dumps read is stuck or mismatched, but {} {} left no dump: a rank "
          "that died leaves none, and its peers' last ops may have ended in errors that the "
          "flight recorder does not tell from completion. The dumps or logs of {} would settle "
          "it.",
          trace_.ranks.size(), trace_.missing_ranks.size() > 1 ? "ranks" : "rank",
          FormatRankSet(trace_.missing_ranks),
          trace_.missing_ranks.size() > 1 ? "those ranks" : "that rank");
    } else if (matched.in_flight_ops > 0) {
      summary = fmt::format(
          "No collective is stuck: {} op(s) were in flight but younger than their timeout when "
          "the dumps were taken, and every completed collective matched.",
          matched.in_flight_ops);
    } else {
      summary = "Every collective in the dumps is matched across its group and nothing is stuck.";
    }
    if (IsFailureClass(failure_class) && index().dump_times.job_ns == kUnknown) {
      // Pending ops were judged stuck for want of a dump time: the structure may be certain,
      // but not that the job had hung rather than been dumped on demand while running.
      confidence = std::min(confidence, Confidence::kMedium);
      summary +=
          " The dump time is unknown (no usable file times), so pending ops were judged "
          "stuck; if the dumps were taken on demand from a running job, give --dump-time.";
    }
    if (IsFailureClass(failure_class) && matched.stalled_beyond_rhythm_ops > 0 &&
        matched.ops_known_stuck == 0 && index().dump_times.job_ns != kUnknown) {
      // No op reached its timeout: the stall rests on the job's rhythm, not on a watchdog.
      confidence = std::min(confidence, Confidence::kMedium);
      summary += fmt::format(
          " A hang in progress: no op had reached its timeout when the dumps were taken, but "
          "ranks had waited up to {:.1f} s, far beyond the job's rhythm ({:.1f} ms between a "
          "rank's ops at the median).",
          static_cast<double>(matched.longest_stall_ns) / 1e9,
          static_cast<double>(matched.stall_median_gap_ns) / 1e6);
    }
    if (outside_only && lead != nullptr) {
      summary = fmt::format("No cause lies in the selected groups ({}); outside them: {}",
                            fmt::join(options_.pg_filter, ", "), summary);
    }
    if (failure_class == FailureClass::kNone && !judgment_.stragglers.empty()) {
      summary +=
          fmt::format(" Rank {} is a straggler (see findings).", judgment_.stragglers.front().rank);
    }
    verdict.failure_class = failure_class;
    verdict.culprits.assign(culprits.begin(), culprits.end());
    verdict.confidence = confidence;
    verdict.summary = std::move(summary);
    // The lead may blame a rank for what it did (a mismatch) while the graph also finds it
    // blocked elsewhere: it is then a culprit, never also its own victim.
    for (int64_t r : graph.victims()) {
      if (!culprits.contains(r)) verdict.victims.push_back(r);
    }
    // A rank of a deadlock that the lead cleared (its peer broke the rhythm) waits too.
    for (int64_t r : graph.culprits()) {
      if (culprits.contains(r)) continue;
      if (std::any_of(blocks().begin(), blocks().end(), [&](const Block& block) {
            return std::binary_search(block.waiters.begin(), block.waiters.end(), r);
          })) {
        verdict.victims.push_back(r);
      }
    }
    std::sort(verdict.victims.begin(), verdict.victims.end());
    NextActionContext context;
    context.failure_class = failure_class;
    context.culprits = verdict.culprits;
    // Blamed for what it did not do while leaving no file behind: its crash is the lead.
    context.culprit_dump_missing =
        lead != nullptr && !lead->ranks.empty() &&
        std::all_of(lead->ranks.begin(), lead->ranks.end(),
                    [&](int64_t r) { return DumpOf(r) == nullptr && !index().Unreadable(r); });
    context.timing_recordable = !OnlyGloo();
    context.timing_known = TimingSeen();
    context.buffer_wrapped = BufferWrapped();
    // Ranks whose files could not be read too: a readable copy is what is missing.
    context.ranks_missing = AbsentRanks();
    context.has_stragglers = !judgment_.stragglers.empty();
    verdict.next_actions = NextActions(context);
    verdict.chains = Chains(graph, culprits);
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
    for (const JobGroup& group : index().groups) {
      for (const GroupMember& member : group.members) {
        if (member.first_seq_in_buffer > 1) return true;
      }
    }
    return false;
  }

  std::vector<std::vector<WaitHop>> Chains(const WaitForGraph& graph,
                                           const std::set<int64_t>& culprits) const {
    // The most informative chains are the longest: they cross groups (a DP waiter blocked by a
    // PP peer blocked by the culprit). Ties go to the lowest rank.
    std::vector<std::pair<int, int64_t>> candidates;
    for (int64_t victim : graph.victims()) candidates.emplace_back(-graph.Distance(victim), victim);
    std::sort(candidates.begin(), candidates.end());
    std::set<std::vector<uint32_t>> seen_paths;
    std::vector<std::vector<WaitHop>> chains;
    for (const auto& [negative_distance, victim] : candidates) {
      if (chains.size() >= kMaxChains) break;
      std::vector<WaitHop> chain = graph.ChainFrom(victim);
      if (chain.empty()) continue;
      // The graph stops at the first rank of a deadlock; when the verdict cleared that rank
      // (its peer broke the rhythm), the chain goes on to the culprit it waits for.
      if (int64_t last = chain.back().waits_for; !culprits.contains(last)) {
        for (uint32_t b = 0; b < blocks().size(); ++b) {
          const Block& block = blocks()[b];
          if (!std::binary_search(block.waiters.begin(), block.waiters.end(), last)) continue;
          auto to = std::find_if(block.blockers.begin(), block.blockers.end(),
                                 [&](int64_t r) { return culprits.contains(r); });
          if (to == block.blockers.end()) continue;
          chain.push_back(WaitHop{last, b, *to});
          break;
        }
      }
      std::vector<uint32_t> path;
      for (const WaitHop& hop : chain) path.push_back(hop.block);
      if (!seen_paths.insert(path).second) continue;
      chains.push_back(std::move(chain));
    }
    return chains;
  }

  const LoadedTrace& trace_;
  const AnalyzeOptions& options_;
  Judgment judgment_;
  // Over judgment_.index, while judging.
  std::optional<ProgramOrder> order_;
  // Ranks others wait for whose file exists but could not be read, ascending.
  std::vector<int64_t> unreadable_sinks_;
};

}  // namespace

Judgment JudgeDumps(const LoadedTrace& trace, const AnalyzeOptions& options) {
  return Judge(trace, options).Run();
}

report::Report AnalyzeInto(const LoadedTrace& trace, const AnalyzeOptions& options,
                           Judgment* judgment) {
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
  *judgment = JudgeDumps(trace, with_gone);
  report::Report report = WriteDumpReport(trace, with_gone, *judgment);
  // The live stacks first among the supporting evidence: they may decide the verdict.
  if (options.stacks != nullptr) {
    if (std::optional<std::vector<int64_t>> decided =
            JoinStackEvidence(*options.stacks, options.stacks_stalled_ns, &report)) {
      // The stacks made the verdict: the judgment says so too, for the logs to join it.
      judgment->verdict.failure_class = FailureClass::kMissingParticipant;
      judgment->verdict.culprits = *std::move(decided);
    }
  }
  if (options.monitors != nullptr) {
    // Supporting evidence from the hosts' side, after the dumps' own findings: it says what the
    // GPUs and processes were doing, not which rank others waited for.
    for (const MonitorFinding& seen : FindMonitorAnomalies(*options.monitors)) {
      JudgedFinding& finding = judgment->findings.emplace_back();
      finding.topic = FindingTopic::kMonitor;
      finding.monitor_kind = seen.kind;
      finding.ranks.assign(seen.ranks.begin(), seen.ranks.end());
      finding.confidence = Confidence::kMedium;
      finding.summary = ValidUtf8(seen.summary);
      for (const std::string& line : seen.evidence) finding.evidence.push_back(ValidUtf8(line));
      WriteFinding(finding, judgment->index, report.add_findings());
    }
  }
  return report;
}

report::Report Analyze(const LoadedTrace& trace, const AnalyzeOptions& options) {
  Judgment judgment;
  return AnalyzeInto(trace, options, &judgment);
}

bool IsFailure(const report::Report& report) {
  std::optional<FailureClass> c = ParseFailureClass(report.verdict().failure_class());
  const std::string& root = report.verdict().root_cause().kind();
  return (c.has_value() && IsFailureClass(*c)) || (!root.empty() && root != "none");
}

}  // namespace fr
