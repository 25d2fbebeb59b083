#include "fr/normalize/normalize.h"

#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/normalize/entry_keys.h"
#include "fr/normalize/intern_caches.h"
#include "fr/normalize/normalize_budget.h"
#include "fr/normalize/profiling_name.h"
#include "fr/normalize/recorder_semantics.h"

namespace fr {
namespace {

// ParseRanksString, remembering the last few long strings parsed on this thread: every dump of a
// job spells out the same world group, thousands of ranks long, and comparing that text is much
// cheaper than parsing it again for each dump.
bool ParseLongRanksStringOnce(std::string_view text, SharedRanks* ranks) {
  constexpr size_t kLongText = 512;
  std::vector<int64_t> parsed_ranks;
  if (text.size() < kLongText) {
    bool ok = ParseRanksString(text, &parsed_ranks);
    *ranks = std::move(parsed_ranks);
    return ok;
  }
  // The dumps read on this thread share the list itself, not only the work of parsing it.
  struct Parsed {
    std::string text;
    SharedRanks ranks;
    bool ok = false;
  };
  thread_local std::array<Parsed, 4> recent;
  thread_local size_t next = 0;
  for (const Parsed& parsed : recent) {
    if (parsed.text == text) {
      *ranks = parsed.ranks;
      return parsed.ok;
    }
  }
  bool ok = ParseRanksString(text, &parsed_ranks);
  *ranks = std::move(parsed_ranks);
  Parsed& slot = recent[next++ % recent.size()];
  slot.text = std::string(text);
  slot.ranks = *ranks;
  slot.ok = ok;
  return ok;
}

bool ParseInt(std::string_view text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Oddity names that carry a key from the file keep at most this many bytes of it: a long key
// repeated by memo hits must not be copied in full each time it is counted.
constexpr size_t kMaxOddityKeyBytes = 64;
// Distinct oddity names kept per dump; further kinds are counted together under kMoreOddities.
constexpr size_t kMaxOddityNames = 256;
constexpr std::string_view kMoreOddities = "more_oddity_kinds";

// `key` cut to kMaxOddityKeyBytes at a UTF-8 character boundary.
std::string_view OddityKey(std::string_view key) {
  if (key.size() <= kMaxOddityKeyBytes) return key;
  size_t end = kMaxOddityKeyBytes;
  while (end > 0 && (static_cast<unsigned char>(key[end]) & 0xc0) == 0x80) --end;
  return key.substr(0, end);
}

// Builds one RankDump from one Document. Holds the interning caches for the duration.
class Normalizer {
 public:
  Normalizer(const Document& doc, const NormalizeLimits& limits, RankDump* dump)
      : doc_(doc), dump_(*dump), budget_(limits, doc.input().size()) {
    cache_.StartDocument(doc.value_count());
  }

  NormalizeCost cost() const { return budget_.cost(); }

  absl::Status Run() {
    ValueId root = doc_.root();
    if (root == kNoValue) return absl::InvalidArgumentError("empty document");
    dump_.shape_list_offsets.push_back(0);
    dump_.dtype_list_offsets.push_back(0);
    dump_.stack_offsets.push_back(0);
    ValueKind kind = doc_.kind(root);
    if (kind == ValueKind::kList) {
      // The 2023 format: a bare list of entries, no version.
      return NormalizeEntries(root);
    }
    if (kind != ValueKind::kDict) {
      return Error(root, "top level",
                   "expected a dict (dump version >= 1.0) or a list of entries (2023 format)");
    }
    ValueId entries = kNoValue;
    ValueId pg_config = kNoValue;
    ValueId pg_status = kNoValue;
    bool has_version = false;
    std::span<const ValueId> pairs = doc_.items(root);
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      ValueId key = pairs[i];
      ValueId value = pairs[i + 1];
      if (doc_.kind(key) != ValueKind::kString) {
        Oddity("non_string_top_level_key");
        continue;
      }
      std::string_view name = doc_.string_value(key);
      budget_.VisitText(name.size());
      if (name == "version") {
        FR_RETURN_IF_ERROR(NormalizeVersion(value));
        has_version = true;
      } else if (name == "entries") {
        entries = value;
      } else if (name == "pg_config") {
        pg_config = value;
      } else if (name == "pg_status") {
        pg_status = value;
      } else if (name == "nccl_version" || name == "comm_lib_version") {
        FR_ASSIGN_OR_RETURN(dump_.comm_lib_version, StringOrError(value, name));
      } else if (name.size() > 11 && name.substr(name.size() - 11) == "_comm_state") {
        // nccl_comm_state, and the renamed copies in vendor forks (hccl_, bccl_, mccl_...).
        FR_RETURN_IF_ERROR(NormalizeCommState(value, OddityKey(name)));
      } else {
        Oddity(fmt::format("unknown_top_level_key:{}", OddityKey(name)));
      }
      if (budget_.exceeded()) return BudgetError(value, fmt::format("'{}'", OddityKey(name)));
    }
    if (!has_version) Oddity("missing_version");
    if (pg_config != kNoValue) FR_RETURN_IF_ERROR(NormalizePgConfig(pg_config));
    if (entries == kNoValue) {
      dump_.has_entries_key = false;
    } else {
      FR_RETURN_IF_ERROR(NormalizeEntries(entries));
    }
    if (pg_status != kNoValue) FR_RETURN_IF_ERROR(NormalizePgStatus(pg_status));
    return absl::OkStatus();
  }

 private:
  absl::Status Error(ValueId value, std::string_view where, std::string_view what) const {
    return absl::InvalidArgumentError(fmt::format("{} (byte {}): {}, got {}", where,
                                                  doc_.source_offset(value), what,
                                                  ValueKindName(doc_.kind(value))));
  }

  // Over a budget of NormalizeLimits at `value`.
  // Out of line and cold, as every error: the per-entry paths that check budgets stay small.
  [[gnu::cold, gnu::noinline]] absl::Status BudgetError(ValueId value,
                                                        std::string_view where) const {
    return absl::ResourceExhaustedError(
        fmt::format("{} (byte {}): {}", where, doc_.source_offset(value), budget_.Describe()));
  }

  [[gnu::cold, gnu::noinline]] absl::Status EntryBudgetError(ValueId entry, size_t index) const {
    return BudgetError(entry, fmt::format("entries[{}]", index));
  }

  // Counts an oddity by name: indexed, since a hostile file can name thousands of distinct ones.
  void Oddity(std::string_view name) {
    auto it = oddity_index_.find(absl::string_view(name.data(), name.size()));
    if (it == oddity_index_.end()) {
      if (oddity_index_.size() >= kMaxOddityNames) {
        name = kMoreOddities;
        it = oddity_index_.find(absl::string_view(name.data(), name.size()));
      }
      if (it == oddity_index_.end()) {
        it = oddity_index_.emplace(std::string(name), dump_.oddities.size()).first;
        dump_.oddities.emplace_back(std::string(name), 0);
      }
    }
    ++dump_.oddities[it->second].second;
  }

  absl::StatusOr<std::string> StringOrError(ValueId value, std::string_view key) {
    if (doc_.kind(value) != ValueKind::kString) {
      return Error(value, fmt::format("'{}'", key), "expected a string");
    }
    budget_.VisitText(doc_.string_value(value).size());
    return std::string(doc_.string_value(value));
  }

  absl::Status NormalizeVersion(ValueId value) {
    // Some tools write the version as a number; accept what reads unambiguously.
    std::string text;
    if (doc_.kind(value) == ValueKind::kString) {
      budget_.VisitText(doc_.string_value(value).size());
      text = std::string(doc_.string_value(value));
    } else if (doc_.kind(value) == ValueKind::kFloat) {
      text = fmt::format("{}", doc_.float_value(value));
    } else {
      return Error(value, "'version'", "expected a string such as \"2.10\"");
    }
    dump_.version = text;
    size_t dot = text.find('.');
    int64_t major = 0, minor = 0;
    if (!ParseInt(std::string_view(text).substr(0, dot), &major) ||
        (dot != std::string::npos && !ParseInt(std::string_view(text).substr(dot + 1), &minor))) {
      Oddity("unparseable_version");
      return absl::OkStatus();
    }
    dump_.version_major = static_cast<int>(major);
    dump_.version_minor = static_cast<int>(minor);
    return absl::OkStatus();
  }

  // Reads an int that may be written as a JSON string ("-1"), as pg_status values are.
  absl::StatusOr<int64_t> IntLike(ValueId value, std::string_view where) {
    switch (doc_.kind(value)) {
      case ValueKind::kInt:
        return doc_.int_value(value);
      case ValueKind::kBool:
        return doc_.bool_value(value) ? 1 : 0;
      case ValueKind::kString: {
        int64_t parsed;
        budget_.VisitText(doc_.string_value(value).size());
        if (ParseInt(doc_.string_value(value), &parsed)) return parsed;
        break;
      }
      default:
        break;
    }
    return Error(value, where, "expected an integer");
  }

  uint32_t GroupByName(StringId name) {
    // Indexed by StringId: every entry looks its group up, and ids are small and dense.
    if (name < group_of_name_.size() && group_of_name_[name] != kNoGroup) {
      return group_of_name_[name];
    }
    uint32_t index = static_cast<uint32_t>(dump_.groups.size());
    budget_.Keep(sizeof(ProcessGroup));
    ProcessGroup group;
    group.name = name;
    dump_.groups.push_back(std::move(group));
    if (name >= group_of_name_.size()) group_of_name_.resize(name + 1, kNoGroup);
    group_of_name_[name] = index;
    return index;
  }

  absl::Status NormalizePgConfig(ValueId config) {
    if (doc_.kind(config) != ValueKind::kDict) {
      return Error(config, "'pg_config'", "expected a dict of process groups");
    }
    std::span<const ValueId> pairs = doc_.items(config);
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      ValueId key = pairs[i];
      ValueId value = pairs[i + 1];
      // The key as text, formatted only for messages: a long key repeated by memo hits is then
      // read once (interned by value id), not copied per group.
      std::string_view key_text;
      std::string key_digits;
      int64_t pg_id = kUnknown;
      StringId key_id;
      if (doc_.kind(key) == ValueKind::kString) {
        key_id = InternValue(key);
        key_text = dump_.strings.view(key_id);
      } else if (doc_.kind(key) == ValueKind::kInt) {
        pg_id = doc_.int_value(key);
        key_digits = std::to_string(pg_id);
        key_text = key_digits;
        key_id = kNoString;
      } else {
        return Error(key, "'pg_config' key", "expected a group name or id");
      }
      auto where = [&](std::string_view suffix = "") {
        return fmt::format("pg_config['{}']{}", OddityKey(key_text), suffix);
      };
      if (!budget_.Visit(1)) return BudgetError(value, where());
      if (doc_.kind(value) == ValueKind::kList) {
        // 1.4: {pg_id: [global ranks]}; groups are then named by their id.
        uint32_t index = GroupByName(key_id != kNoString ? key_id : dump_.strings.Intern(key_text));
        FR_ASSIGN_OR_RETURN(const ParsedRanks* parsed, RankList(value, where()));
        ProcessGroup& group = dump_.groups[index];
        AppendRanks(parsed->ranks, &group);
        group.pg_id = pg_id;
        group.ranks_known = true;
        continue;
      }
      if (doc_.kind(value) != ValueKind::kDict) {
        return Error(value, where(), "expected a dict with name, desc and ranks");
      }
      // Find reads every pair of the group's dict, which memo hits may share between groups.
      if (!budget_.Visit(doc_.items(value).size())) return BudgetError(value, where());
      StringId name = key_id;
      ValueId name_value = doc_.Find(value, "name");
      if (name_value != kNoValue && doc_.kind(name_value) == ValueKind::kString) {
        name = InternValue(name_value);
      } else if (name == kNoString) {
        name = dump_.strings.Intern(key_text);
      }
      if (name == 0) {
        // Gloo (2.13, 2.14) writes one nameless group whose ranks are empty or belong to some
        // other group: a placeholder, not a group of this rank.
        Oddity("pg_config_placeholder_group");
        continue;
      }
      uint32_t index = GroupByName(name);
      if (ValueId desc = doc_.Find(value, "desc"); desc != kNoValue) {
        if (doc_.kind(desc) != ValueKind::kString) {
          return Error(desc, where("['desc']"), "expected a string");
        }
        dump_.groups[index].desc = InternValue(desc);
      }
      ValueId ranks = doc_.Find(value, "ranks");
      if (ranks == kNoValue) {
        Oddity("pg_config_without_ranks");
      } else if (doc_.kind(ranks) == ValueKind::kString || doc_.kind(ranks) == ValueKind::kList) {
        FR_ASSIGN_OR_RETURN(const ParsedRanks* parsed, RankList(ranks, where("['ranks']")));
        ProcessGroup& group = dump_.groups[index];
        if (doc_.kind(ranks) == ValueKind::kString) {
          group.ranks = parsed->ranks;
          group.ranks_known = parsed->ok;
          if (!group.ranks_known) Oddity("unparseable_pg_ranks");
        } else {
          AppendRanks(parsed->ranks, &group);
          group.ranks_known = true;
        }
      } else {
        return Error(ranks, where("['ranks']"), "expected a string such as \"[0, 1]\"");
      }
    }
    return absl::OkStatus();
  }

  // A group's ranks, from a list of ints or a string "[0, 1, 2]" (its `ok` says whether it
  // parsed), read once per value: every group that lists the same value (a pickle memoizes every
  // string, and shares a list it was given several times) then copies the result, within budget.
  struct ParsedRanks {
    SharedRanks ranks;
    bool ok = false;
  };
  // A group listed twice (1.4 ids) holds both lists, in file order.
  static void AppendRanks(const SharedRanks& ranks, ProcessGroup* group) {
    if (group->ranks.empty()) {
      group->ranks = ranks;
      return;
    }
    std::vector<int64_t> joined = group->ranks.ToVector();
    joined.insert(joined.end(), ranks.begin(), ranks.end());
    group->ranks = std::move(joined);
  }
  absl::StatusOr<const ParsedRanks*> RankList(ValueId value, const std::string& where) {
    auto [it, inserted] = parsed_rank_lists_.try_emplace(value);
    ParsedRanks& parsed = it->second;
    if (inserted) {
      if (doc_.kind(value) == ValueKind::kString) {
        std::string_view text = doc_.string_value(value);
        if (!budget_.VisitText(text.size())) return BudgetError(value, where);
        parsed.ok = ParseLongRanksStringOnce(text, &parsed.ranks);
      } else {
        std::span<const ValueId> items = doc_.items(value);
        if (!budget_.Visit(items.size())) return BudgetError(value, where);
        std::vector<int64_t> ranks;
        ranks.reserve(items.size());
        for (ValueId rank : items) {
          if (doc_.kind(rank) != ValueKind::kInt) return Error(rank, where, "expected a rank");
          ranks.push_back(doc_.int_value(rank));
        }
        parsed.ranks = std::move(ranks);
        parsed.ok = true;
      }
    }
    // Ranks are 32-bit in PyTorch (and in the report's contract): a larger one is not a rank
    // that could be shown cut to 32 bits, it is a damaged or forged file.
    for (int64_t rank : parsed.ranks) {
      if (rank < 0 || rank > std::numeric_limits<int32_t>::max()) {
        return Error(value, where,
                     fmt::format("rank {} is outside the range of ranks (0 to {})", rank,
                                 std::numeric_limits<int32_t>::max()));
      }
    }
    if (!budget_.Keep(parsed.ranks.size() * sizeof(int64_t))) return BudgetError(value, where);
    return &parsed;
  }

  absl::Status NormalizePgStatus(ValueId status) {
    if (doc_.kind(status) != ValueKind::kDict) {
      return Error(status, "'pg_status'", "expected a dict keyed by process group id");
    }
    absl::flat_hash_map<int64_t, uint32_t> group_by_pg_id;
    for (uint32_t i = 0; i < dump_.groups.size(); ++i) {
      if (dump_.groups[i].pg_id != kUnknown) group_by_pg_id.emplace(dump_.groups[i].pg_id, i);
    }
    std::span<const ValueId> pairs = doc_.items(status);
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      FR_ASSIGN_OR_RETURN(int64_t pg_id, IntLike(pairs[i], "'pg_status' key"));
      ValueId value = pairs[i + 1];
      std::string where = fmt::format("pg_status['{}']", pg_id);
      if (doc_.kind(value) != ValueKind::kDict) {
        return Error(value, where, "expected a dict of last collectives");
      }
      PgStatus parsed;
      std::span<const ValueId> fields = doc_.items(value);
      // Memo hits may share one dict between many ids.
      if (!budget_.Visit(fields.size())) return BudgetError(value, where);
      for (size_t f = 0; f + 1 < fields.size(); f += 2) {
        if (doc_.kind(fields[f]) != ValueKind::kString) continue;
        std::string_view name = doc_.string_value(fields[f]);
        int64_t* target = name == "last_enqueued_collective"    ? &parsed.last_enqueued_collective
                          : name == "last_started_collective"   ? &parsed.last_started_collective
                          : name == "last_completed_collective" ? &parsed.last_completed_collective
                                                                : nullptr;
        if (target == nullptr) {
          Oddity(fmt::format("unknown_pg_status_key:{}", OddityKey(name)));
          continue;
        }
        FR_ASSIGN_OR_RETURN(*target, IntLike(fields[f + 1], fmt::format("{}['{}']", where, name)));
      }
      if (auto it = group_by_pg_id.find(pg_id); it != group_by_pg_id.end()) {
        dump_.groups[it->second].status = parsed;
        dump_.groups[it->second].has_status = true;
      } else {
        dump_.unmatched_pg_status.emplace_back(pg_id, parsed);
        budget_.Keep(sizeof(dump_.unmatched_pg_status[0]));
      }
      if (budget_.exceeded()) return BudgetError(value, where);
    }
    return absl::OkStatus();
  }

  // Flattens {comm: {key: value}} into "comm.key" -> value pairs. The pairs are kept as text, so
  // a dict shared by many comms (memo hits) is copied for each of them, within the budget.
  absl::Status NormalizeCommState(ValueId state, std::string_view name) {
    if (doc_.kind(state) != ValueKind::kDict) {
      Oddity("comm_state_not_a_dict");
      return absl::OkStatus();
    }
    std::span<const ValueId> comms = doc_.items(state);
    for (size_t i = 0; i + 1 < comms.size(); i += 2) {
      ValueId values = comms[i + 1];
      if (doc_.kind(values) != ValueKind::kDict) {
        Oddity("comm_state_not_a_dict");
        continue;
      }
      std::span<const ValueId> pairs = doc_.items(values);
      if (!budget_.Visit(pairs.size())) return BudgetError(values, fmt::format("'{}'", name));
      uint64_t bytes = 0;
      for (size_t p = 0; p + 1 < pairs.size(); p += 2) {
        bytes += RenderedSize(comms[i]) + RenderedSize(pairs[p]) + RenderedSize(pairs[p + 1]) +
                 2 * sizeof(std::string);
      }
      if (!budget_.Keep(bytes)) return BudgetError(values, fmt::format("'{}'", name));
      std::string comm = RenderScalar(comms[i]);
      for (size_t p = 0; p + 1 < pairs.size(); p += 2) {
        dump_.comm_state.emplace_back(fmt::format("{}.{}", comm, RenderScalar(pairs[p])),
                                      RenderScalar(pairs[p + 1]));
      }
    }
    return absl::OkStatus();
  }

  // An upper bound of RenderScalar(value).size(), without rendering it.
  size_t RenderedSize(ValueId value) const {
    switch (doc_.kind(value)) {
      case ValueKind::kString:
        return doc_.string_value(value).size();
      case ValueKind::kInt:
      case ValueKind::kFloat:
        return 32;
      default:
        return 8;
    }
  }

  std::string RenderScalar(ValueId value) const {
    switch (doc_.kind(value)) {
      case ValueKind::kString:
        return std::string(doc_.string_value(value));
      case ValueKind::kInt:
        return std::to_string(doc_.int_value(value));
      case ValueKind::kFloat:
        return fmt::format("{}", doc_.float_value(value));
      case ValueKind::kBool:
        return doc_.bool_value(value) ? "True" : "False";
      case ValueKind::kNone:
        return "None";
      default:
        return std::string(ValueKindName(doc_.kind(value)));
    }
  }

  absl::Status NormalizeEntries(ValueId entries) {
    if (doc_.kind(entries) != ValueKind::kList) {
      return Error(entries, "'entries'", "expected a list of entries");
    }
    std::span<const ValueId> items = doc_.items(entries);
    // Storage for every entry is committed (and pre-faulted) at once, so the list is checked
    // first: a file of a million Nones or memo hits must not make it commit gigabytes.
    for (size_t i = 0; i < items.size(); ++i) {
      if (doc_.kind(items[i]) != ValueKind::kDict) [[unlikely]] {
        return Error(items[i], fmt::format("entries[{}]", i), "expected a dict");
      }
    }
    if (!budget_.Visit(items.size()) || !budget_.Keep(items.size() * sizeof(Entry))) {
      return BudgetError(entries, fmt::format("'entries' ({} entries)", items.size()));
    }
    dump_.entries.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      FR_RETURN_IF_ERROR(NormalizeEntry(items[i], i));
      if (budget_.exceeded()) [[unlikely]] {
        return EntryBudgetError(items[i], i);
      }
    }
    return absl::OkStatus();
  }

  // The values an entry names that are resolved once all of its keys were read.
  struct EntryRefs {
    ValueId group_name = kNoValue;
    ValueId group_desc = kNoValue;
    ValueId profiling_name = kNoValue;
  };

  absl::Status NormalizeEntry(ValueId value, size_t index) {
    if (!doc_.IsUnshared(value, ValueKind::kDict)) [[unlikely]] {
      if (doc_.kind(value) != ValueKind::kDict) {
        return Error(value, fmt::format("entries[{}]", index), "expected a dict");
      }
      // One dict named by several items (memo hits; no producer writes that): read once, and
      // copied, with what it holds (reached along as many paths, though not marked shared).
      auto [known, first] = shared_entries_.try_emplace(value, dump_.entries.size());
      if (!first) {
        const Entry copy = dump_.entries[known->second];
        dump_.entries.push_back(copy);
        ++dump_.groups[copy.group].entry_count;
        return absl::OkStatus();
      }
    }
    std::span<const ValueId> pairs = doc_.items(value);
    Entry& entry = dump_.entries.emplace_back();
    EntryRefs refs;
    if (!ReadEntryByLayout(pairs, &entry, &refs)) {
      // An entry laid out differently, or one that may hold an error: the general path reads it
      // key by key and names what is wrong.
      entry = Entry();
      refs = EntryRefs();
      FR_RETURN_IF_ERROR(ReadEntryByKeys(value, pairs, index, &entry, &refs));
      LearnLayout(pairs);
    }
    AssignGroup(&entry, refs.group_name, refs.group_desc);
    ParseProfilingName(refs.profiling_name, &entry);
    return absl::OkStatus();
  }

  // The entry key `key` of entries[index] holds a value of the wrong type.
  absl::Status FieldError(ValueId field, size_t index, ValueId key,
                          std::string_view expected) const {
    return Error(field, FieldWhere(index, key), expected);
  }
  std::string FieldWhere(size_t index, ValueId key) const {
    return fmt::format("entries[{}]['{}']", index, doc_.string_value(key));
  }

  // Readers of one field: true when the value has the expected type (and was stored). Kept free
  // of Status on the success path, which runs for every key of every entry.
  bool ReadInt(ValueId field, int64_t* target) const {
    if (doc_.kind(field) != ValueKind::kInt) return false;
    *target = doc_.int_value(field);
    return true;
  }

  // Dumps before 1.1 stored microseconds; the model keeps nanoseconds. A count of microseconds
  // too large for a nanosecond int64 (centuries past 2262) is no clock reading: it is refused
  // as a wrong value rather than wrapped into a plausible-looking one.
  bool ReadMicroseconds(ValueId field, int64_t* target_ns) const {
    int64_t microseconds = 0;
    if (!ReadInt(field, &microseconds)) return false;
    constexpr int64_t kNanosPerMicro = 1000;
    if (microseconds > std::numeric_limits<int64_t>::max() / kNanosPerMicro ||
        microseconds < std::numeric_limits<int64_t>::min() / kNanosPerMicro) {
      return false;
    }
    *target_ns = microseconds * kNanosPerMicro;
    return true;
  }

  // None in pickles and 0 in JSON both mean "not yet".
  bool ReadTime(ValueId field, int64_t* target) const {
    if (doc_.kind(field) == ValueKind::kNone) return true;
    if (!ReadInt(field, target)) return false;
    if (*target == 0) *target = kUnknown;
    return true;
  }

  bool ReadBool(ValueId field, bool* target) const {
    switch (doc_.kind(field)) {
      case ValueKind::kBool:
        *target = doc_.bool_value(field);
        return true;
      case ValueKind::kInt:
        *target = doc_.int_value(field) != 0;
        return true;
      default:
        return false;
    }
  }

  // thread_id is a decimal string, but some writers store an int.
  bool ReadString(ValueId field, StringId* target) {
    switch (doc_.kind(field)) {
      case ValueKind::kString:
        *target = InternValue(field);
        return true;
      case ValueKind::kInt:
        *target = dump_.strings.Intern(std::to_string(doc_.int_value(field)));
        return true;
      default:
        return false;
    }
  }

  bool ReadDuration(ValueId field, double* target) const {
    switch (doc_.kind(field)) {
      case ValueKind::kFloat:
        *target = doc_.float_value(field);
        return true;
      case ValueKind::kInt:
        *target = static_cast<double>(doc_.int_value(field));
        return true;
      default:
        return doc_.kind(field) == ValueKind::kNone;
    }
  }

  // (name, desc), as a tuple in pickles and a list in JSON.
  bool ReadProcessGroup(ValueId field, EntryRefs* refs) const {
    ValueKind kind = doc_.kind(field);
    if ((kind != ValueKind::kTuple && kind != ValueKind::kList) || doc_.size(field) != 2) {
      return false;
    }
    std::span<const ValueId> parts = doc_.items(field);
    if (doc_.kind(parts[0]) != ValueKind::kString || doc_.kind(parts[1]) != ValueKind::kString) {
      return false;
    }
    refs->group_name = parts[0];
    refs->group_desc = parts[1];
    return true;
  }

  bool ReadState(ValueId field, EntryState* state) {
    if (doc_.kind(field) != ValueKind::kString) return false;
    *state = ParseState(InternValue(field));
    return true;
  }

  // The general reader: every key is classified and checked, unknown keys are counted, and the
  // first wrong value is an error naming the entry, the key and the byte offset.
  absl::Status ReadEntryByKeys(ValueId value, std::span<const ValueId> pairs, size_t index,
                               Entry* entry, EntryRefs* refs) {
    // Memo hits may share one large dict between entries (the layout path reads at most 255
    // keys, this one all of them). When the layout path already went over the budget, the field
    // that did so names it below.
    bool was_over = budget_.exceeded();
    if (!budget_.Visit(pairs.size()) && !was_over) [[unlikely]] {
      return EntryBudgetError(value, index);
    }
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      ValueId key = pairs[i];
      ValueId field = pairs[i + 1];
      if (doc_.kind(key) != ValueKind::kString) {
        Oddity("non_string_entry_key");
        continue;
      }
      bool ok = true;
      std::string_view expected = "expected an int";
      const EntryField kind = FieldOfKey(key);
      switch (kind) {
        case EntryField::kFrames: {
          FR_ASSIGN_OR_RETURN(entry->stack, InternStack(field, index));
          break;
        }
        case EntryField::kRecordId:
          ok = ReadInt(field, &entry->record_id);
          break;
        case EntryField::kPgId:
          ok = ReadInt(field, &entry->pg_id);
          break;
        case EntryField::kProcessGroup:
          ok = ReadProcessGroup(field, refs);
          expected = "expected (name, desc)";
          break;
        case EntryField::kThreadName:
          ok = ReadString(field, &entry->thread_name);
          expected = "expected a string";
          break;
        case EntryField::kThreadId:
          ok = ReadString(field, &entry->thread_id);
          expected = "expected a string";
          break;
        case EntryField::kCollectiveSeqId:
        case EntryField::kSeqId:
          ok = ReadInt(field, &entry->collective_seq_id);
          break;
        case EntryField::kP2pSeqId:
          ok = ReadInt(field, &entry->p2p_seq_id);
          break;
        case EntryField::kOpId:
          ok = ReadInt(field, &entry->op_id);
          break;
        case EntryField::kProfilingName:
          ok = doc_.kind(field) == ValueKind::kString;
          expected = "expected a string";
          refs->profiling_name = field;
          break;
        case EntryField::kTimeCreatedNs:
          ok = ReadInt(field, &entry->time_created_ns);
          break;
        case EntryField::kTimeCreatedUs:
          ok = ReadMicroseconds(field, &entry->time_created_ns);
          expected = "expected an int of microseconds that fits a nanosecond clock";
          break;
        case EntryField::kDurationMs:
          ok = ReadDuration(field, &entry->duration_ms);
          expected = "expected a float";
          break;
        case EntryField::kInputSizes:
        case EntryField::kOutputSizes: {
          ShapeListId id = InternShapes(field);
          if (id == kInvalidList) return ShapesError(field, FieldWhere(index, key));
          (kind == EntryField::kInputSizes ? entry->input_sizes : entry->output_sizes) = id;
          break;
        }
        case EntryField::kInputDtypes:
        case EntryField::kOutputDtypes: {
          DtypeListId id = InternDtypes(field);
          if (id == kInvalidList) return DtypesError(field, FieldWhere(index, key));
          (kind == EntryField::kInputDtypes ? entry->input_dtypes : entry->output_dtypes) = id;
          break;
        }
        case EntryField::kState:
          ok = ReadState(field, &entry->state);
          expected = "expected a string";
          break;
        case EntryField::kTimeDiscoveredStartedNs:
          ok = ReadTime(field, &entry->time_discovered_started_ns);
          break;
        case EntryField::kTimeDiscoveredCompletedNs:
          ok = ReadTime(field, &entry->time_discovered_completed_ns);
          break;
        case EntryField::kRetired:
          ok = ReadBool(field, &entry->retired);
          expected = "expected a bool";
          break;
        case EntryField::kTimeoutMs:
          ok = ReadInt(field, &entry->timeout_ms);
          break;
        case EntryField::kIsP2p:
          ok = ReadBool(field, &entry->is_p2p);
          expected = "expected a bool";
          break;
        case EntryField::kUnknown:
        case EntryField::kCount:  // never classified
          Oddity(fmt::format("unknown_entry_key:{}", OddityKey(doc_.string_value(key))));
          break;
      }
      if (!ok) return FieldError(field, index, key, expected);
    }
    return absl::OkStatus();
  }

  // Where each field sits in an entry dict. One producer writes every entry with the same keys in
  // the same order, and pickles memoize key strings, so following entries usually list the very
  // same key values as the one a layout was learned from: their fields are then read straight
  // from their positions, without classifying keys (most of the cost of ReadEntryByKeys).
  static constexpr size_t kFieldCount = static_cast<size_t>(EntryField::kCount);
  static constexpr uint8_t kAbsent = 0xff;
  struct EntryLayout {
    std::vector<ValueId> keys;  // the key of each pair, as value ids of this document
    std::array<uint8_t, kFieldCount> position;  // pair index of each field, or kAbsent
  };
  // JSON documents do not share key values between entries, so their layouts never match; after
  // this many attempts the normalizer stops learning them.
  static constexpr int kMaxLayoutsLearned = 16;

  // Learns the layout of an entry just read by ReadEntryByKeys, when every key is known and
  // names a field once (entries with unknown, repeated or alias keys always take the general
  // path, which counts and orders them).
  void LearnLayout(std::span<const ValueId> pairs) {
    layout_.keys.clear();
    if (layouts_learned_ >= kMaxLayoutsLearned) return;
    ++layouts_learned_;
    size_t count = pairs.size() / 2;
    if (count >= kAbsent || pairs.size() % 2 != 0) return;
    std::array<uint8_t, kFieldCount> position;
    position.fill(kAbsent);
    for (size_t i = 0; i < count; ++i) {
      ValueId key = pairs[2 * i];
      if (doc_.kind(key) != ValueKind::kString) return;
      size_t field = static_cast<size_t>(FieldOfKey(key));
      if (field == static_cast<size_t>(EntryField::kUnknown) || position[field] != kAbsent) return;
      position[field] = static_cast<uint8_t>(i);
    }
    auto present = [&](EntryField field) {
      return position[static_cast<size_t>(field)] != kAbsent;
    };
    if ((present(EntryField::kSeqId) && present(EntryField::kCollectiveSeqId)) ||
        (present(EntryField::kTimeCreatedUs) && present(EntryField::kTimeCreatedNs))) {
      return;
    }
    layout_.position = position;
    for (size_t i = 0; i < count; ++i) layout_.keys.push_back(pairs[2 * i]);
  }

  // Reads an entry whose keys are exactly the learned layout's. False, with nothing reported,
  // when they are not or when any value is not of the common type: ReadEntryByKeys then reads the
  // entry again and names what is wrong.
  bool ReadEntryByLayout(std::span<const ValueId> pairs, Entry* entry, EntryRefs* refs) {
    size_t count = layout_.keys.size();
    if (count == 0 || pairs.size() != 2 * count) return false;
    const ValueId* data = pairs.data();
    const ValueId* keys = layout_.keys.data();
    for (size_t i = 0; i < count; ++i) {
      if (data[2 * i] != keys[i]) return false;
    }
    auto at = [&](EntryField field) {
      uint8_t position = layout_.position[static_cast<size_t>(field)];
      return position == kAbsent ? kNoValue : data[2 * position + 1];
    };
    auto int_or_absent = [&](EntryField field, int64_t* target) {
      ValueId value = at(field);
      return value == kNoValue || ReadInt(value, target);
    };
    if (!int_or_absent(EntryField::kRecordId, &entry->record_id) ||
        !int_or_absent(EntryField::kPgId, &entry->pg_id) ||
        !int_or_absent(EntryField::kCollectiveSeqId, &entry->collective_seq_id) ||
        !int_or_absent(EntryField::kSeqId, &entry->collective_seq_id) ||
        !int_or_absent(EntryField::kP2pSeqId, &entry->p2p_seq_id) ||
        !int_or_absent(EntryField::kOpId, &entry->op_id) ||
        !int_or_absent(EntryField::kTimeCreatedNs, &entry->time_created_ns) ||
        !int_or_absent(EntryField::kTimeoutMs, &entry->timeout_ms)) {
      return false;
    }
    if (ValueId v = at(EntryField::kTimeCreatedUs); v != kNoValue) {
      if (!ReadMicroseconds(v, &entry->time_created_ns)) return false;
    }
    if (ValueId v = at(EntryField::kProcessGroup); v != kNoValue && !ReadProcessGroup(v, refs)) {
      return false;
    }
    if (ValueId v = at(EntryField::kProfilingName); v != kNoValue) {
      if (doc_.kind(v) != ValueKind::kString) return false;
      refs->profiling_name = v;
    }
    if (ValueId v = at(EntryField::kThreadName);
        v != kNoValue && !ReadString(v, &entry->thread_name))
      return false;
    if (ValueId v = at(EntryField::kThreadId); v != kNoValue && !ReadString(v, &entry->thread_id))
      return false;
    if (ValueId v = at(EntryField::kState); v != kNoValue && !ReadState(v, &entry->state)) {
      return false;
    }
    if (ValueId v = at(EntryField::kDurationMs);
        v != kNoValue && !ReadDuration(v, &entry->duration_ms))
      return false;
    if (ValueId v = at(EntryField::kTimeDiscoveredStartedNs);
        v != kNoValue && !ReadTime(v, &entry->time_discovered_started_ns)) {
      return false;
    }
    if (ValueId v = at(EntryField::kTimeDiscoveredCompletedNs);
        v != kNoValue && !ReadTime(v, &entry->time_discovered_completed_ns)) {
      return false;
    }
    if (ValueId v = at(EntryField::kRetired); v != kNoValue && !ReadBool(v, &entry->retired)) {
      return false;
    }
    if (ValueId v = at(EntryField::kIsP2p); v != kNoValue && !ReadBool(v, &entry->is_p2p)) {
      return false;
    }
    auto shapes = [&](EntryField field, ShapeListId* target) {
      ValueId value = at(field);
      if (value == kNoValue) return true;
      *target = InternShapes(value);
      return *target != kInvalidList;
    };
    auto dtypes = [&](EntryField field, DtypeListId* target) {
      ValueId value = at(field);
      if (value == kNoValue) return true;
      *target = InternDtypes(value);
      return *target != kInvalidList;
    };
    if (!shapes(EntryField::kInputSizes, &entry->input_sizes) ||
        !shapes(EntryField::kOutputSizes, &entry->output_sizes) ||
        !dtypes(EntryField::kInputDtypes, &entry->input_dtypes) ||
        !dtypes(EntryField::kOutputDtypes, &entry->output_dtypes)) {
      return false;
    }
    if (ValueId v = at(EntryField::kFrames); v != kNoValue) {
      // Only stacks seen before: a new one is resolved frame by frame on the general path.
      entry->stack = FindStack(v);
      if (entry->stack == kNoStack) return false;
    }
    return true;
  }

  // States are three strings; map each interned one once.
  EntryState ParseState(StringId state) {
    if (state < state_of_string_.size() && state_of_string_[state] != kStateNotParsed) {
      return static_cast<EntryState>(state_of_string_[state]);
    }
    std::string_view text = dump_.strings.view(state);
    EntryState parsed = text == "completed"   ? EntryState::kCompleted
                        : text == "started"   ? EntryState::kStarted
                        : text == "scheduled" ? EntryState::kScheduled
                                              : EntryState::kUnknown;
    if (state >= state_of_string_.size()) state_of_string_.resize(state + 1, kStateNotParsed);
    state_of_string_[state] = static_cast<uint8_t>(parsed);
    return parsed;
  }
  static constexpr uint8_t kStateNotParsed = 0xff;
  std::vector<uint8_t> state_of_string_;

  void AssignGroup(Entry* entry, ValueId name, ValueId desc) {
    // Before 2.0 entries carry only pg_id; 1.4's pg_config names groups by that id.
    StringId name_id = name != kNoValue ? InternValue(name)
                                        : dump_.strings.Intern(entry->pg_id == kUnknown
                                                                   ? std::string("default")
                                                                   : std::to_string(entry->pg_id));
    uint32_t index = GroupByName(name_id);
    ProcessGroup& group = dump_.groups[index];
    if (desc != kNoValue && group.desc == 0) group.desc = InternValue(desc);
    if (entry->pg_id != kUnknown) {
      if (group.pg_id == kUnknown) {
        group.pg_id = entry->pg_id;
      } else if (group.pg_id != entry->pg_id) {
        Oddity("group_with_several_pg_ids");
      }
    }
    if (!group.ranks_known && name != kNoValue && dump_.version_major >= 2) {
      Oddity("entry_group_not_in_pg_config");
    }
    entry->group = index;
    ++group.entry_count;
  }

  // What a profiling_name says, parsed once per distinct name.
  struct ParsedName {
    StringId backend = 0;
    StringId op_name = 0;
    OpKind op = OpKind::kUnknown;
    int64_t peer_local = kUnknown;  // group-local peer of a send/recv
  };

  const ParsedName& ParseName(StringId name) {
    if (name < name_parsed_.size() && name_parsed_[name]) return parsed_names_[name];
    // Views into the table stay valid while it grows (its blocks never move).
    ProfilingNameParts parts = SplitProfilingName(dump_.strings.view(name));
    ParsedName parsed;
    parsed.backend = dump_.strings.Intern(parts.backend);
    parsed.op_name = dump_.strings.Intern(parts.op);
    parsed.op = parts.kind;
    parsed.peer_local = parts.peer_local;
    if (name >= parsed_names_.size()) {
      parsed_names_.resize(name + 1);
      name_parsed_.resize(name + 1, false);
    }
    name_parsed_[name] = true;
    parsed_names_[name] = parsed;
    return parsed_names_[name];
  }

  // "nccl:send 0->1" -> backend "nccl", op "send", peer = the group's rank 1 as a global rank.
  void ParseProfilingName(ValueId text, Entry* entry) {
    if (text == kNoValue) {
      Oddity("entry_without_profiling_name");
      return;
    }
    entry->profiling_name = InternValue(text);
    const ParsedName& parsed = ParseName(entry->profiling_name);
    entry->backend = parsed.backend;
    entry->op_name = parsed.op_name;
    entry->op = parsed.op;
    if (!IsPointToPoint(parsed.op)) return;
    if (parsed.peer_local == kUnknown) {
      Oddity("p2p_without_peer");
      return;
    }
    const ProcessGroup& group = dump_.groups[entry->group];
    if (group.ranks_known && parsed.peer_local < static_cast<int64_t>(group.ranks.size())) {
      entry->peer_rank = group.ranks[parsed.peer_local];
    } else if (!group.ranks_known) {
      Oddity("p2p_peer_in_group_of_unknown_ranks");
    } else {
      Oddity("p2p_peer_outside_group");
    }
  }

  // Returned by InternShapes and InternDtypes for a value of the wrong type (never a real id).
  static constexpr uint32_t kInvalidList = std::numeric_limits<uint32_t>::max();

  // The id of a list of shapes ([[8, 1024], []]), or kInvalidList when `shapes` is not one or the
  // budget ran out (ShapesError then says which and where).
  ShapeListId InternShapes(ValueId shapes) {
    if (doc_.IsUnshared(shapes, ValueKind::kList)) [[likely]] {
      return InternShapeContent(shapes);
    }
    if (doc_.kind(shapes) != ValueKind::kList) return kInvalidList;
    return InternShared(shapes, shared_shapes_, &Normalizer::InternShapeContent);
  }

  // A list that memo hits put in several places (shared shapes, dtypes or frames) is read once per
  // document, by `intern`, and then found by its value id.
  template <typename Intern>
  [[gnu::noinline]] uint32_t InternShared(ValueId list,
                                          absl::flat_hash_map<ValueId, uint32_t>& known,
                                          Intern intern) {
    if (auto it = known.find(list); it != known.end()) return it->second;
    uint32_t id = (this->*intern)(list);
    if (id != kInvalidList) known.emplace(list, id);
    return id;
  }

  ShapeListId InternShapeContent(ValueId shapes) {
    std::span<const ValueId> items = doc_.items(shapes);
    uint64_t sample = SampleShapes(items);
    RecentShapes& recent = recent_shapes_[(sample >> 32) % recent_shapes_.size()];
    if (recent.sample == sample && recent.id != kInvalidList) {
      // The compare reads up to the stored list's length, which shared shapes can make large.
      if (!budget_.Visit(recent.length)) [[unlikely]] {
        return kInvalidList;
      }
      if (SameShapes(items, recent.id)) return recent.id;
    }
    // Encoded as [n_shapes, rank_0, dims_0..., rank_1, dims_1...], written in place (a first pass
    // over the shapes sizes the key) rather than appended value by value.
    size_t length = 1 + items.size();
    if (!budget_.Visit(length)) [[unlikely]] {
      return kInvalidList;
    }
    for (ValueId shape : items) {
      if (doc_.kind(shape) != ValueKind::kList) return kInvalidList;
      length += doc_.items(shape).size();
    }
    // Shapes shared by memo hits are encoded in full at each use: checked before any is written.
    if (!budget_.Visit(length - 1 - items.size())) [[unlikely]] {
      return kInvalidList;
    }
    if (scratch_ints_.size() < length) scratch_ints_.resize(2 * length);
    int64_t* out = scratch_ints_.data();
    *out++ = static_cast<int64_t>(items.size());
    for (ValueId shape : items) {
      std::span<const ValueId> dims = doc_.items(shape);
      *out++ = static_cast<int64_t>(dims.size());
      for (ValueId dim : dims) {
        if (doc_.kind(dim) != ValueKind::kInt) return kInvalidList;
        *out++ = doc_.int_value(dim);
      }
    }
    absl::string_view key(reinterpret_cast<const char*>(scratch_ints_.data()),
                          length * sizeof(int64_t));
    uint64_t hash = ByteKeyInterner::Hash(key);
    ShapeListId id = shape_lists_.Find(key, hash);
    if (id == ByteKeyInterner::kMissing) {
      if (!budget_.Keep((length + 1) * sizeof(int64_t))) [[unlikely]] {
        return kInvalidList;
      }
      id = static_cast<ShapeListId>(dump_.shape_list_offsets.size() - 1);
      dump_.shape_dims.insert(dump_.shape_dims.end(), scratch_ints_.begin(),
                              scratch_ints_.begin() + static_cast<ptrdiff_t>(length));
      dump_.shape_list_offsets.push_back(static_cast<uint32_t>(dump_.shape_dims.size()));
      shape_lists_.Insert(key, hash, id);
    }
    recent = RecentShapes{sample, id, static_cast<uint32_t>(length)};
    return id;
  }

  // A few values of a shape list (how many shapes, the first shape's rank and its first and last
  // dims), mixed: enough to tell apart the handful of shapes a dump repeats, so that a recent one
  // is found by one probe and a compare against its stored encoding, without building and
  // hashing the whole key. Values of the wrong type only make the sample miss.
  uint64_t SampleShapes(std::span<const ValueId> items) const {
    uint64_t sample = items.size() * 0x9e3779b97f4a7c15ULL;
    if (!items.empty() && doc_.kind(items[0]) == ValueKind::kList) {
      std::span<const ValueId> dims = doc_.items(items[0]);
      sample ^= (dims.size() + 1) * 0xc2b2ae3d27d4eb4fULL;
      if (!dims.empty() && doc_.kind(dims.front()) == ValueKind::kInt &&
          doc_.kind(dims.back()) == ValueKind::kInt) {
        sample ^= static_cast<uint64_t>(doc_.int_value(dims.front())) * 0x165667b19e3779f9ULL;
        sample ^= static_cast<uint64_t>(doc_.int_value(dims.back())) * 0xd6e8feb86659fd93ULL;
      }
    }
    return sample ^ (sample >> 29);
  }

  // Whether `items` is exactly shape list `id`, compared against its stored encoding.
  bool SameShapes(std::span<const ValueId> items, ShapeListId id) const {
    std::span<const int64_t> stored = dump_.ShapeList(id);
    size_t at = 0;
    if (stored.empty() || stored[at++] != static_cast<int64_t>(items.size())) return false;
    for (ValueId shape : items) {
      if (doc_.kind(shape) != ValueKind::kList) return false;
      std::span<const ValueId> dims = doc_.items(shape);
      if (at + 1 + dims.size() > stored.size()) return false;
      if (stored[at++] != static_cast<int64_t>(dims.size())) return false;
      for (ValueId dim : dims) {
        if (doc_.kind(dim) != ValueKind::kInt || stored[at++] != doc_.int_value(dim)) return false;
      }
    }
    return at == stored.size();
  }

  // Why InternShapes refused `shapes`.
  absl::Status ShapesError(ValueId shapes, const std::string& where) const {
    if (budget_.exceeded()) return BudgetError(shapes, where);
    if (doc_.kind(shapes) != ValueKind::kList) {
      return Error(shapes, where, "expected a list of shapes");
    }
    for (ValueId shape : doc_.items(shapes)) {
      if (doc_.kind(shape) != ValueKind::kList) {
        return Error(shape, where, "expected a shape (list of ints)");
      }
      for (ValueId dim : doc_.items(shape)) {
        if (doc_.kind(dim) != ValueKind::kInt) return Error(dim, where, "expected an int size");
      }
    }
    return absl::InternalError(fmt::format("{}: shapes refused without a reason", where));
  }

  // The id of a list of dtype names (["Float"]), or kInvalidList when `dtypes` is not one.
  DtypeListId InternDtypes(ValueId dtypes) {
    if (doc_.IsUnshared(dtypes, ValueKind::kList)) [[likely]] {
      return InternDtypeContent(dtypes);
    }
    if (doc_.kind(dtypes) != ValueKind::kList) return kInvalidList;
    return InternShared(dtypes, shared_dtypes_, &Normalizer::InternDtypeContent);
  }

  DtypeListId InternDtypeContent(ValueId dtypes) {
    std::span<const ValueId> items = doc_.items(dtypes);
    if (uint32_t cached = dtypes_by_items_.Find(items); cached != kInvalidList) return cached;
    if (!budget_.Visit(items.size())) [[unlikely]] {
      return kInvalidList;
    }
    scratch_ids_.clear();
    for (ValueId dtype : items) {
      if (doc_.kind(dtype) != ValueKind::kString) return kInvalidList;
      scratch_ids_.push_back(InternValue(dtype));
    }
    absl::string_view key(reinterpret_cast<const char*>(scratch_ids_.data()),
                          scratch_ids_.size() * sizeof(uint32_t));
    uint64_t hash = ByteKeyInterner::Hash(key);
    DtypeListId id = dtype_lists_.Find(key, hash);
    if (id == ByteKeyInterner::kMissing) {
      if (!budget_.Keep((scratch_ids_.size() + 1) * sizeof(uint32_t))) [[unlikely]] {
        return kInvalidList;
      }
      id = static_cast<DtypeListId>(dump_.dtype_list_offsets.size() - 1);
      dump_.dtype_names.insert(dump_.dtype_names.end(), scratch_ids_.begin(), scratch_ids_.end());
      dump_.dtype_list_offsets.push_back(static_cast<uint32_t>(dump_.dtype_names.size()));
      dtype_lists_.Insert(key, hash, id);
    }
    dtypes_by_items_.Insert(items, id);
    return id;
  }

  // Why InternDtypes refused `dtypes`.
  absl::Status DtypesError(ValueId dtypes, const std::string& where) const {
    if (budget_.exceeded()) return BudgetError(dtypes, where);
    if (doc_.kind(dtypes) != ValueKind::kList) {
      return Error(dtypes, where, "expected a list of dtype names");
    }
    for (ValueId dtype : doc_.items(dtypes)) {
      if (doc_.kind(dtype) != ValueKind::kString)
        return Error(dtype, where, "expected a dtype name");
    }
    return absl::InternalError(fmt::format("{}: dtypes refused without a reason", where));
  }

  // The stack of a frames list already seen in this document, or kNoStack. Entries with the same
  // stack list the same shared frame dicts: one lookup by their ids.
  StackId FindStack(ValueId frames) {
    if (!doc_.IsUnshared(frames, ValueKind::kList)) [[unlikely]] {
      if (doc_.kind(frames) != ValueKind::kList) return kNoStack;
      auto it = shared_stacks_.find(frames);
      return it == shared_stacks_.end() ? kNoStack : it->second;
    }
    std::span<const ValueId> frame_values = doc_.items(frames);
    if (uint32_t cached = stacks_by_items_.Find(frame_values); cached != kNoStack) return cached;
    // Hashing reads every frame id (cached lists hold at most 64).
    if (!budget_.Visit(frame_values.size())) [[unlikely]] {
      return kNoStack;
    }
    absl::string_view value_key(reinterpret_cast<const char*>(frame_values.data()),
                                frame_values.size() * sizeof(ValueId));
    uint32_t found = stack_by_values_.Find(value_key, ByteKeyInterner::Hash(value_key));
    if (found == ByteKeyInterner::kMissing) return kNoStack;
    stacks_by_items_.Insert(frame_values, found);
    return found;
  }

  absl::StatusOr<StackId> InternStack(ValueId frames, size_t index) {
    if (doc_.kind(frames) != ValueKind::kList) {
      return Error(frames, fmt::format("entries[{}]['frames']", index), "expected a list");
    }
    if (doc_.shared(frames)) [[unlikely]] {
      if (auto it = shared_stacks_.find(frames); it != shared_stacks_.end()) return it->second;
      FR_ASSIGN_OR_RETURN(StackId stack, InternStackContent(frames, index));
      shared_stacks_.emplace(frames, stack);
      return stack;
    }
    return InternStackContent(frames, index);
  }

  absl::StatusOr<StackId> InternStackContent(ValueId frames, size_t index) {
    std::span<const ValueId> frame_values = doc_.items(frames);
    if (!budget_.Visit(frame_values.size())) [[unlikely]] {
      return BudgetError(frames, fmt::format("entries[{}]['frames']", index));
    }
    absl::string_view value_key(reinterpret_cast<const char*>(frame_values.data()),
                                frame_values.size() * sizeof(ValueId));
    dump_.has_stacks = true;
    uint64_t value_hash = ByteKeyInterner::Hash(value_key);
    if (uint32_t found = stack_by_values_.Find(value_key, value_hash);
        found != ByteKeyInterner::kMissing) {
      return found;
    }
    FR_ASSIGN_OR_RETURN(StackId stack, InternStackByFrames(frames, frame_values, index));
    stack_by_values_.Insert(value_key, value_hash, stack);
    return stack;
  }

  absl::StatusOr<StackId> InternStackByFrames(ValueId frames_list,
                                              std::span<const ValueId> frame_values, size_t index) {
    scratch_ids_.clear();
    for (ValueId frame : frame_values) {
      // PyTorch shares one dict per distinct frame between entries: resolve each once.
      auto cached = frame_by_value_.find(frame);
      if (cached != frame_by_value_.end()) {
        scratch_ids_.push_back(cached->second);
        continue;
      }
      FR_ASSIGN_OR_RETURN(uint32_t id, InternFrame(frame, index));
      frame_by_value_.emplace(frame, id);
      scratch_ids_.push_back(id);
    }
    absl::string_view key(reinterpret_cast<const char*>(scratch_ids_.data()),
                          scratch_ids_.size() * sizeof(uint32_t));
    uint64_t hash = ByteKeyInterner::Hash(key);
    if (uint32_t found = stacks_.Find(key, hash); found != ByteKeyInterner::kMissing) {
      return found;
    }
    if (!budget_.Keep((scratch_ids_.size() + 1) * sizeof(uint32_t))) [[unlikely]] {
      return BudgetError(frames_list, fmt::format("entries[{}]['frames']", index));
    }
    StackId id = static_cast<StackId>(dump_.stack_offsets.size() - 1);
    dump_.stack_frames.insert(dump_.stack_frames.end(), scratch_ids_.begin(), scratch_ids_.end());
    dump_.stack_offsets.push_back(static_cast<uint32_t>(dump_.stack_frames.size()));
    stacks_.Insert(key, hash, id);
    return id;
  }

  absl::StatusOr<uint32_t> InternFrame(ValueId frame, size_t index) {
    std::string where = fmt::format("entries[{}]['frames']", index);
    if (doc_.kind(frame) != ValueKind::kDict) {
      return Error(frame, where, "expected a frame dict");
    }
    Frame parsed;
    std::span<const ValueId> pairs = doc_.items(frame);
    if (!budget_.Visit(pairs.size())) [[unlikely]] {
      return BudgetError(frame, where);
    }
    for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
      if (doc_.kind(pairs[i]) != ValueKind::kString) continue;
      std::string_view key = doc_.string_value(pairs[i]);
      ValueId value = pairs[i + 1];
      if (key == "line") {
        if (doc_.kind(value) != ValueKind::kInt) return Error(value, where, "expected a line");
        parsed.line = doc_.int_value(value);
      } else if (key == "name" || key == "filename") {
        if (doc_.kind(value) != ValueKind::kString) return Error(value, where, "expected a string");
        (key == "name" ? parsed.name : parsed.filename) = InternValue(value);
      }
    }
    // Equal frames written as separate dicts (CPython re-pickles, JSON) still intern to one.
    absl::string_view key(reinterpret_cast<const char*>(&parsed), sizeof(parsed));
    if (auto it = frames_.find(key); it != frames_.end()) return it->second;
    budget_.Keep(sizeof(Frame));
    uint32_t id = static_cast<uint32_t>(dump_.frames.size());
    dump_.frames.push_back(parsed);
    frames_.emplace(std::string(key), id);
    return id;
  }

  // Pickles memoize every string by value, so equal keys and values are one ValueId: caching per
  // ValueId turns most lookups into an array access (JSON documents simply miss the cache).
  [[gnu::always_inline]] StringId InternValue(ValueId value) {
    ValueCache::Slot& slot = cache_.At(value);
    if (slot.string == kNoString) slot.string = dump_.strings.Intern(doc_.string_value(value));
    return slot.string;
  }

  EntryField FieldOfKey(ValueId key) {
    ValueCache::Slot& slot = cache_.At(key);
    if (slot.field == 0xff)
      slot.field = static_cast<uint8_t>(ClassifyEntryKey(doc_.string_value(key)));
    return static_cast<EntryField>(slot.field);
  }

  static ValueCache& ThreadValueCache() {
    static thread_local ValueCache cache;
    return cache;
  }

  // This thread's cache, looked up once rather than on every access.
  ValueCache& cache_ = ThreadValueCache();

  const Document& doc_;
  RankDump& dump_;
  static constexpr uint32_t kNoGroup = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> group_of_name_;
  ByteKeyInterner shape_lists_;
  ByteKeyInterner dtype_lists_;
  ByteKeyInterner stacks_;
  ByteKeyInterner stack_by_values_;
  absl::flat_hash_map<std::string, uint32_t> frames_;
  absl::flat_hash_map<ValueId, uint32_t> frame_by_value_;
  // Results for shared lists (Document::shared), by value id.
  absl::flat_hash_map<ValueId, uint32_t> shared_shapes_;
  absl::flat_hash_map<ValueId, uint32_t> shared_dtypes_;
  absl::flat_hash_map<ValueId, StackId> shared_stacks_;
  absl::flat_hash_map<ValueId, ParsedRanks> parsed_rank_lists_;
  absl::flat_hash_map<ValueId, size_t> shared_entries_;    // into dump_.entries
  absl::flat_hash_map<std::string, size_t> oddity_index_;  // into dump_.oddities
  NormalizeBudget budget_;
  // Indexed by the profiling name's StringId.
  std::vector<ParsedName> parsed_names_;
  std::vector<bool> name_parsed_;
  EntryLayout layout_;
  int layouts_learned_ = 0;
  struct RecentShapes {
    uint64_t sample = 0;
    ShapeListId id = kInvalidList;
    uint32_t length = 0;  // of the stored encoding: what comparing against it may read
  };
  std::array<RecentShapes, 64> recent_shapes_;
  ItemIdsCache<64, 64> stacks_by_items_;
  ItemIdsCache<16, 4> dtypes_by_items_;
  std::vector<int64_t> scratch_ints_;
  std::vector<uint32_t> scratch_ids_;
};

}  // namespace

bool ParseRanksStringShared(std::string_view text, SharedRanks* ranks) {
  return ParseLongRanksStringOnce(text, ranks);
}

bool ParseRanksString(std::string_view text, std::vector<int64_t>* ranks) {
  ranks->clear();
  size_t at = 0;
  auto skip_spaces = [&] {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n')) ++at;
  };
  skip_spaces();
  if (at >= text.size() || text[at] != '[') return false;
  ++at;
  skip_spaces();
  if (at < text.size() && text[at] == ']') {
    ++at;
    skip_spaces();
    return at == text.size();
  }
  while (true) {
    skip_spaces();
    // Digits accumulated in place: every dump spells out its world group, thousands of ranks.
    size_t start = at;
    int64_t rank = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 18) {
      rank = rank * 10 + (text[at] - '0');
      ++at;
    }
    if (at == start || (at < text.size() && text[at] >= '0' && text[at] <= '9')) return false;
    ranks->push_back(rank);
    skip_spaces();
    if (at >= text.size()) return false;
    if (text[at] == ']') break;
    if (text[at] != ',') return false;
    ++at;
  }
  ++at;
  skip_spaces();
  return at == text.size();
}

absl::StatusOr<RankDump> NormalizeDump(const Document& document, int64_t rank,
                                       const NormalizeLimits& limits, NormalizeCost* cost) {
  // The budgets keep memory proportional to the input, but the input itself may be too large for
  // this machine: that is this file's error, not the end of a run over many files.
  try {
    RankDump dump;
    dump.rank = rank;
    Normalizer normalizer(document, limits, &dump);
    absl::Status status = normalizer.Run();
    if (cost != nullptr) *cost = normalizer.cost();
    FR_RETURN_IF_ERROR(status);
    ApplyRecorderSemantics(&dump);
    return dump;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        fmt::format("out of memory normalizing a dump decoded from {} bytes into {} values",
                    document.input().size(), document.value_count()));
  }
}

}  // namespace fr
