// The dumps' findings, earliest cause first: the culprit of each blocked wait (a rank that never
// issued the op, a desync, a deadlock, a p2p that broke its own rhythm), ops stuck in flight,
// silent mismatches, stragglers, and the data the files lost.
#include <algorithm>
#include <cctype>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/base/rank_set.h"
#include "fr/base/utf8.h"
#include "fr/index/job_index.h"
#include "fr/match/matcher.h"
#include "fr/match/p2p_rhythm.h"
#include "fr/verdict/failure_class.h"
#include "fr/verdict/judge.h"
#include "fr/verdict/judgment.h"
#include "fr/verdict/next_actions.h"
#include "fr/verdict/program_order.h"
#include "fr/verdict/report_writer.h"
#include "fr/verdict/stack_evidence.h"
#include "fr/verdict/stragglers.h"
#include "fr/verdict/unrecorded_p2p.h"
#include "fr/waitfor/wait_for_graph.h"

namespace fr::verdict_internal {

std::vector<std::string> Judge::StackOf(const RankDump& dump, const Entry& entry) const {
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

void Judge::AddStackAt(const JobGroup& group, int64_t rank, int64_t seq,
                       JudgedFinding* finding) const {
  const RankDump* dump = nullptr;
  std::optional<Entry> entry = EntryAt(group, rank, seq, &dump);
  if (!entry.has_value()) return;
  std::vector<std::string> stack = StackOf(*dump, *entry);
  finding->stack.insert(finding->stack.end(), stack.begin(), stack.end());
  if (!finding->stack.empty()) finding->stack_at = ValidUtf8(DescribeEntry(*dump, *entry));
}

namespace {

// What must agree across members of one collective, as text: the op, the dtypes and the input
// shapes (outputs for the reduce_scatter family). Single-entry units only.
struct OpSignature {
  std::string op;
  std::string dtypes;
  std::string shapes;
  bool operator==(const OpSignature&) const = default;
};

std::optional<OpSignature> SignatureOf(const RankDump& dump, const CollectiveUnit& unit) {
  if (unit.entry_count != 1) return std::nullopt;
  const Entry& entry = dump.entries[unit.first_entry];
  OpSignature sig;
  sig.op = std::string(dump.strings.view(entry.op_name));
  for (StringId d : dump.DtypeList(entry.input_dtypes)) {
    if (!sig.dtypes.empty()) sig.dtypes += ",";
    sig.dtypes += dump.strings.view(d);
  }
  bool outputs = entry.op == OpKind::kReduceScatter || entry.op == OpKind::kScatter;
  sig.shapes = fmt::format("{}", dump.Shapes(outputs ? entry.output_sizes : entry.input_sizes));
  return sig;
}

const CollectiveUnit* UnitAt(const GroupMember& member, int64_t seq) {
  auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                             [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
  return it == member.units.end() || it->seq != seq ? nullptr : &*it;
}

}  // namespace

void Judge::FindOpChanges() {
  // The op every sibling group of `g` (same description) issued at `seq`, where they agree on
  // it: the signature and a rank that issued it. Asked only for an op that changed.
  std::map<std::pair<uint32_t, int64_t>, std::optional<std::pair<OpSignature, int64_t>>>
      sibling_ops;
  auto siblings_at = [&](uint32_t g, int64_t seq) {
    auto [it, fresh] = sibling_ops.try_emplace({g, seq});
    if (!fresh) return it->second;
    const JobGroup& group = index().groups[g];
    std::optional<OpSignature> agreed;
    int64_t agreed_rank = kUnknown;
    bool agree = true;
    for (const JobGroup& sibling : index().groups) {
      if (&sibling == &group || sibling.desc != group.desc) continue;
      for (const GroupMember& other : sibling.members) {
        if (other.dump < 0) continue;
        const CollectiveUnit* theirs = UnitAt(other, seq);
        if (theirs == nullptr) continue;
        std::optional<OpSignature> sig = SignatureOf(trace_.ranks[other.dump], *theirs);
        if (!sig) continue;
        if (!agreed) {
          agreed = sig;
          agreed_rank = other.rank;
        }
        agree = agree && *sig == *agreed;
      }
    }
    if (agreed && agree) it->second = std::make_pair(*agreed, agreed_rank);
    return it->second;
  };
  // Where a member's op may have changed: its newest op in the group, and each op of the group
  // it waits in (NCCL ranks enqueue more ops after one that hangs).
  std::map<std::pair<uint32_t, int64_t>, std::set<int64_t>> seqs_of;
  for (uint32_t g = 0; g < index().groups.size(); ++g) {
    for (const GroupMember& member : index().groups[g].members) {
      if (member.dump >= 0 && !member.units.empty()) {
        seqs_of[{g, member.rank}].insert(member.units.back().seq);
      }
    }
  }
  for (const Block& block : blocks()) {
    if (block.is_p2p || block.group == kNoGroupIndex) continue;
    for (int64_t waiter : block.waiters) seqs_of[{block.group, waiter}].insert(block.seq);
  }
  for (uint32_t g = 0; g < index().groups.size(); ++g) {
    const JobGroup& group = index().groups[g];
    for (const GroupMember& member : group.members) {
      if (member.dump < 0) continue;
      auto seqs = seqs_of.find({g, member.rank});
      if (seqs == seqs_of.end()) continue;
      const RankDump& dump = trace_.ranks[member.dump];
      for (int64_t seq : seqs->second) {
        auto unit = std::lower_bound(member.units.begin(), member.units.end(), seq,
                                     [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
        if (unit == member.units.end() || unit->seq != seq) continue;
        std::optional<OpSignature> own = SignatureOf(dump, *unit);
        if (!own) continue;
        // Its own previous op of the same kind in this group.
        std::optional<OpSignature> previous;
        int64_t previous_seq = -1;
        for (auto it = std::make_reverse_iterator(unit); it != member.units.rend(); ++it) {
          std::optional<OpSignature> before = SignatureOf(dump, *it);
          if (before && before->op == own->op) {
            previous = std::move(before);
            previous_seq = it->seq;
            break;
          }
        }
        // The same op as always: whatever its siblings do, nothing changed here.
        if (previous && *previous == *own) continue;
        // Another member issued the same op at this seq: the group changed it together.
        bool shared = false;
        for (const GroupMember& other : group.members) {
          if (&other == &member || other.dump < 0) continue;
          const CollectiveUnit* theirs = UnitAt(other, seq);
          if (theirs == nullptr) continue;
          std::optional<OpSignature> sig = SignatureOf(trace_.ranks[other.dump], *theirs);
          shared |= sig && *sig == *own;
        }
        if (shared) continue;
        std::optional<std::pair<OpSignature, int64_t>> siblings;
        if (!group.desc.empty()) siblings = siblings_at(g, seq);
        // As its siblings' at a seq where its own op changed: the job's shape changed there.
        if (siblings && siblings->first == *own) continue;
        OpChange change;
        change.rank = member.rank;
        change.group = g;
        change.seq = seq;
        change.op = own->op;
        change.unlike_siblings = siblings && siblings->first.op == own->op;
        change.unlike_own_previous = previous.has_value();
        change.previous_as_siblings =
            change.unlike_siblings && previous && *previous == siblings->first;
        if (!change.unlike_siblings && !change.unlike_own_previous) continue;
        const OpSignature& other = change.unlike_siblings ? siblings->first : *previous;
        change.kind = own->dtypes != other.dtypes ? FailureClass::kDtypeMismatch
                                                  : FailureClass::kSizeMismatch;
        change.evidence.push_back(fmt::format("rank {}: {} #{} in {} takes {} {}", member.rank,
                                              own->op, seq, GroupLabel(group), own->shapes,
                                              own->dtypes));
        if (change.previous_as_siblings) {
          change.evidence.push_back(fmt::format(
              "rank {} (a sibling {} group): {} #{} takes {} {}, as rank {}'s own previous {} "
              "did",
              siblings->second, group.desc, siblings->first.op, seq, siblings->first.shapes,
              siblings->first.dtypes, member.rank, own->op));
        } else {
          if (change.unlike_siblings) {
            change.evidence.push_back(fmt::format(
                "rank {} (a sibling {} group): {} #{} takes {} {}", siblings->second, group.desc,
                siblings->first.op, seq, siblings->first.shapes, siblings->first.dtypes));
          }
          if (change.unlike_own_previous) {
            change.evidence.push_back(fmt::format(
                "rank {}: its previous {} (#{} in {}) took {} {}", member.rank, previous->op,
                previous_seq, GroupLabel(group), previous->shapes, previous->dtypes));
          }
        }
        judgment_.op_changes.push_back(std::move(change));
      }
    }
  }
}

void Judge::AddCulpritFindings(const WaitForGraph& graph) {
  struct Cause {
    uint32_t block;
    std::vector<int64_t> culprits;
  };
  std::map<uint32_t, Cause> by_block;
  std::vector<uint32_t> relay_cycle;
  std::vector<int64_t> relay_ranks;
  std::map<int64_t, uint32_t> unreadable_best;
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
      unreadable_best[culprit] = best;
      continue;
    }
    by_block[best].block = best;
    by_block[best].culprits.push_back(culprit);
  }
  // Every wait ends at ranks whose dumps could not be read, and at nothing else: the other
  // dumps all point there, so those ranks are named, at medium confidence (what they did, and
  // why, is in the dumps that could not be read). Beside a culprit the readable dumps show, an
  // unreadable rank stays unjudged: it may be one more victim.
  if (by_block.empty() && relay_ranks.size() <= 1 && !unreadable_sinks_.empty()) {
    for (int64_t culprit : unreadable_sinks_) {
      uint32_t best = unreadable_best[culprit];
      by_block[best].block = best;
      by_block[best].culprits.push_back(culprit);
    }
    unreadable_sinks_.clear();
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

void Judge::AddCulpritFinding(const Block& block, std::vector<int64_t>* culprit_ranks) {
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
  std::vector<int64_t> deviants;
  std::vector<std::string> deviant_evidence;
  FailureClass deviant_kind = FailureClass::kNone;
  if (block.reason == BlockReason::kDumpMissing && !block.is_p2p) {
    // The lone deviant the dumps alone can name: a waiter whose op differs from every
    // sibling's, and whose own previous op was as theirs still are.
    for (const OpChange& change : judgment_.op_changes) {
      if (change.group != block.group || change.seq != block.seq || !change.previous_as_siblings ||
          !std::binary_search(block.waiters.begin(), block.waiters.end(), change.rank)) {
        continue;
      }
      deviants.push_back(change.rank);
      deviant_kind = change.kind;
      deviant_evidence.insert(deviant_evidence.end(), change.evidence.begin(),
                              change.evidence.end());
    }
  }
  // Where the culprits themselves wait: an op of another group that their peers never reach (the
  // wait-for graph's cycle, broken at them).
  const Block* own_wait = nullptr;
  for (const Block& other : blocks()) {
    if (&other == &block || other.is_p2p) continue;
    bool all_wait_there = std::all_of(culprits_of.begin(), culprits_of.end(), [&](int64_t r) {
      return std::binary_search(other.waiters.begin(), other.waiters.end(), r);
    });
    if (all_wait_there) {
      own_wait = &other;
      break;
    }
  }
  if (block.reason == BlockReason::kNeverIssued && own_wait != nullptr) {
    finding.summary = fmt::format(
        "{} {} never issued {} {} in {}, which {} blocked in; {} blocked in {} #{} in {} "
        "instead, which the others it waits for never reach: {} left the order of ops its "
        "peers follow (a branch only it took: fewer batches in its data shard, an early exit "
        "from the loop, a rank-dependent condition), and every other wait leads back to it.",
        plural, culprits, block.op, seq, GroupLabel(group), waiters,
        culprits_of.size() > 1 ? "they are" : "it is", own_wait->op, own_wait->seq,
        GroupLabel(index().groups[own_wait->group]), culprits_of.size() > 1 ? "they" : "it");
  } else if (block.reason == BlockReason::kNeverIssued) {
    finding.summary = fmt::format(
        "{} {} never issued {} {} in {}, which {} blocked in; {} waiting on nothing else "
        "(stuck outside communication, or diverged control flow).",
        plural, culprits, block.op, seq, GroupLabel(group), waiters,
        culprits_of.size() > 1 ? "they are" : "it is");
  } else if (block.reason == BlockReason::kDumpMissing && !deviants.empty()) {
    // The rank that left no dump most likely stopped on the mismatch; the rank whose op differs
    // from every sibling's and from its own before is where it started.
    confidence = Confidence::kMedium;
    finding.failure_class = deviant_kind;
    std::string stopped = culprits;
    culprits_of = deviants;
    finding.ranks = culprits_of;
    finding.summary = fmt::format(
        "{} {} issued {} {} in {} with {} than the same op of every other {} group and than "
        "{} own previous {}; {} {}, its peer there, left no dump: it most likely stopped on the "
        "mismatch (Gloo aborts the rank that receives more than its op holds, NCCL's checks "
        "raise), a victim of it.",
        culprits_of.size() > 1 ? "Ranks" : "Rank", FormatRankSetWithin(culprits_of, group.ranks),
        block.op, seq, GroupLabel(group),
        deviant_kind == FailureClass::kDtypeMismatch ? "a different dtype" : "different sizes",
        group.desc, culprits_of.size() > 1 ? "their" : "its", block.op, plural, stopped);
    finding.evidence.insert(finding.evidence.end(), deviant_evidence.begin(),
                            deviant_evidence.end());
  } else if (block.reason == BlockReason::kDumpMissing) {
    confidence = Confidence::kMedium;
    finding.summary = fmt::format(
        "{} {} left no dump, and {} blocked in {} {} in {} waiting for {}: it most likely "
        "crashed or hung before dumping.",
        plural, culprits, waiters, block.op, seq, GroupLabel(group),
        culprits_of.size() > 1 ? "them" : "it");
  } else if (block.reason == BlockReason::kDumpUnreadable) {
    confidence = Confidence::kMedium;
    std::vector<std::string> errors;
    for (const RejectedFile& file : trace_.rejected) {
      if (std::binary_search(culprits_of.begin(), culprits_of.end(), file.rank)) {
        errors.push_back(file.error);
      }
    }
    finding.summary = fmt::format(
        "{} {} wrote a dump that could not be read{}, and {} blocked in {} {} in {} waiting "
        "for {}: every wait the other dumps show ends there, so it most likely stopped first. "
        "Why is in its own dump or log; a readable copy would settle it.",
        plural, culprits, errors.empty() ? "" : fmt::format(" ({})", fmt::join(errors, "; ")),
        waiters, block.op, seq, GroupLabel(group), culprits_of.size() > 1 ? "them" : "it");
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
    finding.summary = fmt::format(
        "{} {} never posted the {} that {} {} in {} needs ({} {} waiting).", plural, culprits,
        block.reason == BlockReason::kNoMatchingRecv ? "recv" : "send", block.op, seq,
        GroupLabel(group), FormatRankSet(block.waiters), block.waiters.size() == 1 ? "is" : "are");
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
        finding.evidence.push_back(fmt::format("rank {} in {}: last issued #{}, last completed #{}",
                                               culprit, GroupLabel(group), member.last_enqueued,
                                               member.last_completed));
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

void Judge::AddDeadlockFinding(const std::vector<uint32_t>& cycle,
                               const std::vector<int64_t>& ranks) {
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

std::string Judge::DeviatedFromOwnRhythm(const std::vector<uint32_t>& waits,
                                         JudgedFinding* finding) {
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

std::vector<uint32_t> Judge::MutualP2pWaits(const std::vector<int64_t>& ranks,
                                            uint32_t group) const {
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

void Judge::AddStuckFindings() {
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

void Judge::AddSilentMismatchFindings() {
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

void Judge::AddStragglerFindings() {
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

void Judge::SortFindings() {
  auto time = [](const JudgedFinding& f) {
    return f.cause_time_ns == kUnknown ? std::numeric_limits<int64_t>::max() : f.cause_time_ns;
  };
  std::stable_sort(
      judgment_.findings.begin(), judgment_.findings.end(),
      [&](const JudgedFinding& a, const JudgedFinding& b) { return time(a) < time(b); });
}

void Judge::AddDataLossFindings() {
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
    finding.evidence.push_back(ValidUtf8(fmt::format(
        "rank {}: several files ({}), none used", conflict.rank, fmt::join(conflict.paths, ", "))));
  }
  finding.ranks.assign(ranks.begin(), ranks.end());
  finding.confidence = Confidence::kHigh;
  finding.summary = fmt::format(
      "{} file(s) could not be used; the analysis treats their "
      "ranks as having no dump.",
      trace_.rejected.size() + trace_.conflicts.size());
}

bool Judge::FindingSelected(const JudgedFinding& finding) const {
  const JobGroup* group = finding.group == kNoGroupIndex ? nullptr : &index().groups[finding.group];
  for (const std::string& wanted : options_.pg_filter) {
    if (group == nullptr ? wanted.empty() : (wanted == group->name || wanted == group->desc)) {
      return true;
    }
  }
  return false;
}

}  // namespace fr::verdict_internal
