// Matching collectives: whether the members of a group issued the same op, dtypes and shapes at
// each collective seq, which side is the odd one out when they did not, and who blocks the members
// waiting at a collective head (never issued, not started, a mismatch, a missing dump).
#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/match/matcher_internal.h"

namespace fr::match_internal {
namespace {

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

}  // namespace

void GroupMatcher::CompareIssuedCollectives() {
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

bool GroupMatcher::CutByRingBuffer(const GroupMember& member, const CollectiveUnit& unit) const {
  if (unit.first_entry != 0) return false;
  const Entry& first = DumpOf(member)->entries[0];
  return first.record_id > 0;
}

bool GroupMatcher::Unnamed(const GroupMember& member, const CollectiveUnit& unit) const {
  const RankDump& dump = *DumpOf(member);
  for (uint32_t i = unit.first_entry; i < unit.first_entry + unit.entry_count; ++i) {
    if (dump.strings.view(dump.entries[i].profiling_name).empty()) return true;
  }
  return false;
}

bool GroupMatcher::CompareAtSeq(
    int64_t seq, const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued) {
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

bool GroupMatcher::CheckAllToAllTotals(
    int64_t seq, const std::vector<std::pair<size_t, const CollectiveUnit*>>& issued) {
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

template <typename Attribute>
bool GroupMatcher::SiblingMajority(int64_t seq, const Attribute& attribute,
                                   std::string* value) const {
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

std::vector<int64_t> GroupMatcher::ReportMismatch(
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

void GroupMatcher::JudgeCollectiveHead(int64_t seq, const std::vector<size_t>& waiting) {
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

}  // namespace fr::match_internal
