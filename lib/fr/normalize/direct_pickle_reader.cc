// The direct pickle reader's entry point and the dump's top level: which keys a dump may have
// and in which order, its version, its groups (pg_config, pg_status) and its communicators' state;
// anything else is declined for the general path.
#include "fr/normalize/direct_pickle_reader.h"

#include <charconv>
#include <cstddef>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/normalize/direct_pickle_reader_internal.h"
#include "fr/normalize/recorder_semantics.h"

namespace fr {
namespace direct_pickle_internal {
namespace {

bool ParseInt(std::string_view text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

bool Reader::Run() {
  if (end_ - begin_ > static_cast<ptrdiff_t>(kMaxPickleInputSize)) {
    return Decline("larger than a pickle may be");
  }
  // PROTO 2, then the top-level dict: torch writes no FRAME and memoizes containers after them.
  if (!Expect2(0x80, 0x02, "not protocol 2 from torch") ||
      !Expect2('}', '(', "top level is not a dict filled by SETITEMS")) {
    return false;
  }
  dump_.shape_list_offsets.push_back(0);
  dump_.dtype_list_offsets.push_back(0);
  dump_.stack_offsets.push_back(0);
  uint32_t seen = 0;  // top-level keys read, one bit each
  enum : uint32_t {
    kVersion = 1,
    kPgConfig = 2,
    kPgStatus = 4,
    kCommLib = 8,
    kCommState = 16,
    kEntries = 32
  };
  while (!At('u')) {
    uint32_t key;
    if (!ReadString(&key)) return false;
    VisitText(key);
    std::string_view name = Text(key);
    uint32_t which;
    if (name == "version") {
      which = kVersion;
    } else if (name == "pg_config") {
      which = kPgConfig;
    } else if (name == "pg_status") {
      which = kPgStatus;
    } else if (name == "nccl_version" || name == "comm_lib_version") {
      which = kCommLib;
    } else if (name == "entries") {
      which = kEntries;
    } else if (name.size() > 11 && name.substr(name.size() - 11) == "_comm_state") {
      which = kCommState;
    } else {
      return Decline("unknown top-level key");
    }
    if (seen & which) return Decline("repeated top-level key");
    seen |= which;
    bool ok = false;
    switch (which) {
      case kVersion:
        // The normalizer reads the version before any entry, whatever the file order.
        ok = !entries_read_ ? ReadVersion() : Decline("version after entries");
        break;
      case kPgConfig:
        ok = !entries_read_ ? ReadPgConfig() : Decline("pg_config after entries");
        break;
      case kPgStatus:
        ok = ReadPgStatus();
        break;
      case kCommLib: {
        uint32_t value;
        ok = ReadString(&value);
        if (ok) {
          VisitText(value);
          dump_.comm_lib_version = std::string(Text(value));
        }
        break;
      }
      case kCommState:
        ok = ReadCommState();
        break;
      case kEntries:
        ok = has_version_ ? ReadEntries() : Decline("entries before version");
        entries_read_ = true;
        break;
    }
    if (!ok) return false;
  }
  ++p_;  // SETITEMS
  if (At('q') || At('r')) {
    if (!MemoPut(SlotKind::kOther, 0, 0)) return false;
  }
  if (!Expect('.', "expected STOP")) return false;
  if (p_ != end_) return Decline("trailing bytes after STOP");
  if (!has_version_) return Decline("no version");
  if (!(seen & kEntries)) dump_.has_entries_key = false;
  ApplyPgStatus();
  if (OverBudget()) return Decline("near NormalizeLimits");
  return true;
}

bool Reader::ReadVersion() {
  uint32_t slot;
  if (!ReadString(&slot)) return false;
  VisitText(slot);
  std::string_view text = Text(slot);
  size_t dot = text.find('.');
  int64_t major = 0, minor = 0;
  if (dot == std::string_view::npos || !ParseInt(text.substr(0, dot), &major) ||
      !ParseInt(text.substr(dot + 1), &minor)) {
    return Decline("version is not major.minor");
  }
  // 2.0 and 2.1 write entries before the version; 1.x other keys; 3.x is not known.
  if (major != 2 || minor < 2) return Decline("a dump version this reader does not know");
  dump_.version = std::string(text);
  dump_.version_major = static_cast<int>(major);
  dump_.version_minor = static_cast<int>(minor);
  has_version_ = true;
  return true;
}

// {group name: {"name": str, "desc": str, "ranks": "[0, 1]"}}, mirroring NormalizePgConfig.
bool Reader::ReadPgConfig() {
  if (!Expect2('}', '(', "pg_config is not a dict")) return false;
  while (!At('u')) {
    uint32_t key;
    if (!ReadString(&key)) return false;
    if (!Expect2('}', '(', "pg_config group is not a dict")) return false;
    uint32_t name = kNone, desc = kNone, ranks = kNone;
    uint32_t pairs = 0;
    while (!At('u')) {
      uint32_t field, value;
      if (!ReadString(&field) || !ReadString(&value)) return false;
      std::string_view text = Text(field);
      uint32_t* target = text == "name"    ? &name
                         : text == "desc"  ? &desc
                         : text == "ranks" ? &ranks
                                           : nullptr;
      if (target == nullptr) return Decline("unknown pg_config group key");
      if (*target != kNone) return Decline("repeated pg_config group key");
      *target = value;
      ++pairs;
    }
    ++p_;
    Visit(1 + 2 * pairs);
    VisitText(key);
    StringId key_id = Intern(key);
    StringId name_id = name != kNone ? Intern(name) : key_id;
    if (name_id == 0) {
      Oddity("pg_config_placeholder_group");
      continue;
    }
    uint32_t index = GroupByName(name_id);
    if (desc != kNone) dump_.groups[index].desc = Intern(desc);
    if (ranks == kNone) {
      Oddity("pg_config_without_ranks");
      continue;
    }
    auto [it, inserted] = ranks_by_slot_.try_emplace(ranks);
    if (inserted) {
      VisitText(ranks);
      // Shared with the other dumps read on this thread (and so with the general path's lists).
      if (!ParseRanksStringShared(Text(ranks), &it->second)) {
        return Decline("unparseable pg ranks");
      }
      for (int64_t rank : it->second) {
        if (rank < 0 || rank > std::numeric_limits<int32_t>::max()) {
          return Decline("rank out of range");
        }
      }
    }
    Keep(it->second.size() * sizeof(int64_t));
    if (OverBudget()) return Decline("near NormalizeLimits");
    ProcessGroup& group = dump_.groups[index];
    group.ranks = it->second;
    group.ranks_known = true;
  }
  ++p_;
  return true;
}

// {str(pg_id): {"last_enqueued_collective": int, ...}}, applied after the entries as the
// normalizer does (statuses attach to groups by the pg_id entries give them).
bool Reader::ReadPgStatus() {
  if (!Expect2('}', '(', "pg_status is not a dict")) return false;
  while (!At('u')) {
    uint32_t key;
    if (!ReadString(&key)) return false;
    VisitText(key);
    PendingStatus pending;
    if (!ParseInt(Text(key), &pending.pg_id)) return Decline("pg_status key is not an int");
    if (!Expect2('}', '(', "pg_status value is not a dict")) return false;
    uint32_t pairs = 0;
    while (!At('u')) {
      uint32_t field;
      if (!ReadString(&field)) return false;
      std::string_view name = Text(field);
      int64_t* target =
          name == "last_enqueued_collective"    ? &pending.status.last_enqueued_collective
          : name == "last_started_collective"   ? &pending.status.last_started_collective
          : name == "last_completed_collective" ? &pending.status.last_completed_collective
                                                : nullptr;
      if (target == nullptr) return Decline("unknown pg_status key");
      if (!ReadInt(target)) return false;
      ++pairs;
    }
    ++p_;
    Visit(2 * pairs + 1);
    Keep(sizeof(std::pair<int64_t, PgStatus>));
    pending_status_.push_back(pending);
  }
  ++p_;
  return true;
}

void Reader::ApplyPgStatus() {
  if (pending_status_.empty()) return;
  absl::flat_hash_map<int64_t, uint32_t> group_by_pg_id;
  for (uint32_t i = 0; i < dump_.groups.size(); ++i) {
    if (dump_.groups[i].pg_id != kUnknown) group_by_pg_id.emplace(dump_.groups[i].pg_id, i);
  }
  for (const PendingStatus& pending : pending_status_) {
    if (auto it = group_by_pg_id.find(pending.pg_id); it != group_by_pg_id.end()) {
      dump_.groups[it->second].status = pending.status;
      dump_.groups[it->second].has_status = true;
    } else {
      dump_.unmatched_pg_status.emplace_back(pending.pg_id, pending.status);
    }
  }
}

// {comm: {key: value}} with string keys and values, flattened as "comm.key" -> value.
bool Reader::ReadCommState() {
  if (!Expect2('}', '(', "comm state is not a dict")) return false;
  while (!At('u')) {
    uint32_t comm;
    if (!ReadString(&comm)) return false;
    if (!Expect2('}', '(', "comm state value is not a dict")) return false;
    uint32_t pairs = 0;
    while (!At('u')) {
      uint32_t key, value;
      if (!ReadString(&key) || !ReadString(&value)) return false;
      Keep(memo_[comm].length + memo_[key].length + memo_[value].length + 2 * sizeof(std::string));
      if (OverBudget()) return Decline("near NormalizeLimits");
      dump_.comm_state.emplace_back(std::string(Text(comm)).append(".").append(Text(key)),
                                    std::string(Text(value)));
      ++pairs;
    }
    ++p_;
    Visit(2 * pairs);
  }
  ++p_;
  // Versions before 2.10 memoize it (a local inserted by copy).
  if (At('q') || At('r')) return MemoPut(SlotKind::kOther, 0, 0);
  return true;
}

}  // namespace direct_pickle_internal

namespace {

using direct_pickle_internal::Reader;
using direct_pickle_internal::Scratch;

// Drops scratch capacity that one unusually large input left behind.
template <typename T>
void TrimScratch(std::vector<T>& v) {
  constexpr size_t kKeepBytes = size_t{16} << 20;
  if (v.capacity() * sizeof(T) > kKeepBytes) std::vector<T>().swap(v);
}

}  // namespace

DirectReadResult ReadTorchPickleDirect(std::string_view bytes, int64_t rank,
                                       const NormalizeLimits& limits) {
  thread_local Scratch scratch;
  DirectReadResult result;
  try {
    RankDump dump;
    dump.rank = rank;
    Reader reader(bytes, limits, &dump, scratch);
    if (reader.Run()) {
      ApplyRecorderSemantics(&dump);
      result.dump = std::move(dump);
    } else {
      result.decline_reason = reader.why();
      result.decline_offset = reader.where();
    }
  } catch (const std::bad_alloc&) {
    result.dump.reset();
    result.decline_reason = "out of memory";
  }
  TrimScratch(scratch.memo);
  TrimScratch(scratch.frame_identities);
  TrimScratch(scratch.entries);
  return result;
}

}  // namespace fr