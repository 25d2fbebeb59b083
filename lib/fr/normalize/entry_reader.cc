// A dump's entries: each entry's keys read by the layout learned from the first entries (or key
// by key), and their shapes, dtypes, stacks and frames interned once per distinct value. The hot
// path of normalizing: these functions stay in one file so that they inline into each other.
// They are `inline`, as they were when defined in the class: only this file calls them, and with
// external linkage GCC would not inline a function called once.
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/normalize/normalizer.h"

namespace fr::normalize_internal {

uint32_t Normalizer::GroupByName(StringId name) {
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

absl::Status Normalizer::NormalizeEntries(ValueId entries) {
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

inline absl::Status Normalizer::NormalizeEntry(ValueId value, size_t index) {
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

std::string Normalizer::FieldWhere(size_t index, ValueId key) const {
  return fmt::format("entries[{}]['{}']", index, doc_.string_value(key));
}

// Readers of one field: true when the value has the expected type (and was stored). Kept free
// of Status on the success path, which runs for every key of every entry.
inline bool Normalizer::ReadInt(ValueId field, int64_t* target) const {
  if (doc_.kind(field) != ValueKind::kInt) return false;
  *target = doc_.int_value(field);
  return true;
}

// Dumps before 1.1 stored microseconds; the model keeps nanoseconds. A count of microseconds
// too large for a nanosecond int64 (centuries past 2262) is no clock reading: it is refused
// as a wrong value rather than wrapped into a plausible-looking one.
inline bool Normalizer::ReadMicroseconds(ValueId field, int64_t* target_ns) const {
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
inline bool Normalizer::ReadTime(ValueId field, int64_t* target) const {
  if (doc_.kind(field) == ValueKind::kNone) return true;
  if (!ReadInt(field, target)) return false;
  if (*target == 0) *target = kUnknown;
  return true;
}

inline bool Normalizer::ReadBool(ValueId field, bool* target) const {
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
inline bool Normalizer::ReadString(ValueId field, StringId* target) {
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

inline bool Normalizer::ReadDuration(ValueId field, double* target) const {
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
inline bool Normalizer::ReadProcessGroup(ValueId field, EntryRefs* refs) const {
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

inline bool Normalizer::ReadState(ValueId field, EntryState* state) {
  if (doc_.kind(field) != ValueKind::kString) return false;
  *state = states_.Get(InternValue(field), dump_.strings);
  return true;
}

// The general reader: every key is classified and checked, unknown keys are counted, and the
// first wrong value is an error naming the entry, the key and the byte offset.
inline absl::Status Normalizer::ReadEntryByKeys(ValueId value, std::span<const ValueId> pairs,
                                                size_t index, Entry* entry, EntryRefs* refs) {
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

// Learns the layout of an entry just read by ReadEntryByKeys, when every key is known and
// names a field once (entries with unknown, repeated or alias keys always take the general
// path, which counts and orders them).
inline void Normalizer::LearnLayout(std::span<const ValueId> pairs) {
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
  auto present = [&](EntryField field) { return position[static_cast<size_t>(field)] != kAbsent; };
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
inline bool Normalizer::ReadEntryByLayout(std::span<const ValueId> pairs, Entry* entry,
                                          EntryRefs* refs) {
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
  if (ValueId v = at(EntryField::kThreadName); v != kNoValue && !ReadString(v, &entry->thread_name))
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

inline void Normalizer::AssignGroup(Entry* entry, ValueId name, ValueId desc) {
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

// "nccl:send 0->1" -> backend "nccl", op "send", peer = the group's rank 1 as a global rank.
inline void Normalizer::ParseProfilingName(ValueId text, Entry* entry) {
  if (text == kNoValue) {
    Oddity("entry_without_profiling_name");
    return;
  }
  entry->profiling_name = InternValue(text);
  const ProfilingNameCache::Parsed& parsed = names_.Get(entry->profiling_name, dump_.strings);
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

// The id of a list of shapes ([[8, 1024], []]), or kInvalidList when `shapes` is not one or the
// budget ran out (ShapesError then says which and where).
inline ShapeListId Normalizer::InternShapes(ValueId shapes) {
  if (doc_.IsUnshared(shapes, ValueKind::kList)) [[likely]] {
    return InternShapeContent(shapes);
  }
  if (doc_.kind(shapes) != ValueKind::kList) return kInvalidList;
  return InternShared(shapes, shared_shapes_, &Normalizer::InternShapeContent);
}

inline ShapeListId Normalizer::InternShapeContent(ValueId shapes) {
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
uint64_t Normalizer::SampleShapes(std::span<const ValueId> items) const {
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
inline bool Normalizer::SameShapes(std::span<const ValueId> items, ShapeListId id) const {
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
inline absl::Status Normalizer::ShapesError(ValueId shapes, const std::string& where) const {
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
inline DtypeListId Normalizer::InternDtypes(ValueId dtypes) {
  if (doc_.IsUnshared(dtypes, ValueKind::kList)) [[likely]] {
    return InternDtypeContent(dtypes);
  }
  if (doc_.kind(dtypes) != ValueKind::kList) return kInvalidList;
  return InternShared(dtypes, shared_dtypes_, &Normalizer::InternDtypeContent);
}

inline DtypeListId Normalizer::InternDtypeContent(ValueId dtypes) {
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
inline absl::Status Normalizer::DtypesError(ValueId dtypes, const std::string& where) const {
  if (budget_.exceeded()) return BudgetError(dtypes, where);
  if (doc_.kind(dtypes) != ValueKind::kList) {
    return Error(dtypes, where, "expected a list of dtype names");
  }
  for (ValueId dtype : doc_.items(dtypes)) {
    if (doc_.kind(dtype) != ValueKind::kString) return Error(dtype, where, "expected a dtype name");
  }
  return absl::InternalError(fmt::format("{}: dtypes refused without a reason", where));
}

// The stack of a frames list already seen in this document, or kNoStack. Entries with the same
// stack list the same shared frame dicts: one lookup by their ids.
inline StackId Normalizer::FindStack(ValueId frames) {
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

inline absl::StatusOr<StackId> Normalizer::InternStack(ValueId frames, size_t index) {
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

inline absl::StatusOr<StackId> Normalizer::InternStackContent(ValueId frames, size_t index) {
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

inline absl::StatusOr<StackId> Normalizer::InternStackByFrames(
    ValueId frames_list, std::span<const ValueId> frame_values, size_t index) {
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

absl::StatusOr<uint32_t> Normalizer::InternFrame(ValueId frame, size_t index) {
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

}  // namespace fr::normalize_internal
