#include "fr/normalize/direct_pickle_reader.h"

#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "fr/base/byte_order.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/normalize/entry_keys.h"
#include "fr/normalize/profiling_name.h"
#include "fr/normalize/recorder_semantics.h"
#include "simdjson.h"

namespace fr {
namespace {

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

// The entry keys of dump versions 2.2 and newer. The older aliases (seq_id, time_created_us) and
// unknown keys are declined: the normalizer reads them differently or counts them as oddities.
Field ClassifyField(std::string_view key) {
  Field field = ClassifyEntryKey(key);
  return IsLegacyEntryKey(field) ? Field::kUnknown : field;
}

constexpr uint32_t Bit(Field field) { return uint32_t{1} << static_cast<uint32_t>(field); }

// The decoder's rule for strings: strict UTF-8, checked 8 ASCII bytes at a time first.
bool IsValidUtf8(const uint8_t* p, size_t n) {
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= p[i];
  if ((acc & 0x8080808080808080ull) == 0) return true;
  return simdjson::validate_utf8(reinterpret_cast<const char*>(p), n);
}

bool ParseInt(std::string_view text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

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

// Byte strings read before, with what they were read as. Reading a pickle only depends on its
// bytes and the memo, whose slots never change once put (ids are sequential here), so the same
// bytes at a later place read the same: a dump repeats a handful of shape lists and stacks
// thousands of times, and a compare is much cheaper than parsing and hashing them again.
struct RecentBytes {
  uint32_t offset = 0;  // into the input
  uint32_t length = 0;  // 0: empty slot
  uint32_t id = 0;      // shape list or stack
  uint32_t count = 0;   // ints of the shape list's encoding, or frames of the stack
};
template <size_t kSlots>
class RecentByteCache {
 public:
  // The slot whose bytes start at `p` (with at least `left` bytes there), or nullptr. Each slot
  // keeps its first and last eight bytes, so that lists of up to 16 bytes (most shape and dtype
  // lists) are compared with two loads and longer ones only call memcmp for their middle.
  [[gnu::always_inline]] const RecentBytes* Find(const uint8_t* begin, const uint8_t* p,
                                                 size_t left) const {
    if (left < 16) [[unlikely]] {
      return FindNearEnd(begin, p, left);
    }
    const uint64_t head = Load8(p);
    for (size_t i = 0; i < kSlots; ++i) {
      size_t index = (last_ + i) & (kSlots - 1);
      const RecentBytes& slot = slots_[index];
      // Also skips empty slots (length 0 wraps around).
      if (size_t{slot.length} - 1 >= left) continue;
      if (slot.length <= 8) {
        if (((head ^ heads_[index]) & masks_[index]) != 0) continue;
      } else if (head != heads_[index] || Load8(p + slot.length - 8) != tails_[index] ||
                 (slot.length > 16 && !SameMiddle(begin + slot.offset, p, slot.length))) {
        continue;
      }
      last_ = index;
      return &slot;
    }
    return nullptr;
  }
  void Insert(const uint8_t* begin, const RecentBytes& bytes) {
    next_ = (next_ + 1) & (kSlots - 1);
    slots_[next_] = bytes;
    uint64_t head = 0;
    std::memcpy(&head, begin + bytes.offset, std::min<size_t>(8, bytes.length));
    heads_[next_] = head;
    // The bits of the first `length` bytes of a little- or big-endian load.
    uint64_t mask = bytes.length >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes.length)) - 1;
    if constexpr (std::endian::native == std::endian::big) {
      if (bytes.length < 8) mask = ~(~uint64_t{0} >> (8 * bytes.length));
    }
    masks_[next_] = mask;
    tails_[next_] = bytes.length >= 8 ? Load8(begin + bytes.offset + bytes.length - 8) : 0;
    last_ = next_;
  }

 private:
  static_assert((kSlots & (kSlots - 1)) == 0, "a power of two");

  static uint64_t Load8(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }

  // Whether a[8, n - 8) == b[8, n - 8), word by word (a stack is a few words), reading only inside
  // [0, n).
  static bool SameMiddle(const uint8_t* a, const uint8_t* b, size_t n) {
    if (n > 64) return std::memcmp(a + 8, b + 8, n - 16) == 0;
    for (size_t at = 8; at + 8 < n; at += 8) {
      if (Load8(a + at) != Load8(b + at)) return false;
    }
    return true;
  }

  [[gnu::noinline]] const RecentBytes* FindNearEnd(const uint8_t* begin, const uint8_t* p,
                                                   size_t left) const {
    for (size_t i = 0; i < kSlots; ++i) {
      size_t index = (last_ + i) & (kSlots - 1);
      const RecentBytes& slot = slots_[index];
      if (slot.length == 0 || slot.length > left ||
          std::memcmp(begin + slot.offset, p, slot.length) != 0) {
        continue;
      }
      last_ = index;
      return &slot;
    }
    return nullptr;
  }

  std::array<RecentBytes, kSlots> slots_{};
  std::array<uint64_t, kSlots> heads_{};
  std::array<uint64_t, kSlots> masks_{};
  std::array<uint64_t, kSlots> tails_{};
  size_t next_ = 0;
  mutable size_t last_ = 0;
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
      if (!IsValidUtf8(text, length)) return Decline("string is not valid UTF-8");
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
  dump_.entries.reserve(entries_.size());
  dump_.entries.assign(entries_.begin(), entries_.end());
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

// [frame...], each frame a dict written once (and memoized when shared) or a memo get of one.
bool Reader::ReadNewFrames() {
  const uint8_t* start = p_;
  if (!Expect2(']', '(', "frames are not a list")) return false;
  bool all_gets = true;
  while (!At('e')) {
    if (At('}')) {
      if (!ReadFrameDict()) return false;
      all_gets = false;
      continue;
    }
    uint32_t id = MemoGet();
    if (id == kNone) return false;
    if (memo_[id].kind != SlotKind::kFrame) return Decline("frame is not a frame dict");
    raw_.frames.push_back(memo_[id].offset);
    raw_.frames_hash = (raw_.frames_hash ^ memo_[id].offset) * 0x9e3779b97f4a7c15ull;
  }
  ++p_;
  raw_.frames_offset = static_cast<uint32_t>(start - begin_);
  raw_.frames_length = static_cast<uint32_t>(p_ - start);
  raw_.frames_all_gets = all_gets;
  return true;
}

bool Reader::ReadFrameDict() {
  if (!Expect2('}', '(', "frame is not a dict")) return false;
  FrameIdentity frame;
  bool has_line = false;
  while (!At('u')) {
    uint32_t key;
    if (!ReadString(&key)) return false;
    std::string_view text = Text(key);
    if (text == "line") {
      if (has_line) return Decline("repeated frame key");
      has_line = true;
      if (!ReadInt(&frame.line)) return false;
    } else if (text == "name" || text == "filename") {
      uint32_t& target = text == "name" ? frame.name_slot : frame.filename_slot;
      if (target != kNone) return Decline("repeated frame key");
      if (!ReadString(&target)) return false;
      if (text == "filename" && frame.name_slot == kNone) frame.filename_first = true;
    } else {
      return Decline("unknown frame key");
    }
  }
  ++p_;
  uint32_t identity = static_cast<uint32_t>(identities_.size());
  identities_.push_back(frame);
  raw_.frames.push_back(identity);
  raw_.frames_hash = (raw_.frames_hash ^ identity) * 0x9e3779b97f4a7c15ull;
  if (At('q') || At('r')) return MemoPut(SlotKind::kFrame, identity, 0);
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

// The normalizer's FindStack: a stack whose frame dicts (by identity) were seen in that order.
StackId Reader::FindStack() {
  Visit(raw_.frames.size());
  absl::string_view key(reinterpret_cast<const char*>(raw_.frames.data()),
                        raw_.frames.size() * sizeof(uint32_t));
  auto it = stacks_by_identities_.find(key);
  return it == stacks_by_identities_.end() ? kNoStack : it->second;
}

uint32_t Reader::ResolveFrame(uint32_t identity) {
  FrameIdentity& f = identities_[identity];
  if (f.frame != kNone) return f.frame;
  Visit(6);
  Frame parsed;
  parsed.line = f.line;
  if (f.filename_first) {
    parsed.filename = Intern(f.filename_slot);
    if (f.name_slot != kNone) parsed.name = Intern(f.name_slot);
  } else {
    if (f.name_slot != kNone) parsed.name = Intern(f.name_slot);
    if (f.filename_slot != kNone) parsed.filename = Intern(f.filename_slot);
  }
  std::pair<uint64_t, int64_t> content{(uint64_t{parsed.name} << 32) | parsed.filename,
                                       parsed.line};
  auto [it, inserted] =
      frames_by_content_.try_emplace(content, static_cast<uint32_t>(dump_.frames.size()));
  if (inserted) {
    Keep(sizeof(Frame));
    dump_.frames.push_back(parsed);
  }
  f.frame = it->second;
  return f.frame;
}

// The normalizer's InternStackContent.
StackId Reader::InternStack() {
  dump_.has_stacks = true;
  Visit(raw_.frames.size());
  absl::string_view identity_key(reinterpret_cast<const char*>(raw_.frames.data()),
                                 raw_.frames.size() * sizeof(uint32_t));
  if (auto it = stacks_by_identities_.find(identity_key); it != stacks_by_identities_.end()) {
    return it->second;
  }
  ids_.clear();
  for (uint32_t identity : raw_.frames) ids_.push_back(ResolveFrame(identity));
  absl::string_view key(reinterpret_cast<const char*>(ids_.data()), ids_.size() * sizeof(uint32_t));
  StackId id;
  if (auto it = stacks_by_frames_.find(key); it != stacks_by_frames_.end()) {
    id = it->second;
  } else {
    Keep((ids_.size() + 1) * sizeof(uint32_t));
    id = static_cast<StackId>(dump_.stack_offsets.size() - 1);
    dump_.stack_frames.insert(dump_.stack_frames.end(), ids_.begin(), ids_.end());
    dump_.stack_offsets.push_back(static_cast<uint32_t>(dump_.stack_frames.size()));
    stacks_by_frames_.emplace(std::string(key), id);
  }
  stacks_by_identities_.emplace(std::string(identity_key), id);
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
