// The direct pickle reader's own parts, shared by its three files and by nothing else (not
// installed, not included outside lib/fr/normalize): the Reader, with the opcodes torch writes
// (memo puts and gets, strings, ints, bools, times) read inline here, the dump's top level and
// groups read in direct_pickle_reader.cc, its entries in direct_pickle_entries.cc and their frames
// and stacks in direct_pickle_stacks.cc.
//
//   thread_local Scratch scratch;
//   Reader reader(bytes, limits, &dump, scratch);
//   if (!reader.Run()) { /* declined: reader.why(), at byte reader.where() */ }
#ifndef FR_NORMALIZE_DIRECT_PICKLE_READER_INTERNAL_H_
#define FR_NORMALIZE_DIRECT_PICKLE_READER_INTERNAL_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fr/base/byte_order.h"
#include "fr/decode/utf8_check.h"
#include "fr/model/rank_dump.h"
#include "fr/model/shared_ranks.h"
#include "fr/normalize/entry_keys.h"
#include "fr/normalize/normalize.h"
#include "fr/normalize/profiling_name.h"
#include "fr/normalize/recent_byte_cache.h"
#include "simdjson.h"

namespace fr::direct_pickle_internal {

// How this reader mirrors NormalizeDump. The normalizer's result depends on more than the data:
// strings are interned on first sight, and which of its two entry readers runs decides the order
// in which an entry's strings are first seen. So this reader replays those decisions exactly:
// - An entry is read "by layout" when its keys are the very key values (memo slots here, value
//   ids there) of the layout learned from an earlier entry; that reader interns thread_name,
//   thread_id, state, then the dtypes, and gives up on a stack it has not seen before.
// - Otherwise, or when it gave up, the entry is read "by keys" in file order and its layout is
//   learned (at most kMaxLayoutsLearned times per dump; after that every entry is read by keys).
// - Groups and profiling names are resolved after the entry's keys, in that order.
// Shape lists are interned as they are read: their ids only depend on the order of shape lists,
// which is the same on both readers as long as input_sizes comes before output_sizes (required).

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr int kMaxLayoutsLearned = 16;  // as the normalizer's

using Field = EntryField;
constexpr uint8_t kNotClassified = 0xff;
static_assert(static_cast<size_t>(Field::kCount) < 32, "fields are kept in a 32-bit mask");

// What a memo slot holds. Strings are memoized by value (every one, once), containers only when
// shared: of those only frame dicts may be named again.
enum class SlotKind : uint8_t { kString, kFrame, kOther };

struct MemoSlot {
  uint32_t offset = 0;  // string: where its text starts; frame: index into frame identities
  uint32_t length = 0;
  StringId string = kNoString;  // interned on first use
  SlotKind kind = SlotKind::kOther;
  uint8_t field = kNotClassified;  // the entry Field of a key, classified on first use
};

// One frame dict as written: PyTorch writes each distinct frame once and names it again by memo.
// The normalizer resolves each such dict (each value id) once; so does this reader.
struct FrameIdentity {
  uint32_t name_slot = kNone;
  uint32_t filename_slot = kNone;
  int64_t line = 0;
  bool filename_first = false;  // dict order decides which string is interned first
  uint32_t frame = kNone;       // index into RankDump::frames once resolved
};

// What an entry names that is resolved after all of its keys were read.
struct RawEntry {
  uint32_t count = 0;
  std::array<uint32_t, 32> keys;  // memo slots of the keys, in file order
  std::array<Field, 32> fields;
  uint32_t mask = 0;
  uint32_t pg_name = kNone;
  uint32_t pg_desc = kNone;
  uint32_t thread_name = kNone;
  uint32_t thread_id = kNone;
  uint32_t state = kNone;
  uint32_t profiling_name = kNone;
  // Slots of the dtype names: [0, input_end) input, [input_end, size) output.
  std::vector<uint32_t> dtypes;
  uint32_t input_dtypes_end = 0;
  std::vector<uint32_t> frames;  // frame identities
  // The frames list as bytes, and whether it only names frames by memo gets (then equal bytes
  // name the same frames, see RecentBytes).
  uint32_t frames_offset = 0;
  uint32_t frames_length = 0;
  bool frames_all_gets = false;
  // The stack of a frames list whose bytes were seen before (kNoStack otherwise); its frames are
  // then not listed in `frames`, only counted.
  StackId known_stack = kNoStack;
  uint32_t known_stack_frames = 0;
  uint64_t frames_hash = 0;  // of `frames`, for StackCache
  // Dtype lists (input, output) whose bytes were read before: their ids, else kNone, and the
  // bytes of those read now.
  std::array<DtypeListId, 2> known_dtypes;
  std::array<uint32_t, 2> dtypes_offset;
  std::array<uint32_t, 2> dtypes_length;
  // Whether the keys so far are the learned layout's, in order.
  bool matches_layout = false;
  // Whether all keys were read as the learned layout's (then `keys` and `fields` are not filled:
  // the layout's are the entry's).
  bool keys_from_layout = false;
};

struct PendingStatus {
  int64_t pg_id;
  PgStatus status;
};

// Scratch reused across calls on one thread: dumps are read one after another.
struct Scratch {
  std::vector<MemoSlot> memo;
  std::vector<FrameIdentity> frame_identities;
  std::vector<Entry> entries;
  // Entries in the last dump read: the next one's array is reserved at that size, since the
  // array itself goes to each dump (see ReadEntries).
  size_t last_entry_count = 0;
  std::vector<int64_t> ints;
  std::vector<uint32_t> ids;
  RawEntry raw;
};

class Reader {
 public:
  Reader(std::string_view bytes, const NormalizeLimits& limits, RankDump* dump, Scratch& scratch)
      : begin_(reinterpret_cast<const uint8_t*>(bytes.data())),
        p_(begin_),
        end_(begin_ + bytes.size()),
        dump_(*dump),
        scratch_(scratch),
        identities_(scratch.frame_identities),
        ints_(scratch.ints),
        ids_(scratch.ids) {
    // The hottest scratch is held by value while reading (one load less per access) and handed
    // back after.
    memo_.swap(scratch.memo);
    entries_.swap(scratch.entries);
    std::swap(raw_, scratch.raw);
    memo_.clear();
    identities_.clear();
    entries_.clear();
    if (entries_.capacity() == 0) entries_.reserve(scratch.last_entry_count);
    max_kept_ = Scaled(limits.kept_bytes_per_input_byte, bytes.size(), limits.min_kept_bytes);
    max_visits_ = Scaled(limits.visits_per_input_byte, bytes.size(), limits.min_visits);
  }

  ~Reader() {
    memo_.swap(scratch_.memo);
    entries_.swap(scratch_.entries);
    std::swap(raw_, scratch_.raw);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  bool Run();

  std::string_view why() const { return why_; }
  uint64_t where() const { return static_cast<uint64_t>(where_ - begin_); }

 private:
  static uint64_t Scaled(uint64_t per_byte, uint64_t size, uint64_t floor) {
    uint64_t scaled;
    if (__builtin_mul_overflow(per_byte, size, &scaled)) return UINT64_MAX;
    return std::max(scaled, floor);
  }

  [[gnu::cold, gnu::noinline]] bool Decline(const char* why) {
    why_ = why;
    where_ = p_;
    return false;
  }

  bool Need(size_t n) const { return static_cast<size_t>(end_ - p_) >= n; }

  // Consumes `op` or declines.
  bool Expect(uint8_t op, const char* why) {
    if (p_ == end_ || *p_ != op) [[unlikely]] {
      return Decline(why);
    }
    ++p_;
    return true;
  }
  bool Expect2(uint8_t first, uint8_t second, const char* why) {
    if (!Need(2) || p_[0] != first || p_[1] != second) [[unlikely]] {
      return Decline(why);
    }
    p_ += 2;
    return true;
  }
  bool At(uint8_t op) const { return p_ != end_ && *p_ == op; }

  // A BINPUT or LONG_BINPUT of the next memo id, as torch numbers them.
  bool MemoPut(SlotKind kind, uint32_t offset, uint32_t length) {
    uint32_t id;
    if (Need(2) && p_[0] == 'q') {
      id = p_[1];
      p_ += 2;
    } else if (Need(5) && p_[0] == 'r') {
      id = LoadLe32(p_ + 1);
      p_ += 5;
    } else {
      return Decline("expected a BINPUT");
    }
    if (id != memo_.size()) return Decline("memo ids out of torch's order");
    MemoSlot& slot = memo_.emplace_back();
    slot.kind = kind;
    slot.offset = offset;
    slot.length = length;
    return true;
  }

  // A memo get: the slot, or kNone after declining.
  uint32_t MemoGet() {
    uint32_t id;
    if (Need(2) && p_[0] == 'h') {
      id = p_[1];
      p_ += 2;
    } else if (Need(5) && p_[0] == 'j') {
      id = LoadLe32(p_ + 1);
      p_ += 5;
    } else {
      Decline("expected a BINGET");
      return kNone;
    }
    if (id >= memo_.size()) {
      Decline("memo get of an id never put");
      return kNone;
    }
    return id;
  }

  // A string: BINUNICODE followed by its BINPUT, or a memo get of one. Stores its slot.
  [[gnu::always_inline]] bool ReadString(uint32_t* slot) {
    if (Need(2) && p_[0] == 'h') [[likely]] {
      uint32_t id = p_[1];
      if (id >= memo_.size() || memo_[id].kind != SlotKind::kString) [[unlikely]] {
        return Decline("expected a string");
      }
      p_ += 2;
      *slot = id;
      return true;
    }
    return ReadStringSlow(slot);
  }

  [[gnu::noinline]] bool ReadStringSlow(uint32_t* slot) {
    if (At('X')) {
      if (!Need(5)) return Decline("truncated string");
      uint64_t length = LoadLe32(p_ + 1);
      const uint8_t* text = p_ + 5;
      if (length > static_cast<uint64_t>(end_ - text)) return Decline("truncated string");
      if (!IsStrictUtf8(text, length)) return Decline("string is not valid UTF-8");
      p_ = text + length;
      *slot = static_cast<uint32_t>(memo_.size());
      return MemoPut(SlotKind::kString, static_cast<uint32_t>(text - begin_),
                     static_cast<uint32_t>(length));
    }
    uint32_t id = MemoGet();
    if (id == kNone) return false;
    if (memo_[id].kind != SlotKind::kString) return Decline("expected a string");
    *slot = id;
    return true;
  }

  std::string_view Text(uint32_t slot) const {
    const MemoSlot& s = memo_[slot];
    return std::string_view(reinterpret_cast<const char*>(begin_) + s.offset, s.length);
  }

  StringId Intern(uint32_t slot) {
    MemoSlot& s = memo_[slot];
    if (s.string == kNoString) s.string = dump_.strings.Intern(Text(slot));
    return s.string;
  }

  // The four int opcodes torch writes (LONG1 always with 8 bytes).
  [[gnu::always_inline]] bool ReadInt(int64_t* value) {
    if (p_ == end_) [[unlikely]] {
      return Decline("truncated int");
    }
    switch (*p_) {
      case 'K':
        if (!Need(2)) return Decline("truncated int");
        *value = p_[1];
        p_ += 2;
        return true;
      case 'M':
        if (!Need(3)) return Decline("truncated int");
        *value = p_[1] | (p_[2] << 8);
        p_ += 3;
        return true;
      case 'J':
        if (!Need(5)) return Decline("truncated int");
        *value = static_cast<int32_t>(LoadLe32(p_ + 1));
        p_ += 5;
        return true;
      case 0x8a:
        if (!Need(10) || p_[1] != 8) return Decline("expected an 8-byte LONG1");
        *value = static_cast<int64_t>(LoadLe64(p_ + 2));
        p_ += 10;
        return true;
      default:
        return Decline("expected an int");
    }
  }

  [[gnu::always_inline]] bool ReadBool(bool* value) {
    if (At(0x88) || At(0x89)) {
      *value = *p_ == 0x88;
      ++p_;
      return true;
    }
    int64_t v = 0;
    if (!ReadInt(&v)) return false;
    *value = v != 0;
    return true;
  }

  // None or an int; 0 means "not yet" as in JSON.
  [[gnu::always_inline]] bool ReadTime(int64_t* value) {
    if (At('N')) {
      ++p_;
      return true;
    }
    if (!ReadInt(value)) return false;
    if (*value == 0) *value = kUnknown;
    return true;
  }

  bool ReadDuration(double* value) {
    if (At('N')) {
      ++p_;
      return true;
    }
    if (At('G')) {
      if (!Need(9)) return Decline("truncated float");
      *value = std::bit_cast<double>(LoadBe64(p_ + 1));
      p_ += 9;
      return true;
    }
    int64_t v = 0;
    if (!ReadInt(&v)) return false;
    *value = static_cast<double>(v);
    return true;
  }

  // Budgets: upper bounds of what the normalizer would count (NormalizeLimits), checked at the
  // end. A dump near them is declined and the general path says what is wrong.
  void Visit(uint64_t n) { visits_ += n; }
  void VisitText(uint32_t slot) { visits_ += 1 + memo_[slot].length / 64; }
  void Keep(uint64_t n) { kept_ += n; }
  // Checked before anything that copies what a memo get names (a long string or rank list named
  // by many 2-byte gets), so that memory stays proportional to the input.
  bool OverBudget() const { return kept_ > max_kept_ || visits_ > max_visits_; }

  void Oddity(std::string_view name) {
    for (auto& [key, count] : dump_.oddities) {
      if (key == name) {
        ++count;
        return;
      }
    }
    dump_.oddities.emplace_back(std::string(name), 1);
  }

  uint32_t GroupByName(StringId name) {
    if (name < group_of_name_.size() && group_of_name_[name] != kNone) return group_of_name_[name];
    uint32_t index = static_cast<uint32_t>(dump_.groups.size());
    Keep(sizeof(ProcessGroup));
    ProcessGroup& group = dump_.groups.emplace_back();
    group.name = name;
    if (name >= group_of_name_.size()) group_of_name_.resize(name + 1, kNone);
    group_of_name_[name] = index;
    return index;
  }

  // Defined in direct_pickle_reader.cc: the dump's top level and groups (ReadVersion,
  // ReadPgConfig, ReadPgStatus, ReadCommState, ApplyPgStatus); in direct_pickle_stacks.cc: the
  // frames and stacks (ReadNewFrames, ReadFrameDict, FindStack, InternStack, ResolveFrame); in
  // direct_pickle_entries.cc: the entries, the rest.
  bool ReadVersion();
  bool ReadPgConfig();
  bool ReadPgStatus();
  bool ReadCommState();
  bool ReadEntries();
  bool ReadEntry();
  // kInLayout: the value of a layout key read by ReadEntry's fast loop, whose order checks were
  // passed by the entry the layout was learned from (the same fields came before it).
  template <bool kInLayout = false>
  [[gnu::always_inline]] inline bool ReadValue(Field field, Entry& entry);
  // The lists: the same bytes as a recent list are read as it, inline; others out of line.
  [[gnu::always_inline]] bool ReadShapes(ShapeListId* id) {
    if (const RecentBytes* seen = recent_shapes_.Find(begin_, p_, end_ - p_)) {
      p_ += seen->length;
      *id = seen->id;
      Visit(2 * (seen->count + longest_shape_list_));
      return true;
    }
    return ReadNewShapes(id);
  }
  [[gnu::always_inline]] bool ReadDtypes(int which) {
    if (const RecentBytes* seen = recent_dtypes_bytes_.Find(begin_, p_, end_ - p_)) {
      // Read before, so its strings are interned and its id known: nothing left to resolve.
      p_ += seen->length;
      raw_.known_dtypes[which] = seen->id;
      Visit(2 * seen->count);
      return true;
    }
    return ReadNewDtypes(which);
  }
  [[gnu::always_inline]] bool ReadFrames() {
    if (const RecentBytes* seen = recent_stacks_.Find(begin_, p_, end_ - p_)) {
      p_ += seen->length;
      raw_.known_stack = seen->id;
      raw_.known_stack_frames = seen->count;
      return true;
    }
    return ReadNewFrames();
  }
  bool ReadNewShapes(ShapeListId* id);
  bool ReadNewDtypes(int which);
  bool ReadNewFrames();
  // Most entries' dtype lists and states were read before: those are resolved inline.
  [[gnu::always_inline]] DtypeListId ResolveDtypes(int which, uint32_t begin, uint32_t end) {
    if (raw_.known_dtypes[which] != kNone) [[likely]] {
      return raw_.known_dtypes[which];
    }
    return ResolveNewDtypes(which, begin, end);
  }
  DtypeListId ResolveNewDtypes(int which, uint32_t begin, uint32_t end);
  bool ReadFrameDict();
  void ResolveEntry(Entry& entry);
  void LearnLayout();
  DtypeListId InternDtypes(uint32_t begin, uint32_t end);
  StackId SeenStack();
  StackId FindStack();
  StackId InternStack();
  uint32_t ResolveFrame(uint32_t identity);
  void AssignGroup(Entry& entry);
  void ParseProfilingName(Entry& entry);
  void ApplyPgStatus();

  const uint8_t* const begin_;
  const uint8_t* p_;
  const uint8_t* const end_;
  RankDump& dump_;
  Scratch& scratch_;
  std::vector<MemoSlot> memo_;
  std::vector<FrameIdentity>& identities_;
  std::vector<Entry> entries_;
  std::vector<int64_t>& ints_;
  std::vector<uint32_t>& ids_;
  RawEntry raw_;

  const char* why_ = "";
  const uint8_t* where_ = nullptr;
  uint64_t kept_ = 0;
  uint64_t visits_ = 0;
  uint64_t max_kept_ = 0;
  uint64_t max_visits_ = 0;
  uint64_t longest_shape_list_ = 0;

  bool has_version_ = false;
  bool entries_read_ = false;
  std::vector<PendingStatus> pending_status_;
  std::vector<uint32_t> group_of_name_;
  absl::flat_hash_map<uint32_t, SharedRanks> ranks_by_slot_;

  // The normalizer's layout state (see the top of this file).
  std::array<uint32_t, 32> layout_keys_;
  uint32_t layout_count_ = 0;
  // The learned layout compiled for ReadEntry: each key's field, the fields before it (as a mask)
  // and, when every key's slot fits a BINGET, that byte. Then an entry that names the layout's
  // keys with BINGETs, as torch writes every entry after the first, is read without looking its
  // keys up: the same key slots in the same order read the same way.
  std::array<Field, 32> layout_fields_;
  std::array<uint32_t, 33> layout_masks_;
  std::array<uint32_t, 33> layout_get_words_;  // 'h' and the slot, as LoadLe16 reads them
  bool layout_by_gets_ = false;
  int layouts_learned_ = 0;

  absl::flat_hash_map<std::string, ShapeListId> shape_lists_;
  absl::flat_hash_map<std::string, DtypeListId> dtype_lists_;
  absl::flat_hash_map<std::string, StackId> stacks_by_frames_;
  absl::flat_hash_map<std::string, StackId> stacks_by_identities_;
  absl::flat_hash_map<std::pair<uint64_t, int64_t>, uint32_t> frames_by_content_;
  // The last dtype list seen at each position (input, output): entries repeat a few.
  struct RecentDtypes {
    std::vector<uint32_t> slots;
    DtypeListId id = kNone;
  };
  std::array<RecentDtypes, 2> recent_dtypes_;
  struct StackSlot {
    uint64_t hash = 0;
    std::vector<uint32_t> frames;
    StackId stack = kNoStack;
  };
  std::array<StackSlot, 64> stack_slots_;
  RecentByteCache<8> recent_shapes_;
  RecentByteCache<4> recent_dtypes_bytes_;
  RecentByteCache<8> recent_stacks_;
  EntryStateCache states_;
  ProfilingNameCache names_;
};

}  // namespace fr::direct_pickle_internal

#endif  // FR_NORMALIZE_DIRECT_PICKLE_READER_INTERNAL_H_
