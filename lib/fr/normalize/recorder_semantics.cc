#include "fr/normalize/recorder_semantics.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace fr {
namespace {

void CountOddity(RankDump* dump, std::string_view name, int64_t count) {
  if (count == 0) return;
  for (auto& [key, value] : dump->oddities) {
    if (key == name) {
      value += count;
      return;
    }
  }
  dump->oddities.emplace_back(std::string(name), count);
}

bool ClosesCoalescedGroup(const RankDump& dump, const Entry& entry) {
  if (entry.op == OpKind::kCoalesced) return true;
  std::string_view name = dump.strings.view(entry.op_name);
  constexpr std::string_view kSuffix = "_coalesced";
  return name.size() > kSuffix.size() && name.ends_with(kSuffix);
}

// Members carry no events of their own: anything else means the entry is not a silent member.
bool RecordedWithoutEvents(const Entry& entry) {
  return entry.state == EntryState::kScheduled && !entry.retired &&
         entry.time_discovered_started_ns == kUnknown &&
         entry.time_discovered_completed_ns == kUnknown;
}

// Gives the members of each coalesced group or p2p batch the state of the entry that closes it.
int64_t ResolveCoalescedMembers(RankDump* dump) {
  EntryStore::Vector& entries = dump->entries.open_vector();
  int64_t resolved = 0;
  for (size_t end = 0; end < entries.size(); ++end) {
    Entry& closing = entries[end];
    if (!ClosesCoalescedGroup(*dump, closing) || IsPointToPoint(closing.op)) continue;
    bool any_member = false, p2p_batch = false;
    // Members precede their closing entry; entries of other groups (other threads) may sit
    // between them and are skipped.
    for (size_t i = end; i-- > 0;) {
      Entry& member = entries[i];
      if (member.group != closing.group) continue;
      bool p2p_member = IsPointToPoint(member.op) && closing.p2p_seq_id != kUnknown &&
                        member.p2p_seq_id == closing.p2p_seq_id;
      bool collective_member = !IsPointToPoint(member.op) && member.op != OpKind::kCoalesced &&
                               closing.collective_seq_id != kUnknown &&
                               member.collective_seq_id == closing.collective_seq_id;
      if (!(p2p_member || collective_member) || !RecordedWithoutEvents(member)) break;
      if (p2p_member) p2p_batch = true;
      member.state = closing.state;
      member.retired = closing.retired;
      member.time_discovered_started_ns = closing.time_discovered_started_ns;
      member.time_discovered_completed_ns = closing.time_discovered_completed_ns;
      member.state_from_batch = true;
      any_member = true;
      ++resolved;
    }
    if (!any_member) continue;  // a fast-path coalesced op (allreduce_coalesced): one entry
    closing.op = OpKind::kCoalesced;
    if (p2p_batch) closing.is_p2p = true;
  }
  return resolved;
}

// Translates pg_status values counted in op ids into collective seq ids, per group.
int64_t TranslateOpIdStatuses(RankDump* dump) {
  struct Seen {
    int64_t max_seq = kUnknown;
    int64_t last_op_id = kUnknown;
    int64_t first_op_id = kUnknown;
  };
  std::vector<Seen> seen(dump->groups.size());
  for (const Entry& entry : dump->entries) {
    if (entry.group >= seen.size()) continue;
    Seen& s = seen[entry.group];
    s.max_seq = std::max(s.max_seq, entry.collective_seq_id);
    if (entry.op_id != kUnknown) {
      s.last_op_id = std::max(s.last_op_id, entry.op_id);
      if (s.first_op_id == kUnknown || entry.op_id < s.first_op_id) s.first_op_id = entry.op_id;
    }
  }
  int64_t translated = 0;
  for (uint32_t g = 0; g < dump->groups.size(); ++g) {
    ProcessGroup& group = dump->groups[g];
    const Seen& s = seen[g];
    if (!group.has_status || s.max_seq == kUnknown || s.last_op_id == kUnknown) continue;
    if (group.status.last_enqueued_collective <= s.max_seq ||
        group.status.last_enqueued_collective != s.last_op_id) {
      continue;
    }
    // The collective seq of the newest entry whose op id is at most `op_id`.
    auto seq_at_op = [&](int64_t op_id) {
      if (op_id < 0) return op_id;
      if (op_id < s.first_op_id) return kUnknown;  // rolled out of the buffer
      int64_t seq = kUnknown, best = kUnknown;
      for (const Entry& entry : dump->entries) {
        if (entry.group != g || entry.op_id == kUnknown || entry.op_id > op_id) continue;
        if (entry.collective_seq_id == kUnknown || IsPointToPoint(entry.op)) continue;
        if (entry.op_id >= best) {
          best = entry.op_id;
          seq = entry.collective_seq_id;
        }
      }
      return seq;
    };
    group.status.last_enqueued_collective = seq_at_op(group.status.last_enqueued_collective);
    group.status.last_started_collective = seq_at_op(group.status.last_started_collective);
    group.status.last_completed_collective = seq_at_op(group.status.last_completed_collective);
    ++translated;
  }
  return translated;
}

}  // namespace

void ApplyRecorderSemantics(RankDump* dump) {
  CountOddity(dump, "coalesced_member_state_from_closing_entry", ResolveCoalescedMembers(dump));
  CountOddity(dump, "pg_status_in_op_ids", TranslateOpIdStatuses(dump));
}

}  // namespace fr
