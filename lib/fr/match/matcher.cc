#include "fr/match/matcher.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/base/parallel_for.h"

namespace fr {
namespace {

constexpr int64_t kDefaultTimeoutMs = 600000;

int64_t Numel(std::span<const int64_t> flat_shapes) {
  // flat: [n_shapes, rank_0, dims_0..., rank_1, dims_1...]; total elements over all tensors.
  if (flat_shapes.empty()) return 0;
  int64_t total = 0;
  size_t at = 1;
  for (int64_t i = 0; i < flat_shapes[0] && at < flat_shapes.size(); ++i) {
    int64_t rank = flat_shapes[at++];
    int64_t numel = 1;
    for (int64_t d = 0; d < rank && at < flat_shapes.size(); ++d) numel *= flat_shapes[at++];
    total += numel;
  }
  return total;
}

// Shapes that must be equal on every member, by op family: all_gather sends equal inputs,
// reduce_scatter receives equal outputs, all_to_all may be uneven (only totals agree, checked
// separately).
std::span<const int64_t> ComparableShapes(const RankDump& dump, const Entry& entry) {
  switch (entry.op) {
    case OpKind::kReduceScatter:
    case OpKind::kScatter:
      return dump.ShapeList(entry.output_sizes);
    case OpKind::kAllToAll:
    case OpKind::kCoalesced:
      return {};
    default:
      return dump.ShapeList(entry.input_sizes);
  }
}

// The entries of a unit that take part in its signature: those of the unit's own group (a
// coalesced unit may carry entries of others).
template <typename Visit>
void ForEachSignedEntry(const RankDump& dump, const CollectiveUnit& unit, Visit visit) {
  for (uint32_t i = unit.first_entry; i < unit.first_entry + unit.entry_count; ++i) {
    const Entry& entry = dump.entries[i];
    if (entry.group == dump.entries[unit.first_entry].group) visit(entry);
  }
}

bool SameDtypes(const RankDump& a, DtypeListId list_a, const RankDump& b, DtypeListId list_b) {
  auto x = a.DtypeList(list_a);
  auto y = b.DtypeList(list_b);
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (a.strings.view(x[i]) != b.strings.view(y[i])) return false;
  }
  return true;
}

// Whether two members issued exactly the same collective: the same ops, dtypes and comparable
// shapes, entry by entry, compared value by value (no hashes, so no collision can hide a
// mismatch). Allocation-free: it runs for every member of every collective.
bool SameSignature(const RankDump& a, const CollectiveUnit& unit_a, const RankDump& b,
                   const CollectiveUnit& unit_b) {
  uint32_t i = unit_a.first_entry, j = unit_b.first_entry;
  uint32_t end_a = unit_a.first_entry + unit_a.entry_count;
  uint32_t end_b = unit_b.first_entry + unit_b.entry_count;
  uint32_t group_a = a.entries[unit_a.first_entry].group;
  uint32_t group_b = b.entries[unit_b.first_entry].group;
  while (true) {
    while (i < end_a && a.entries[i].group != group_a) ++i;
    while (j < end_b && b.entries[j].group != group_b) ++j;
    if (i == end_a || j == end_b) return i == end_a && j == end_b;
    const Entry& x = a.entries[i++];
    const Entry& y = b.entries[j++];
    if (x.op != y.op || !SameDtypes(a, x.input_dtypes, b, y.input_dtypes) ||
        !SameDtypes(a, x.output_dtypes, b, y.output_dtypes)) {
      return false;
    }
    std::span<const int64_t> shapes_x = ComparableShapes(a, x);
    std::span<const int64_t> shapes_y = ComparableShapes(b, y);
    if (!std::equal(shapes_x.begin(), shapes_x.end(), shapes_y.begin(), shapes_y.end())) {
      return false;
    }
  }
}

// What must agree across members for one collective, as exact keys per attribute, so that the
// first differing attribute names the failure class and members can be grouped by value. Built
// only when members disagree.
struct Signature {
  std::string op;
  std::string dtype;
  std::string size;
};

Signature Sign(const RankDump& dump, const CollectiveUnit& unit) {
  Signature sig;
  ForEachSignedEntry(dump, unit, [&](const Entry& entry) {
    sig.op += fmt::format("{};", static_cast<int>(entry.op));
    for (StringId dtype : dump.DtypeList(entry.input_dtypes)) {
      sig.dtype += fmt::format("in:{};", dump.strings.view(dtype));
    }
    for (StringId dtype : dump.DtypeList(entry.output_dtypes)) {
      sig.dtype += fmt::format("out:{};", dump.strings.view(dtype));
    }
    sig.size += fmt::format("[{}];", fmt::join(ComparableShapes(dump, entry), ","));
  });
  return sig;
}

std::string DescribeUnit(const RankDump& dump, const CollectiveUnit& unit) {
  std::vector<std::string> parts;
  for (uint32_t i = unit.first_entry; i < unit.first_entry + unit.entry_count; ++i) {
    const Entry& entry = dump.entries[i];
    std::vector<std::string> dtypes;
    for (StringId d : dump.DtypeList(entry.input_dtypes)) dtypes.emplace_back(dump.strings.view(d));
    parts.push_back(fmt::format("{} in {} out {} {}", dump.strings.view(entry.op_name),
                                dump.Shapes(entry.input_sizes), dump.Shapes(entry.output_sizes),
                                fmt::join(dtypes, ",")));
  }
  return fmt::format("{}", fmt::join(parts, " + "));
}

// A rule one rank can break alone: an all_reduce whose output differs from its input, an
// all_gather whose output is not group-size times its input, and the reverse for reduce_scatter.
bool BreaksOwnSizeRule(const RankDump& dump, const CollectiveUnit& unit, int64_t group_size) {
  for (uint32_t i = unit.first_entry; i < unit.first_entry + unit.entry_count; ++i) {
    const Entry& entry = dump.entries[i];
    std::span<const int64_t> in = dump.ShapeList(entry.input_sizes);
    std::span<const int64_t> out = dump.ShapeList(entry.output_sizes);
    if (in.empty() || out.empty()) continue;
    int64_t in_numel = Numel(in), out_numel = Numel(out);
    switch (entry.op) {
      case OpKind::kAllReduce:
        if (in_numel != out_numel) return true;
        break;
      case OpKind::kAllGather:
        if (out_numel != in_numel * group_size) return true;
        break;
      case OpKind::kReduceScatter:
        if (in_numel != out_numel * group_size) return true;
        break;
      default:
        break;
    }
  }
  return false;
}

std::vector<int64_t> Sorted(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

// One group's collective stream heads (each member's oldest unfinished collective), kept after
// the group is matched: MatchJob may take a young head for a wait after all (PromoteYoungHeads).
struct GroupHeads {
  std::map<int64_t, std::vector<size_t>> judged;  // seq -> members judged waiting there
  std::vector<std::pair<int64_t, size_t>> young;  // (seq, member): younger than their timeout
};

class GroupMatcher {
 public:
  // Findings go to `result` (which may hold other groups' too), the group's standing to `match`,
  // its collective heads to `heads`.
  // `rolled_out`: per loaded dump, the groups in which its oldest unfinished collective rolled
  // out of its ring buffer (RolledOutPending).
  GroupMatcher(const LoadedTrace& trace, const JobIndex& index, uint32_t group_index,
               MatchResult* result, GroupMatch* match, GroupHeads* heads,
               const std::vector<std::vector<uint32_t>>& rolled_out)
      : trace_(trace),
        rolled_out_(rolled_out),
        index_(index),
        first_pending_(index.first_unfinished_entry),
        group_(index.groups[group_index]),
        group_index_(group_index),
        result_(*result),
        match_(*match),
        heads_(*heads) {
    timing_known_ = TimingKnown();
  }

  void Run() {
    CompareIssuedCollectives();
    FindBlockedHeads();
    DescribeMemberStates();
  }

  // Judges collective `seq` again with the members now in `heads.judged[seq]`, replacing the
  // blocks and stuck ops its first judgement left, and describes the members again (where
  // they stand depends on the group's blocks).
  void JudgeAgain(int64_t seq) {
    std::erase_if(result_.blocks, [&](const Block& b) {
      return !b.is_p2p && b.group == group_index_ && b.seq == seq;
    });
    std::erase_if(result_.stuck, [&](const StuckOp& o) {
      return !o.is_p2p && o.group == group_index_ && o.seq == seq;
    });
    JudgeCollectiveHead(seq, heads_.judged.at(seq));
    match_.members.clear();
    DescribeMemberStates();
  }

 private:
  const RankDump* DumpOf(const GroupMember& member) const {
    return member.dump < 0 ? nullptr : &trace_.ranks[member.dump];
  }

  bool TimingKnown() const {
    for (const GroupMember& member : group_.members) {
      const RankDump* dump = DumpOf(member);
      if (dump == nullptr) continue;
      const ProcessGroup& local = dump->groups[member.local_group];
      if (local.has_status && local.status.last_started_collective >= 0) return true;
      for (const CollectiveUnit& unit : member.units) {
        if (unit.state == EntryState::kStarted) return true;
        if (dump->entries[unit.first_entry].time_discovered_started_ns != kUnknown) return true;
      }
      // A group of only sends and recvs (pipeline stages) has no collective to show it.
      for (uint32_t e : member.p2p_entries) {
        const Entry& entry = dump->entries[e];
        if (entry.state == EntryState::kStarted) return true;
        if (entry.time_discovered_started_ns != kUnknown) return true;
      }
    }
    return false;
  }

  // Walks every seq that all loaded members' buffers still cover, comparing what they issued.
  void CompareIssuedCollectives() {
    int64_t lo = kUnknown, hi = kUnknown;
    for (const GroupMember& member : group_.members) {
      if (member.units.empty()) continue;
      lo = std::max(lo, member.first_seq_in_buffer);
      hi = std::max(hi, member.units.back().seq);
    }
    match_.window_first = lo;
    match_.window_last = hi;
    for (const GroupMember& member : group_.members) {
      match_.window_last = std::max(match_.window_last, member.last_enqueued);
    }
    if (lo == kUnknown) return;
    std::vector<size_t> cursor(group_.members.size(), 0);
    for (size_t m = 0; m < group_.members.size(); ++m) {
      const auto& units = group_.members[m].units;
      cursor[m] = std::lower_bound(units.begin(), units.end(), lo,
                                   [](const CollectiveUnit& u, int64_t s) { return u.seq < s; }) -
                  units.begin();
    }
    std::vector<std::pair<size_t, const CollectiveUnit*>> issued;
    while (true) {
      int64_t seq = kUnknown;
      for (size_t m = 0; m < cursor.size(); ++m) {
        const auto& units = group_.members[m].units;
        if (cursor[m] < units.size() && (seq == kUnknown || units[cursor[m]].seq < seq)) {
          seq = units[cursor[m]].seq;
        }
      }
      if (seq == kUnknown) break;
      issued.clear();
      for (size_t m = 0; m < cursor.size(); ++m) {
        const auto& units = group_.members[m].units;
        if (cursor[m] < units.size() && units[cursor[m]].seq == seq) {
          if (!CutByRingBuffer(group_.members[m], units[cursor[m]]) &&
              !Unnamed(group_.members[m], units[cursor[m]])) {
            issued.emplace_back(m, &units[cursor[m]]);
          }
          ++cursor[m];
        }
      }
      ++result_.collectives_checked;
      if (CompareAtSeq(seq, issued)) ++match_.collectives_matched;
    }
  }

  // A unit at the very start of a wrapped ring buffer may have lost its first ops (a coalesced
  // group cut in the middle): what is left of it is no evidence of what the rank issued.
  bool CutByRingBuffer(const GroupMember& member, const CollectiveUnit& unit) const {
    if (unit.first_entry != 0) return false;
    const Entry& first = DumpOf(member)->entries[0];
    return first.record_id > 0;
  }

  // An entry without a profiling_name does not say which op the rank issued: no evidence of a
  // desync either way.
  bool Unnamed(const GroupMember& member, const CollectiveUnit& unit) const {
    const RankDump& dump = *DumpOf(member);
    for (uint32_t i = unit.first_entry; i < unit.first_entry + unit.entry_count; ++i) {
      if (dump.strings.view(dump.entries[i].profiling_name).empty()) return true;
    }
    return false;
  }

  // Returns true when every member that issued `seq` agrees.
  bool CompareAtSeq(int64_t seq,
                    const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued) {
    const int64_t group_size = static_cast<int64_t>(group_.members.size());
    bool agree = true;
    for (const auto& [m, unit] : issued) {
      const RankDump& dump = *DumpOf(group_.members[m]);
      if (group_.ranks_known && BreaksOwnSizeRule(dump, *unit, group_size)) {
        Mismatch mismatch;
        mismatch.group = group_index_;
        mismatch.seq = seq;
        mismatch.kind = MismatchKind::kSize;
        mismatch.minority = {group_.members[m].rank};
        mismatch.completed = unit->state == EntryState::kCompleted;
        mismatch.evidence.push_back(
            fmt::format("rank {}: {} (output does not fit the input for a group of {})",
                        group_.members[m].rank, DescribeUnit(dump, *unit), group_size));
        NoteDivergence(seq);
        result_.mismatches.push_back(std::move(mismatch));
        agree = false;
      }
    }
    if (issued.size() < 2) return agree;
    if (!CheckAllToAllTotals(seq, issued)) agree = false;
    // The common case: everyone agrees with the first member.
    const RankDump& first_dump = *DumpOf(group_.members[issued.front().first]);
    bool all_equal = true;
    for (const auto& [m, unit] : issued) {
      all_equal = all_equal && SameSignature(first_dump, *issued.front().second,
                                             *DumpOf(group_.members[m]), *unit);
    }
    if (all_equal) return agree;
    std::vector<Signature> signatures;
    signatures.reserve(issued.size());
    for (const auto& [m, unit] : issued)
      signatures.push_back(Sign(*DumpOf(group_.members[m]), *unit));
    ReportMismatch(seq, issued, signatures);
    return false;
  }

  // all_to_all may split unevenly per rank, but what all members send must equal what they all
  // receive. Only checkable when every member's entry is in hand.
  bool CheckAllToAllTotals(int64_t seq,
                           const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued) {
    if (issued.size() != group_.members.size()) return true;
    int64_t sent = 0, received = 0;
    for (const auto& [m, unit] : issued) {
      const RankDump& dump = *DumpOf(group_.members[m]);
      const Entry& entry = dump.entries[unit->first_entry];
      if (entry.op != OpKind::kAllToAll || unit->entry_count != 1) return true;
      sent += Numel(dump.ShapeList(entry.input_sizes));
      received += Numel(dump.ShapeList(entry.output_sizes));
    }
    if (sent == received) return true;
    Mismatch mismatch;
    mismatch.group = group_index_;
    mismatch.seq = seq;
    mismatch.kind = MismatchKind::kSize;
    mismatch.tie = true;  // the totals disagree, but no single rank is shown to be the odd one
    mismatch.completed = std::all_of(issued.begin(), issued.end(), [](const auto& item) {
      return item.second->state == EntryState::kCompleted;
    });
    for (const auto& [m, unit] : issued) mismatch.majority.push_back(group_.members[m].rank);
    mismatch.evidence.push_back(fmt::format(
        "all_to_all #{}: the members send {} elements in all but receive {}", seq, sent, received));
    NoteDivergence(seq);
    result_.mismatches.push_back(std::move(mismatch));
    return false;
  }

  // Splits the members that issued `seq` by the first attribute on which they differ and blames
  // the minority. Returns the minority ranks.
  std::vector<int64_t> ReportMismatch(
      int64_t seq, const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued,
      const std::vector<Signature>& signatures) {
    // The first attribute on which the members differ names the class.
    MismatchKind kind = MismatchKind::kSize;
    for (const Signature& s : signatures) {
      if (s.op != signatures.front().op) kind = MismatchKind::kOp;
      if (kind != MismatchKind::kOp && s.dtype != signatures.front().dtype) {
        kind = MismatchKind::kDtype;
      }
    }
    auto attribute = [kind](const Signature& s) -> const std::string& {
      return kind == MismatchKind::kOp ? s.op : kind == MismatchKind::kDtype ? s.dtype : s.size;
    };
    absl::flat_hash_map<std::string, int64_t> count;
    for (const Signature& s : signatures) ++count[attribute(s)];
    std::string majority_value;
    int64_t best = -1;
    bool tie = false;
    // Ties go to the class of the lowest-ranked member, so the choice is deterministic.
    for (size_t i = 0; i < signatures.size(); ++i) {
      int64_t c = count[attribute(signatures[i])];
      if (c > best) {
        best = c;
        majority_value = attribute(signatures[i]);
        tie = false;
      } else if (c == best && attribute(signatures[i]) != majority_value) {
        tie = true;
      }
    }
    if (tie) {
      // Two sides of equal size (a 2-rank TP pair): groups of the same kind run the same program,
      // so what their members issued at this seq says which side deviated.
      std::string sibling_majority;
      if (SiblingMajority(seq, attribute, &sibling_majority) && count.contains(sibling_majority)) {
        majority_value = sibling_majority;
        tie = false;
      }
    }
    Mismatch mismatch;
    mismatch.group = group_index_;
    mismatch.seq = seq;
    mismatch.kind = kind;
    mismatch.tie = tie;
    mismatch.completed = true;
    absl::flat_hash_map<std::string, bool> described;
    for (size_t i = 0; i < issued.size(); ++i) {
      const auto& [m, unit] = issued[i];
      int64_t rank = group_.members[m].rank;
      bool minority = attribute(signatures[i]) != majority_value;
      (minority ? mismatch.minority : mismatch.majority).push_back(rank);
      mismatch.completed &= unit->state == EntryState::kCompleted;
      if (!described[attribute(signatures[i])]) {
        described[attribute(signatures[i])] = true;
        mismatch.evidence.push_back(fmt::format("rank {}{}: {}", rank,
                                                minority ? "" : " (and the majority)",
                                                DescribeUnit(*DumpOf(group_.members[m]), *unit)));
      }
    }
    NoteDivergence(seq);
    std::vector<int64_t> minority = mismatch.minority;
    result_.mismatches.push_back(std::move(mismatch));
    return minority;
  }

  // The attribute value that the members of other groups with this group's desc issued most at
  // `seq`, when one value has a strict majority of them.
  template <typename Attribute>
  bool SiblingMajority(int64_t seq, const Attribute& attribute, std::string* value) const {
    if (group_.desc.empty()) return false;
    absl::flat_hash_map<std::string, int64_t> votes;
    int64_t total = 0;
    for (uint32_t g = 0; g < index_.groups.size(); ++g) {
      const JobGroup& sibling = index_.groups[g];
      if (g == group_index_ || sibling.desc != group_.desc) continue;
      for (const GroupMember& member : sibling.members) {
        if (member.dump < 0) continue;
        auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                                   [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
        if (it == member.units.end() || it->seq != seq) continue;
        ++votes[attribute(Sign(trace_.ranks[member.dump], *it))];
        ++total;
      }
    }
    for (const auto& [candidate, n] : votes) {
      if (2 * n > total) {
        *value = candidate;
        return true;
      }
    }
    return false;
  }

  void NoteDivergence(int64_t seq) {
    if (match_.first_divergence == kUnknown || seq < match_.first_divergence) {
      match_.first_divergence = seq;
    }
  }

  // In a group that carries only sends and recvs (pipeline stages), where it stops is a p2p seq:
  // the report gives such groups' seqs as p2p_seq_ids, so that a group whose send/recv waits
  // for good counts as a group with a problem, as one whose collective does.
  void NoteP2pDivergence(int64_t p2p_seq) {
    if (p2p_seq == kUnknown) return;
    for (const GroupMember& member : group_.members) {
      if (!member.units.empty()) return;
    }
    NoteDivergence(p2p_seq);
  }

  // What member `x` has done about collective `seq`.
  enum class Progress { kMissing, kNotIssued, kScheduled, kStarted, kCompleted };

  Progress ProgressAt(const GroupMember& member, int64_t seq, const CollectiveUnit** unit) const {
    *unit = nullptr;
    if (member.dump < 0) return Progress::kMissing;
    if (member.last_enqueued == kUnknown || member.last_enqueued < seq) return Progress::kNotIssued;
    auto it = std::lower_bound(member.units.begin(), member.units.end(), seq,
                               [](const CollectiveUnit& u, int64_t s) { return u.seq < s; });
    if (it != member.units.end() && it->seq == seq) {
      *unit = &*it;
      switch (it->state) {
        case EntryState::kCompleted:
          return Progress::kCompleted;
        case EntryState::kStarted:
          return Progress::kStarted;
        default:
          return Progress::kScheduled;
      }
    }
    // Rolled out of the ring buffer: pg_status still knows.
    if (member.last_completed >= seq) return Progress::kCompleted;
    if (member.last_started >= seq) return Progress::kStarted;
    return Progress::kScheduled;
  }

  // An op younger than its timeout at dump time is in flight, not stuck, unless it has waited
  // far beyond the rank's own rhythm (a hang in progress, dumped before any timeout fired).
  // `seq`: the op's collective seq in this group, or -1 for a send/recv.
  bool IsStuck(const GroupMember& member, const Entry& entry, int64_t seq) {
    // A member the logs say died and that never issued this collective: it can never complete,
    // however young it is.
    if (seq >= 0 && !index_.died_ranks.empty()) {
      for (const GroupMember& other : group_.members) {
        if (&other == &member ||
            !std::binary_search(index_.died_ranks.begin(), index_.died_ranks.end(), other.rank)) {
          continue;
        }
        if (other.dump < 0 || other.last_enqueued == kUnknown || other.last_enqueued < seq) {
          ++result_.ops_known_stuck;
          return true;
        }
      }
    }
    int64_t dump_time = index_.dump_times.per_dump[member.dump];
    if (dump_time == kUnknown || entry.time_created_ns == kUnknown) return true;
    int64_t timeout_ms = entry.timeout_ms > 0 ? entry.timeout_ms : kDefaultTimeoutMs;
    int64_t age = dump_time - entry.time_created_ns;
    if (age >= timeout_ms * 1'000'000) {
      ++result_.ops_known_stuck;
      return true;
    }
    const auto& stall_after = index_.dump_times.stall_after_ns;
    if (index_.dump_times.some_rank_went_idle && member.dump >= 0 &&
        static_cast<size_t>(member.dump) < stall_after.size() &&
        stall_after[member.dump] != kUnknown && age >= stall_after[member.dump]) {
      ++result_.stalled_beyond_rhythm_ops;
      if (age > result_.longest_stall_ns) {
        result_.longest_stall_ns = age;
        result_.stall_median_gap_ns = index_.dump_times.median_gap_ns[member.dump];
      }
      return true;
    }
    return false;
  }

  // True when the members disagreed about collective `seq` (matched before heads are judged).
  bool Desynced(int64_t seq) const {
    return std::any_of(result_.mismatches.begin(), result_.mismatches.end(),
                       [&](const Mismatch& m) { return m.group == group_index_ && m.seq == seq; });
  }

  // Each member's stream head in this group: its oldest op that did not complete. Heads of the
  // same collective seq are judged together; p2p heads per op.
  void FindBlockedHeads() {
    std::map<int64_t, std::vector<size_t>>& collective_heads = heads_.judged;
    std::vector<std::pair<size_t, uint32_t>> p2p_heads;  // (member, entry)
    for (size_t m = 0; m < group_.members.size(); ++m) {
      const GroupMember& member = group_.members[m];
      const RankDump* dump = DumpOf(member);
      if (dump == nullptr) continue;
      const CollectiveUnit* coll = nullptr;
      for (const CollectiveUnit& unit : member.units) {
        if (unit.state != EntryState::kCompleted) {
          coll = &unit;
          break;
        }
      }
      int64_t p2p = -1;
      for (uint32_t e : member.p2p_entries) {
        if (!EntryFinished(dump->entries[e])) {
          p2p = e;
          break;
        }
      }
      bool coll_first = coll != nullptr && (p2p < 0 || coll->first_entry < p2p);
      // With a small ring buffer the rank's oldest unfinished collective may have rolled out:
      // pg_status says it completed only up to an older seq than the first unfinished one still
      // in the buffer. Its head is that older seq (judged from pg_status), not a later op that
      // a peer blocked behind it cannot have issued yet. Whether the later op is stuck still
      // tells whether the older one is.
      int64_t head_seq = coll_first ? coll->seq : kUnknown;
      if (coll_first && member.last_completed != kUnknown &&
          member.last_completed + 1 < coll->seq &&
          member.last_completed + 1 < member.first_seq_in_buffer) {
        head_seq = member.last_completed + 1;
      }
      // A head that has not started while this rank has an older unfinished op elsewhere is not
      // where the rank waits: its wait is judged at that older op. (A head that rolled out is
      // older than anything in the buffer.)
      if (coll_first && head_seq == coll->seq && coll->state == EntryState::kScheduled &&
          BlockedBehindEarlierOp(member, coll->first_entry)) {
        continue;
      }
      if (coll_first) {
        // An op that ended in an error is where the rank stopped, however young it was; so is
        // one whose collective another member issued differently: it can never complete. (A
        // late rank's op can be younger than its timeout when the culprit's exit ends it and the
        // rank dumps before Gloo retires the failed op.)
        if (coll->retired_failed) ++result_.ops_known_stuck;
        if (!coll->retired_failed &&
            !IsStuck(member, dump->entries[coll->first_entry], coll->seq) && !Desynced(coll->seq)) {
          ++result_.in_flight_ops;
          heads_.young.emplace_back(head_seq, m);
          continue;
        }
        collective_heads[head_seq].push_back(m);
      } else if (p2p >= 0) {
        if (!IsStuck(member, dump->entries[p2p], -1)) {
          ++result_.in_flight_ops;
          continue;
        }
        // A batch (batch_isend_irecv) shares one p2p_seq_id: all its pending ops are the head.
        int64_t batch = dump->entries[p2p].p2p_seq_id;
        for (uint32_t e : member.p2p_entries) {
          const Entry& entry = dump->entries[e];
          if (e < static_cast<uint32_t>(p2p) || EntryFinished(entry)) continue;
          if (e != static_cast<uint32_t>(p2p) && (batch == kUnknown || entry.p2p_seq_id != batch)) {
            break;
          }
          p2p_heads.emplace_back(m, e);
        }
      }
    }
    for (const auto& [seq, waiters] : collective_heads) JudgeCollectiveHead(seq, waiters);
    if (!p2p_heads.empty()) JudgeP2pHeads(p2p_heads);
  }

  void AddBlock(bool is_p2p, int64_t seq, std::string op, std::vector<int64_t> waiters,
                std::vector<int64_t> blockers, BlockReason reason, int64_t time_created_ns) {
    if (waiters.empty() || blockers.empty()) return;
    Block block;
    block.group = group_index_;
    block.is_p2p = is_p2p;
    block.seq = seq;
    block.op = std::move(op);
    block.waiters = Sorted(std::move(waiters));
    block.blockers = Sorted(std::move(blockers));
    block.reason = reason;
    block.time_created_ns = time_created_ns;
    result_.blocks.push_back(std::move(block));
  }

  void JudgeCollectiveHead(int64_t seq, const std::vector<size_t>& waiting) {
    NoteDivergence(seq);
    // The op's name and age from the first member that still holds its entry (a head that
    // rolled out of a waiter's ring buffer may be in another member's).
    std::string op;
    int64_t created = kUnknown;
    for (size_t m = 0; m < group_.members.size() && op.empty(); ++m) {
      const CollectiveUnit* unit = nullptr;
      ProgressAt(group_.members[m], seq, &unit);
      if (unit == nullptr) continue;
      const RankDump& dump = *DumpOf(group_.members[m]);
      const Entry& entry = dump.entries[unit->first_entry];
      op = std::string(dump.strings.view(entry.op_name));
      created = entry.time_created_ns;
    }
    // Every member's ring buffer moved past it (they kept enqueueing behind the stuck op): its
    // seq and group are known from their progress, its name is not.
    if (op.empty()) op = "collective";

    std::vector<int64_t> missing, unreadable, not_issued, not_started, blocked_behind;
    std::vector<std::pair<size_t, const CollectiveUnit*>> issued;
    bool any_started = false;
    bool all_started = true;
    bool any_completed = false;
    for (size_t m = 0; m < group_.members.size(); ++m) {
      const GroupMember& member = group_.members[m];
      const CollectiveUnit* unit = nullptr;
      Progress progress = ProgressAt(member, seq, &unit);
      switch (progress) {
        case Progress::kMissing:
          // A file that exists but could not be read says nothing of what its rank did.
          (index_.Unreadable(member.rank) ? unreadable : missing).push_back(member.rank);
          all_started = false;
          break;
        case Progress::kNotIssued:
          not_issued.push_back(member.rank);
          all_started = false;
          break;
        case Progress::kScheduled:
          if (unit != nullptr && BlockedBehindEarlierOp(member, unit->first_entry)) {
            blocked_behind.push_back(member.rank);
          } else {
            not_started.push_back(member.rank);
          }
          all_started = false;
          break;
        case Progress::kStarted:
          any_started = true;
          break;
        case Progress::kCompleted:
          any_started = true;
          any_completed = true;
          break;
      }
      if (unit != nullptr) issued.emplace_back(m, unit);
    }
    std::vector<int64_t> waiters;
    for (size_t m : waiting) waiters.push_back(group_.members[m].rank);

    // Members that issued something else at this seq block the rest.
    std::vector<int64_t> mismatched;
    MismatchKind mismatch_kind = MismatchKind::kOp;
    if (issued.size() >= 2) {
      const RankDump& first_dump = *DumpOf(group_.members[issued.front().first]);
      bool all_equal = true;
      for (const auto& [m, unit] : issued) {
        all_equal = all_equal && SameSignature(first_dump, *issued.front().second,
                                               *DumpOf(group_.members[m]), *unit);
      }
      if (!all_equal) {
        for (const Mismatch& mismatch : result_.mismatches) {
          if (mismatch.group == group_index_ && mismatch.seq == seq && !mismatch.minority.empty() &&
              !mismatch.majority.empty()) {
            mismatched = mismatch.minority;
            mismatch_kind = mismatch.kind;
          }
        }
      }
    }
    if (!mismatched.empty()) {
      std::vector<int64_t> majority_waiters;
      for (int64_t w : waiters) {
        if (!std::binary_search(mismatched.begin(), mismatched.end(), w)) {
          majority_waiters.push_back(w);
        }
      }
      AddBlock(false, seq, op, majority_waiters, mismatched, BlockReasonOf(mismatch_kind), created);
    }
    AddBlock(false, seq, op, waiters, not_issued, BlockReason::kNeverIssued, created);
    AddBlock(false, seq, op, waiters, missing, BlockReason::kDumpMissing, created);
    AddBlock(false, seq, op, waiters, unreadable, BlockReason::kDumpUnreadable, created);
    AddBlock(false, seq, op, waiters, blocked_behind, BlockReason::kBehindEarlierOp, created);
    // Without timing every pending op reads "scheduled": only timing can show who did not start.
    if (timing_known_ && any_started) {
      std::vector<int64_t> started_waiters;
      for (int64_t w : waiters) {
        if (!std::binary_search(not_started.begin(), not_started.end(), w)) {
          started_waiters.push_back(w);
        }
      }
      AddBlock(false, seq, op, started_waiters, not_started, BlockReason::kNotStarted, created);
    }
    // A member whose dump is unreadable may be the one that never issued it: never "stuck with
    // everyone inside" when some member cannot be seen.
    bool nobody_blocks = mismatched.empty() && not_issued.empty() && missing.empty() &&
                         unreadable.empty() && blocked_behind.empty() &&
                         (!timing_known_ || !any_started || not_started.empty());
    if (nobody_blocks && !any_completed) {
      StuckOp stuck;
      stuck.group = group_index_;
      stuck.seq = seq;
      stuck.op = op;
      stuck.ranks = Sorted(waiters);
      stuck.all_started = all_started;
      stuck.timing_known = timing_known_;
      stuck.time_created_ns = created;
      result_.stuck.push_back(std::move(stuck));
    }
  }

  // Send/recv heads: each must meet the partner op on its (src, dst) channel, in FIFO order.
  void JudgeP2pHeads(const std::vector<std::pair<size_t, uint32_t>>& heads) {
    // Pending sends and recvs per channel, in each side's order.
    absl::flat_hash_map<int64_t, size_t> member_of_rank;
    for (size_t m = 0; m < group_.members.size(); ++m) member_of_rank[group_.members[m].rank] = m;
    auto pending_on_channel = [&](const GroupMember& member, OpKind kind, int64_t peer,
                                  uint32_t up_to_entry, bool inclusive) {
      const RankDump& dump = *DumpOf(member);
      int64_t count = 0;
      for (uint32_t e : member.p2p_entries) {
        if (e > up_to_entry || (!inclusive && e == up_to_entry)) break;
        const Entry& entry = dump.entries[e];
        if (entry.op == kind && entry.peer_rank == peer && !EntryFinished(entry)) {
          ++count;
        }
      }
      return count;
    };
    // Pass 1: what each head op's partner is doing.
    enum class PartnerState { kSkip, kPeerMissing, kAbsent, kBehind, kNotStarted, kStarted };
    struct Judged {
      size_t member;
      uint32_t entry;
      PartnerState partner = PartnerState::kSkip;
      size_t peer = 0;
      int64_t partner_batch = kUnknown;  // the partner op's p2p_seq_id
    };
    std::vector<Judged> judged;
    for (const auto& [m, e] : heads) {
      const GroupMember& member = group_.members[m];
      const RankDump& dump = *DumpOf(member);
      const Entry& entry = dump.entries[e];
      ++result_.p2p_ops_checked;
      Judged j{m, e};
      judged.push_back(j);
      // Not yet started and stuck behind this rank's own older op: it waits there, not here.
      if (entry.state == EntryState::kScheduled && BlockedBehindEarlierOp(member, e)) continue;
      if (entry.peer_rank == kUnknown) continue;
      auto peer_it = member_of_rank.find(entry.peer_rank);
      if (peer_it == member_of_rank.end()) continue;
      Judged& current = judged.back();
      current.peer = peer_it->second;
      const GroupMember& peer = group_.members[peer_it->second];
      if (peer.dump < 0) {
        current.partner = PartnerState::kPeerMissing;
        continue;
      }
      // This op is the k-th pending one on its channel; the partner must have posted k as well.
      OpKind partner_kind = entry.op == OpKind::kSend ? OpKind::kRecv : OpKind::kSend;
      int64_t position = pending_on_channel(member, entry.op, entry.peer_rank, e, true);
      const RankDump& peer_dump = *DumpOf(peer);
      std::optional<Entry> partner;
      uint32_t partner_index = 0;
      int64_t seen = 0;
      for (uint32_t pe : peer.p2p_entries) {
        const Entry& candidate = peer_dump.entries[pe];
        if (candidate.op == partner_kind && candidate.peer_rank == member.rank &&
            !EntryFinished(candidate) && ++seen == position) {
          partner = candidate;
          partner_index = pe;
          break;
        }
      }
      if (!partner.has_value()) {
        current.partner = PartnerState::kAbsent;
      } else if (partner->state == EntryState::kScheduled &&
                 BlockedBehindEarlierOp(peer, partner_index)) {
        current.partner = PartnerState::kBehind;
      } else if (partner->state == EntryState::kScheduled && timing_known_ &&
                 entry.state == EntryState::kStarted) {
        current.partner = PartnerState::kNotStarted;
      } else {
        current.partner = PartnerState::kStarted;
        current.partner_batch = partner->p2p_seq_id;
      }
    }
    // A batch (batch_isend_irecv) completes only as a whole: one op of it that waits holds the
    // others, so a peer matched with a held op is not going to complete either.
    // (rank, p2p_seq_id) -> the peers its waiting ops wait for.
    std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> held_batches;
    for (const Judged& j : judged) {
      if (j.partner != PartnerState::kStarted && j.partner != PartnerState::kSkip) {
        const GroupMember& member = group_.members[j.member];
        held_batches[{member.rank, DumpOf(member)->entries[j.entry].p2p_seq_id}].insert(
            group_.members[j.peer].rank);
      }
    }
    // A batch whose op is matched with an op of a held batch is held too, by that peer: the
    // hold passes along a pipeline, stage by stage.
    for (bool grew = true; grew;) {
      grew = false;
      for (const Judged& j : judged) {
        if (j.partner != PartnerState::kStarted) continue;
        const int64_t peer_rank = group_.members[j.peer].rank;
        if (!held_batches.contains({peer_rank, j.partner_batch})) continue;
        const GroupMember& member = group_.members[j.member];
        const std::set<int64_t>& holders = held_batches[{peer_rank, j.partner_batch}];
        // Held only by this member's own batch: the hold would come back to where it started.
        if (std::all_of(holders.begin(), holders.end(),
                        [&](int64_t r) { return r == member.rank; })) {
          continue;
        }
        int64_t own_batch = DumpOf(member)->entries[j.entry].p2p_seq_id;
        grew |= held_batches[{member.rank, own_batch}].insert(peer_rank).second;
      }
    }
    // Pass 2: blocks and stuck pairs.
    for (const Judged& j : judged) {
      if (j.partner == PartnerState::kSkip) continue;
      const GroupMember& member = group_.members[j.member];
      const RankDump& dump = *DumpOf(member);
      const Entry& entry = dump.entries[j.entry];
      const GroupMember& peer = group_.members[j.peer];
      std::string op(dump.strings.view(entry.op_name));
      auto block = [&](BlockReason reason) {
        AddBlock(true, entry.p2p_seq_id, op, {member.rank}, {peer.rank}, reason,
                 entry.time_created_ns);
        NoteP2pDivergence(entry.p2p_seq_id);
      };
      switch (j.partner) {
        case PartnerState::kSkip:
          break;
        case PartnerState::kPeerMissing:
          block(index_.Unreadable(peer.rank) ? BlockReason::kDumpUnreadable
                                             : BlockReason::kDumpMissing);
          break;
        case PartnerState::kAbsent:
          block(entry.op == OpKind::kSend ? BlockReason::kNoMatchingRecv
                                          : BlockReason::kNoMatchingSend);
          break;
        case PartnerState::kBehind:
          block(BlockReason::kBehindEarlierOp);
          break;
        case PartnerState::kNotStarted:
          block(BlockReason::kNotStarted);
          break;
        case PartnerState::kStarted:
          if (auto held = held_batches.find({peer.rank, j.partner_batch});
              held != held_batches.end()) {
            const std::set<int64_t>& holders = held->second;
            bool only_by_member = std::all_of(holders.begin(), holders.end(),
                                              [&](int64_t r) { return r == member.rank; });
            auto own = held_batches.find({member.rank, entry.p2p_seq_id});
            if (only_by_member && own != held_batches.end() && !own->second.contains(peer.rank)) {
              // The peer waits for this member's batch, which waits for a third rank: this op
              // is pending only because of its own batch, not because of the peer.
              break;
            }
            block(entry.op == OpKind::kSend ? BlockReason::kRecvHeldByBatch
                                            : BlockReason::kSendHeldByBatch);
            // The peer's batch waits for a third rank, not for this one: the wait passes on
            // (two batches holding each other are a shifted FIFO pairing; this is not).
            result_.blocks.back().held_by_other_rank = !only_by_member;
          } else if (entry.op == OpKind::kSend &&
                     !held_batches.contains({member.rank, entry.p2p_seq_id})) {
            // Both sides posted and neither completed: the transport (reported by the sender).
            // Unless the sender's own batch waits elsewhere: it completes only as a whole.
            StuckOp stuck;
            stuck.group = group_index_;
            stuck.is_p2p = true;
            stuck.seq = entry.p2p_seq_id;
            stuck.op = op;
            stuck.ranks = Sorted({member.rank, peer.rank});
            stuck.timing_known = timing_known_;
            stuck.all_started = entry.state == EntryState::kStarted;
            stuck.time_created_ns = entry.time_created_ns;
            result_.stuck.push_back(std::move(stuck));
            NoteP2pDivergence(entry.p2p_seq_id);
          }
          break;
      }
    }
  }

  // Where each member stands: at the lowest blocked seq when the group is blocked, otherwise at
  // its last issued collective.
  void DescribeMemberStates() {
    int64_t focus = kUnknown;
    for (const Block& block : result_.blocks) {
      if (block.group == group_index_ && !block.is_p2p) {
        focus = focus == kUnknown ? block.seq : std::min(focus, block.seq);
      }
    }
    for (const StuckOp& stuck : result_.stuck) {
      if (stuck.group == group_index_ && !stuck.is_p2p) {
        focus = focus == kUnknown ? stuck.seq : std::min(focus, stuck.seq);
      }
    }
    for (const GroupMember& member : group_.members) {
      MemberState state;
      state.rank = member.rank;
      const RankDump* dump = DumpOf(member);
      if (dump == nullptr) {
        state.state = index_.Unreadable(member.rank) ? MemberProgress::kDumpUnreadable
                                                     : MemberProgress::kDumpMissing;
        match_.members.push_back(std::move(state));
        continue;
      }
      if (member.units.empty() && !member.p2p_entries.empty()) {
        // A p2p-only group (pipeline stages): where the member is on its sends and recvs, the
        // oldest unfinished one, else the last.
        uint32_t shown = member.p2p_entries.back();
        for (uint32_t e : member.p2p_entries) {
          if (!EntryFinished(dump->entries[e])) {
            shown = e;
            break;
          }
        }
        const Entry& entry = dump->entries[shown];
        state.state = entry.state == EntryState::kCompleted ? MemberProgress::kCompleted
                      : entry.state == EntryState::kStarted ? MemberProgress::kStarted
                                                            : MemberProgress::kScheduled;
        state.op = fmt::format("{} {} {}", dump->strings.view(entry.op_name),
                               entry.op == OpKind::kSend ? "to" : "from", entry.peer_rank);
        state.seq = entry.p2p_seq_id;
        match_.members.push_back(std::move(state));
        continue;
      }
      int64_t seq = focus != kUnknown ? focus : member.last_enqueued;
      const CollectiveUnit* unit = nullptr;
      Progress progress = seq == kUnknown ? Progress::kNotIssued : ProgressAt(member, seq, &unit);
      if (progress == Progress::kNotIssued) {
        state.state = MemberProgress::kNotIssued;
        seq = member.last_enqueued;
        ProgressAt(member, seq, &unit);
      } else {
        state.state = progress == Progress::kCompleted ? MemberProgress::kCompleted
                      : progress == Progress::kStarted ? MemberProgress::kStarted
                                                       : MemberProgress::kScheduled;
      }
      state.seq = seq;
      if (unit != nullptr) {
        state.op = std::string(dump->strings.view(dump->entries[unit->first_entry].op_name));
      } else if (seq != kUnknown) {
        state.op = "collective";  // its entry rolled out of the ring buffer; pg_status knows seq
      }
      match_.members.push_back(std::move(state));
    }
  }

  // A member that issued an op but has an older unfinished op (in any group) is blocked behind
  // that one: its GPU runs ops in order once the compute stream waits on them.
  bool BlockedBehindEarlierOp(const GroupMember& member, uint32_t entry) const {
    // An unfinished collective of another group that rolled out of the buffer is older than
    // anything in it.
    for (uint32_t g : rolled_out_[member.dump]) {
      if (g != group_index_) return true;
    }
    int64_t first = first_pending_[member.dump];
    if (first < 0 || first >= static_cast<int64_t>(entry)) return false;
    // Ops of one batch (batch_isend_irecv) are launched together: none is behind another.
    const auto& entries = trace_.ranks[member.dump].entries;
    const Entry& older = entries[first];
    const Entry& op = entries[entry];
    bool same_batch = IsPointToPoint(op.op) && (older.is_p2p || IsPointToPoint(older.op)) &&
                      older.group == op.group && older.p2p_seq_id != kUnknown &&
                      older.p2p_seq_id == op.p2p_seq_id;
    return !same_batch;
  }

  const LoadedTrace& trace_;
  const std::vector<std::vector<uint32_t>>& rolled_out_;
  const JobIndex& index_;
  const std::vector<int64_t>& first_pending_;
  const JobGroup& group_;
  uint32_t group_index_;
  MatchResult& result_;
  GroupMatch& match_;
  GroupHeads& heads_;
  bool timing_known_ = false;
};

// Per loaded dump, the groups whose oldest unfinished collective rolled out of the dump's ring
// buffer: pg_status says the rank issued more than it completed, and completed only up to a seq
// older than the first one still in the buffer.
std::vector<std::vector<uint32_t>> RolledOutPending(const LoadedTrace& trace,
                                                    const JobIndex& index) {
  std::vector<std::vector<uint32_t>> rolled_out(trace.ranks.size());
  for (uint32_t g = 0; g < index.groups.size(); ++g) {
    for (const GroupMember& member : index.groups[g].members) {
      if (member.dump < 0 || member.last_completed == kUnknown ||
          member.first_seq_in_buffer == kUnknown || member.last_enqueued == kUnknown ||
          member.last_enqueued <= member.last_completed ||
          member.last_completed + 1 >= member.first_seq_in_buffer) {
        continue;
      }
      rolled_out[member.dump].push_back(g);
    }
  }
  return rolled_out;
}

// A young op is in flight only while its rank is free to go on. When ranks stuck for good wait
// for a rank whose op is younger than its timeout, that op is where the rank waits, not a sign
// that it waits on nothing: a rank whose dump came early (Gloo ends a peer's ops at once when it
// exits, and the rank dumps within a second) would otherwise be named a culprit that "never
// issued" what its waiters are in. So the young heads of waited-for ranks are judged like stuck
// ones, and so on down the chain. Young heads nobody waits on stay in flight (a healthy job
// dumped on demand has many). Collective heads only: a young send/recv stays in flight.
void PromoteYoungHeads(const LoadedTrace& trace, const JobIndex& index,
                       const std::vector<std::vector<uint32_t>>& rolled_out,
                       std::vector<GroupHeads>* heads, std::vector<MatchResult>* found,
                       std::vector<GroupMatch>* matches) {
  absl::flat_hash_map<int64_t, std::vector<std::pair<uint32_t, size_t>>> young_of_rank;
  for (uint32_t g = 0; g < heads->size(); ++g) {
    const GroupHeads& group = (*heads)[g];
    for (size_t i = 0; i < group.young.size(); ++i) {
      young_of_rank[index.groups[g].members[group.young[i].second].rank].emplace_back(g, i);
    }
  }
  if (young_of_rank.empty()) return;
  // Waited-for ranks with young heads, each taken once (the chain may come back to a rank).
  std::vector<int64_t> queue;
  absl::flat_hash_set<int64_t> queued;
  auto enqueue_blockers = [&](const std::vector<Block>& blocks) {
    for (const Block& block : blocks) {
      for (int64_t r : block.blockers) {
        if (young_of_rank.contains(r) && queued.insert(r).second) queue.push_back(r);
      }
    }
  };
  for (const MatchResult& group : *found) enqueue_blockers(group.blocks);
  while (!queue.empty()) {
    int64_t rank = queue.back();
    queue.pop_back();
    for (const auto& [g, i] : young_of_rank.at(rank)) {
      GroupHeads& group = (*heads)[g];
      const auto [seq, member] = group.young[i];
      std::vector<size_t>& judged = group.judged[seq];
      judged.insert(std::upper_bound(judged.begin(), judged.end(), member), member);
      --(*found)[g].in_flight_ops;
      GroupMatcher(trace, index, g, &(*found)[g], &(*matches)[g], &group, rolled_out)
          .JudgeAgain(seq);
      enqueue_blockers((*found)[g].blocks);
    }
  }
}

}  // namespace

std::string_view BlockReasonText(BlockReason reason) {
  switch (reason) {
    case BlockReason::kNeverIssued:
      return "never issued";
    case BlockReason::kDumpMissing:
      return "dump missing";
    case BlockReason::kDumpUnreadable:
      return "dump unreadable";
    case BlockReason::kNotStarted:
      return "issued but not started";
    case BlockReason::kNoMatchingRecv:
      return "no matching recv";
    case BlockReason::kNoMatchingSend:
      return "no matching send";
    case BlockReason::kOpMismatch:
      return "op_mismatch";
    case BlockReason::kSizeMismatch:
      return "size_mismatch";
    case BlockReason::kDtypeMismatch:
      return "dtype_mismatch";
    case BlockReason::kBehindEarlierOp:
      return "blocked behind an earlier op";
    case BlockReason::kRecvHeldByBatch:
      return "matching recv held by an incomplete batch";
    case BlockReason::kSendHeldByBatch:
      return "matching send held by an incomplete batch";
    case BlockReason::kUnrecordedP2p:
      return "presumably blocked in a send/recv that Gloo does not record";
  }
  return "never issued";
}

BlockReason BlockReasonOf(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::kOp:
      return BlockReason::kOpMismatch;
    case MismatchKind::kDtype:
      return BlockReason::kDtypeMismatch;
    case MismatchKind::kSize:
      return BlockReason::kSizeMismatch;
  }
  return BlockReason::kOpMismatch;
}

std::string_view MemberProgressName(MemberProgress progress) {
  switch (progress) {
    case MemberProgress::kScheduled:
      return "scheduled";
    case MemberProgress::kStarted:
      return "started";
    case MemberProgress::kCompleted:
      return "completed";
    case MemberProgress::kNotIssued:
      return "not issued";
    case MemberProgress::kDumpMissing:
      return "dump missing";
    case MemberProgress::kDumpUnreadable:
      return "dump unreadable";
  }
  return "scheduled";
}

std::string_view MismatchKindName(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::kOp:
      return "op_mismatch";
    case MismatchKind::kDtype:
      return "dtype_mismatch";
    case MismatchKind::kSize:
      return "size_mismatch";
  }
  return "op_mismatch";
}

MatchResult MatchJob(const LoadedTrace& trace, const JobIndex& index, int jobs) {
  MatchResult result;
  result.groups.resize(index.groups.size());
  result.dump_time_ns = index.dump_times.job_ns;
  result.dump_time_source = index.dump_times.source;
  result.dump_time_confidence = index.dump_times.confidence;
  // A group's matcher reads and writes only its own group's findings, so groups are matched in
  // parallel, each into a result of its own, and the results joined in group order: the same
  // lists, in the same order, as one after the other.
  std::vector<MatchResult> found(index.groups.size());
  std::vector<GroupHeads> heads(index.groups.size());
  const std::vector<std::vector<uint32_t>> rolled_out = RolledOutPending(trace, index);
  ParallelFor(
      index.groups.size(), jobs,
      [&](size_t g) {
        GroupMatcher(trace, index, static_cast<uint32_t>(g), &found[g], &result.groups[g],
                     &heads[g], rolled_out)
            .Run();
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/8);
  PromoteYoungHeads(trace, index, rolled_out, &heads, &found, &result.groups);
  for (MatchResult& group : found) {
    std::move(group.mismatches.begin(), group.mismatches.end(),
              std::back_inserter(result.mismatches));
    std::move(group.blocks.begin(), group.blocks.end(), std::back_inserter(result.blocks));
    std::move(group.stuck.begin(), group.stuck.end(), std::back_inserter(result.stuck));
    result.in_flight_ops += group.in_flight_ops;
    result.stalled_beyond_rhythm_ops += group.stalled_beyond_rhythm_ops;
    result.ops_known_stuck += group.ops_known_stuck;
    if (group.longest_stall_ns > result.longest_stall_ns) {
      result.longest_stall_ns = group.longest_stall_ns;
      result.stall_median_gap_ns = group.stall_median_gap_ns;
    }
    result.collectives_checked += group.collectives_checked;
    result.p2p_ops_checked += group.p2p_ops_checked;
  }
  return result;
}

}  // namespace fr
