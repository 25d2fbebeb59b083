// The entries of a dump as the direct reader reads them: each entry's keys (by the learned
// layout or key by key, as the normalizer would read it), its values, its shape and dtype lists
// interned once per distinct value, then its group and profiling name. The hot path of the direct
// reader: these functions stay in one file so that they inline into each other.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "fr/normalize/direct_pickle_reader_internal.h"

namespace fr::direct_pickle_internal {
namespace {

// The entry keys of dump versions 2.2 and newer. The older aliases (seq_id, time_created_us) and
// unknown keys are declined: the normalizer reads them differently or counts them as oddities.
Field ClassifyField(std::string_view key) {
  Field field = ClassifyEntryKey(key);
  return IsLegacyEntryKey(field) ? Field::kUnknown : field;
}

constexpr uint32_t Bit(Field field) { return uint32_t{1} << static_cast<uint32_t>(field); }

}  // namespace

bool Reader::ReadEntries() {
  if (!Expect2(']', '(', "entries is not a list")) return false;
  while (!At('e')) {
    // Entries are held until the list ends: an entry dict can be 3 bytes.
    // (The bytes of the entries so far, without a division by sizeof(Entry).)
    const uint64_t held = reinterpret_cast<const char*>(entries_.data() + entries_.size()) -
                          reinterpret_cast<const char*>(entries_.data());
    if (kept_ + held + sizeof(Entry) > max_kept_ || visits_ > max_visits_) {
      return Decline("near NormalizeLimits");
    }
    if (!ReadEntry()) return false;
  }
  ++p_;
  Visit(entries_.size());
  Keep(entries_.size() * sizeof(Entry));
  if (OverBudget()) return Decline("near NormalizeLimits");
  // The array itself becomes the dump's (no copy); the next dump's is reserved at this size.
  scratch_.last_entry_count = entries_.size();
  dump_.entries.open_vector().swap(entries_);
  return true;
}

bool Reader::ReadEntry() {
  if (!Expect2('}', '(', "entry is not a dict")) return false;
  RawEntry& raw = raw_;
  raw.count = 0;
  raw.mask = 0;
  raw.pg_name = raw.pg_desc = raw.thread_name = raw.thread_id = raw.state = raw.profiling_name =
      kNone;
  raw.dtypes.clear();
  raw.input_dtypes_end = 0;
  raw.frames.clear();
  raw.frames_all_gets = false;
  raw.known_stack = kNoStack;
  raw.frames_hash = 0;
  raw.known_dtypes = {kNone, kNone};
  raw.dtypes_length = {0, 0};
  raw.matches_layout = layout_count_ != 0;
  raw.keys_from_layout = false;
  // Copied from a default entry: constructing one in place clears it first.
  static const Entry kDefaultEntry;
  Entry& entry = entries_.emplace_back(kDefaultEntry);
  if (layout_by_gets_) {
    // The word after the last key's is one no two bytes load as.
    uint32_t i = 0;
    while (Need(2) && LoadLe16(p_) == layout_get_words_[i]) {
      p_ += 2;
      if (!ReadValue<true>(layout_fields_[i], entry)) return false;
      ++i;
    }
    raw.count = i;
    raw.mask = layout_masks_[i];
    if (i == layout_count_ && At('u')) [[likely]] {
      ++p_;
      raw.keys_from_layout = true;
      ResolveEntry(entry);
      return true;
    }
    std::copy(layout_keys_.begin(), layout_keys_.begin() + i, raw.keys.begin());
    std::copy(layout_fields_.begin(), layout_fields_.begin() + i, raw.fields.begin());
  }
  while (!At('u')) {
    uint32_t key;
    if (!ReadString(&key)) return false;
    MemoSlot& slot = memo_[key];
    if (slot.field == kNotClassified) [[unlikely]] {
      slot.field = static_cast<uint8_t>(ClassifyField(Text(key)));
    }
    Field field = static_cast<Field>(slot.field);
    if (field == Field::kUnknown) return Decline("unknown entry key");
    if (raw.mask & Bit(field)) return Decline("repeated entry key");
    raw.mask |= Bit(field);
    raw.matches_layout &= raw.count < layout_count_ && layout_keys_[raw.count] == key;
    raw.keys[raw.count] = key;
    raw.fields[raw.count] = field;
    ++raw.count;
    if (!ReadValue(field, entry)) return false;
  }
  ++p_;
  ResolveEntry(entry);
  return true;
}

template <bool kInLayout>
inline bool Reader::ReadValue(Field field, Entry& entry) {
  RawEntry& raw = raw_;
  switch (field) {
    case Field::kRecordId:
      return ReadInt(&entry.record_id);
    case Field::kPgId:
      return ReadInt(&entry.pg_id);
    case Field::kCollectiveSeqId:
      return ReadInt(&entry.collective_seq_id);
    case Field::kP2pSeqId:
      return ReadInt(&entry.p2p_seq_id);
    case Field::kOpId:
      return ReadInt(&entry.op_id);
    case Field::kTimeCreatedNs:
      return ReadInt(&entry.time_created_ns);
    case Field::kTimeoutMs:
      return ReadInt(&entry.timeout_ms);
    case Field::kProcessGroup:
      if (!ReadString(&raw.pg_name) || !ReadString(&raw.pg_desc)) return false;
      return Expect(0x86, "process_group is not a TUPLE2 of strings");
    case Field::kThreadName:
      return ReadString(&raw.thread_name);
    case Field::kThreadId:
      return ReadString(&raw.thread_id);
    case Field::kState:
      return ReadString(&raw.state);
    case Field::kProfilingName:
      return ReadString(&raw.profiling_name);
    case Field::kDurationMs:
      return ReadDuration(&entry.duration_ms);
    case Field::kTimeDiscoveredStartedNs:
      return ReadTime(&entry.time_discovered_started_ns);
    case Field::kTimeDiscoveredCompletedNs:
      return ReadTime(&entry.time_discovered_completed_ns);
    case Field::kRetired:
      return ReadBool(&entry.retired);
    case Field::kIsP2p:
      return ReadBool(&entry.is_p2p);
    case Field::kInputSizes:
      // Both readers intern input shapes before output shapes only in file order.
      if (!kInLayout && (raw.mask & Bit(Field::kOutputSizes))) {
        return Decline("output_sizes before input_sizes");
      }
      return ReadShapes(&entry.input_sizes);
    case Field::kOutputSizes:
      return ReadShapes(&entry.output_sizes);
    case Field::kInputDtypes:
      if (!kInLayout && (raw.mask & Bit(Field::kOutputDtypes))) {
        return Decline("output_dtypes before input_dtypes");
      }
      if (!ReadDtypes(0)) return false;
      raw.input_dtypes_end = static_cast<uint32_t>(raw.dtypes.size());
      return true;
    case Field::kOutputDtypes:
      // input_dtypes_end is 0 until input_dtypes is read.
      return ReadDtypes(1);
    case Field::kFrames:
      return ReadFrames();
    case Field::kUnknown:
    case Field::kSeqId:          // declined by ClassifyField
    case Field::kTimeCreatedUs:  // likewise
    case Field::kCount:
      break;
  }
  return Decline("unknown entry key");
}

// [[3, 4], []]: encoded as the normalizer encodes shape lists, [n, rank_0, dims_0..., ...].
bool Reader::ReadNewShapes(ShapeListId* id) {
  const uint8_t* start = p_;
  if (!Expect2(']', '(', "shapes are not a list")) return false;
  ints_.clear();
  ints_.push_back(0);
  int64_t shapes = 0;
  while (!At('e')) {
    if (!Expect2(']', '(', "a shape is not a list")) return false;
    size_t rank_at = ints_.size();
    ints_.push_back(0);
    while (!At('e')) {
      int64_t dim = 0;
      if (!ReadInt(&dim)) return false;
      ints_.push_back(dim);
    }
    ++p_;
    ints_[rank_at] = static_cast<int64_t>(ints_.size() - rank_at - 1);
    ++shapes;
  }
  ++p_;
  ints_[0] = shapes;
  uint64_t length = ints_.size();
  longest_shape_list_ = std::max(longest_shape_list_, length);
  // Both readers may read a list, and the normalizer's recent-shape compare reads up to the
  // longest stored list.
  Visit(2 * (length + longest_shape_list_));
  absl::string_view key(reinterpret_cast<const char*>(ints_.data()), length * sizeof(int64_t));
  auto it = shape_lists_.find(key);
  if (it != shape_lists_.end()) {
    *id = it->second;
  } else {
    Keep((length + 1) * sizeof(int64_t));
    *id = static_cast<ShapeListId>(dump_.shape_list_offsets.size() - 1);
    dump_.shape_dims.insert(dump_.shape_dims.end(), ints_.begin(), ints_.end());
    dump_.shape_list_offsets.push_back(static_cast<uint32_t>(dump_.shape_dims.size()));
    shape_lists_.emplace(std::string(key), *id);
  }
  recent_shapes_.Insert(
      begin_, RecentBytes{static_cast<uint32_t>(start - begin_), static_cast<uint32_t>(p_ - start),
                          *id, static_cast<uint32_t>(length)});
  return true;
}

// `which`: 0 for input_dtypes, 1 for output_dtypes.
bool Reader::ReadNewDtypes(int which) {
  const uint8_t* start = p_;
  if (!Expect2(']', '(', "dtypes are not a list")) return false;
  while (!At('e')) {
    uint32_t slot;
    if (!ReadString(&slot)) return false;
    raw_.dtypes.push_back(slot);
  }
  ++p_;
  raw_.dtypes_offset[which] = static_cast<uint32_t>(start - begin_);
  raw_.dtypes_length[which] = static_cast<uint32_t>(p_ - start);
  return true;
}

DtypeListId Reader::InternDtypes(uint32_t begin, uint32_t end) {
  std::span<const uint32_t> slots(raw_.dtypes.data() + begin, end - begin);
  RecentDtypes& recent = recent_dtypes_[begin == 0 ? 0 : 1];
  if (recent.id != kNone && recent.slots.size() == slots.size() &&
      std::equal(slots.begin(), slots.end(), recent.slots.begin())) {
    return recent.id;
  }
  Visit(2 * slots.size());
  ids_.clear();
  for (uint32_t slot : slots) ids_.push_back(Intern(slot));
  absl::string_view key(reinterpret_cast<const char*>(ids_.data()), ids_.size() * sizeof(uint32_t));
  DtypeListId id;
  if (auto it = dtype_lists_.find(key); it != dtype_lists_.end()) {
    id = it->second;
  } else {
    Keep((ids_.size() + 1) * sizeof(uint32_t));
    id = static_cast<DtypeListId>(dump_.dtype_list_offsets.size() - 1);
    dump_.dtype_names.insert(dump_.dtype_names.end(), ids_.begin(), ids_.end());
    dump_.dtype_list_offsets.push_back(static_cast<uint32_t>(dump_.dtype_names.size()));
    dtype_lists_.emplace(std::string(key), id);
  }
  recent.slots.assign(slots.begin(), slots.end());
  recent.id = id;
  return id;
}

DtypeListId Reader::ResolveNewDtypes(int which, uint32_t begin, uint32_t end) {
  DtypeListId id = InternDtypes(begin, end);
  raw_.known_dtypes[which] = id;  // read by layout and then by keys: interned once
  recent_dtypes_bytes_.Insert(
      begin_, RecentBytes{raw_.dtypes_offset[which], raw_.dtypes_length[which], id, end - begin});
  return id;
}

void Reader::ResolveEntry(Entry& entry) {
  RawEntry& raw = raw_;
  const bool has_input_dtypes = raw.mask & Bit(Field::kInputDtypes);
  const bool has_output_dtypes = raw.mask & Bit(Field::kOutputDtypes);
  const uint32_t dtypes_end = static_cast<uint32_t>(raw.dtypes.size());
  const uint64_t frame_count =
      raw.known_stack != kNoStack ? raw.known_stack_frames : raw.frames.size();
  // Key path visits (the normalizer reads every pair of an entry read by keys, and looks a stack
  // up by its frames on either path).
  Visit(2 * raw.count + 4 * frame_count);
  bool read_by_layout = false;
  if (raw.matches_layout && raw.count == layout_count_) {
    // ReadEntryByLayout's order: thread_name, thread_id, state, input and output dtypes, then the
    // stack, which must have been seen before.
    if (raw.thread_name != kNone) entry.thread_name = Intern(raw.thread_name);
    if (raw.thread_id != kNone) entry.thread_id = Intern(raw.thread_id);
    if (raw.state != kNone) entry.state = states_.Get(Intern(raw.state), dump_.strings);
    if (has_input_dtypes) entry.input_dtypes = ResolveDtypes(0, 0, raw.input_dtypes_end);
    if (has_output_dtypes) {
      entry.output_dtypes = ResolveDtypes(1, raw.input_dtypes_end, dtypes_end);
    }
    read_by_layout = true;
    if (raw.mask & Bit(Field::kFrames)) {
      // A stack whose bytes were seen was found before, so this finds it too.
      entry.stack = raw.known_stack != kNoStack ? raw.known_stack : FindStack();
      read_by_layout = entry.stack != kNoStack;
    }
  }
  if (!read_by_layout) {
    // ReadEntryByKeys: file order.
    const Field* fields = raw.keys_from_layout ? layout_fields_.data() : raw.fields.data();
    for (uint32_t i = 0; i < raw.count; ++i) {
      switch (fields[i]) {
        case Field::kFrames:
          if (raw.known_stack != kNoStack) {
            dump_.has_stacks = true;  // as InternStack, which finds it
            entry.stack = raw.known_stack;
          } else {
            entry.stack = InternStack();
          }
          break;
        case Field::kThreadName:
          entry.thread_name = Intern(raw.thread_name);
          break;
        case Field::kThreadId:
          entry.thread_id = Intern(raw.thread_id);
          break;
        case Field::kState:
          entry.state = states_.Get(Intern(raw.state), dump_.strings);
          break;
        case Field::kInputDtypes:
          entry.input_dtypes = ResolveDtypes(0, 0, raw.input_dtypes_end);
          break;
        case Field::kOutputDtypes:
          entry.output_dtypes = ResolveDtypes(1, raw.input_dtypes_end, dtypes_end);
          break;
        default:
          break;
      }
    }
    // LearnLayout: every key is known and named once here.
    if (layouts_learned_ < kMaxLayoutsLearned) {
      ++layouts_learned_;
      if (!raw.keys_from_layout) LearnLayout();
    } else {
      layout_count_ = 0;
      layout_by_gets_ = false;
    }
  }
  if (raw.frames_all_gets && raw.known_stack == kNoStack && raw.frames.size() >= 2) {
    recent_stacks_.Insert(begin_, RecentBytes{raw.frames_offset, raw.frames_length, entry.stack,
                                              static_cast<uint32_t>(raw.frames.size())});
  }
  AssignGroup(entry);
  ParseProfilingName(entry);
}

void Reader::LearnLayout() {
  const RawEntry& raw = raw_;
  layout_count_ = raw.count;
  layout_by_gets_ = raw.count != 0;
  uint32_t mask = 0;
  for (uint32_t i = 0; i < raw.count; ++i) {
    layout_keys_[i] = raw.keys[i];
    layout_fields_[i] = raw.fields[i];
    layout_masks_[i] = mask;
    mask |= Bit(raw.fields[i]);
    layout_by_gets_ &= raw.keys[i] <= 0xff;
    layout_get_words_[i] = 'h' | (raw.keys[i] << 8);
  }
  layout_masks_[raw.count] = mask;
  layout_get_words_[raw.count] = 0x10000;
}

void Reader::AssignGroup(Entry& entry) {
  const bool has_group = raw_.pg_name != kNone;
  StringId name_id =
      has_group ? Intern(raw_.pg_name)
                : dump_.strings.Intern(entry.pg_id == kUnknown ? std::string("default")
                                                               : std::to_string(entry.pg_id));
  uint32_t index = GroupByName(name_id);
  ProcessGroup& group = dump_.groups[index];
  if (has_group && group.desc == 0) group.desc = Intern(raw_.pg_desc);
  if (entry.pg_id != kUnknown) {
    if (group.pg_id == kUnknown) {
      group.pg_id = entry.pg_id;
    } else if (group.pg_id != entry.pg_id) {
      Oddity("group_with_several_pg_ids");
    }
  }
  if (!group.ranks_known && has_group && dump_.version_major >= 2) {
    Oddity("entry_group_not_in_pg_config");
  }
  entry.group = index;
  ++group.entry_count;
}

void Reader::ParseProfilingName(Entry& entry) {
  if (raw_.profiling_name == kNone) {
    Oddity("entry_without_profiling_name");
    return;
  }
  entry.profiling_name = Intern(raw_.profiling_name);
  const ProfilingNameCache::Parsed& parsed = names_.Get(entry.profiling_name, dump_.strings);
  entry.backend = parsed.backend;
  entry.op_name = parsed.op_name;
  entry.op = parsed.op;
  if (!IsPointToPoint(parsed.op)) return;
  if (parsed.peer_local == kUnknown) {
    Oddity("p2p_without_peer");
    return;
  }
  const ProcessGroup& group = dump_.groups[entry.group];
  if (group.ranks_known && parsed.peer_local < static_cast<int64_t>(group.ranks.size())) {
    entry.peer_rank = group.ranks[parsed.peer_local];
  } else if (!group.ranks_known) {
    Oddity("p2p_peer_in_group_of_unknown_ranks");
  } else {
    Oddity("p2p_peer_outside_group");
  }
}

}  // namespace fr::direct_pickle_internal
