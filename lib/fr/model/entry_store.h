// A dump's entries: an ordinary vector while the dump is being built, then packed, once the loader
// keeps the dump, into fixed-width rows a quarter of the size or less. Reading is the same either
// way and gives every field back exactly as it was written.
//
//   EntryStore entries;
//   entries.emplace_back().collective_seq_id = 7;   // building: a vector of Entry
//   entries.Pack();                                 // done: compact rows, read-only
//   const Entry entry = entries[0];                 // a copy, decoded from its row
//   for (const Entry& e : entries) { ... }          // each iteration decodes one row
//
// Why: a job keeps every rank's ring buffer for the whole analysis, and at 144 bytes an entry the
// entries were two thirds of what a rank costs (28.8 of 43 KB with 200-entry buffers): 100k
// ranks would need 4 GiB. A dump's entries are very regular (record ids and seqs count up, a
// group's timeout and thread never change, a few dozen distinct strings and shapes), so each
// field is stored as its offset from the dump's smallest value of that field, in as many bytes as
// the dump's largest offset needs (none for a field that never changes). This is lossless for any
// values, hostile ones included: a field whose values span the whole 64-bit range simply keeps
// 8 bytes. Rows stay fixed-width, so entry `i` is found in O(1).
//
// Building (emplace_back, push_back, reserve, assign, mutable_entry...) is allowed only before
// Pack(); afterwards the store is read-only (building on a packed store aborts). A packed entry
// has no address: keep indices or copies, never a pointer to the `e` of a loop (it dangles at
// the end of the iteration).
#ifndef FR_MODEL_ENTRY_STORE_H_
#define FR_MODEL_ENTRY_STORE_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "fr/model/entry.h"

namespace fr {

class EntryStore {
 public:
  using Vector = std::vector<Entry>;
  class const_iterator;

  EntryStore() = default;
  EntryStore(EntryStore&&) noexcept = default;
  EntryStore& operator=(EntryStore&&) noexcept = default;
  EntryStore(const EntryStore&) = delete;
  EntryStore& operator=(const EntryStore&) = delete;

  // Reading, packed or not. Entries come back by value: bind them to `const Entry&` or copy.
  size_t size() const { return packed_ ? packed_->size : open_.size(); }
  bool empty() const { return size() == 0; }
  // Inlined so that a caller reading one field decodes only that field.
  [[gnu::always_inline]] Entry operator[](size_t i) const { return packed_ ? Unpack(i) : open_[i]; }
  Entry front() const { return (*this)[0]; }
  Entry back() const { return (*this)[size() - 1]; }
  const_iterator begin() const;
  const_iterator end() const;

  // Building, before Pack() only.
  void reserve(size_t n) { Open().reserve(n); }
  Entry& emplace_back() { return Open().emplace_back(); }
  void push_back(const Entry& entry) { Open().push_back(entry); }
  template <typename Iterator>
  void assign(Iterator first, Iterator last) {
    Open().assign(first, last);
  }
  Entry& mutable_entry(size_t i) { return Open()[i]; }
  // The vector itself, for edits the methods above do not cover.
  Vector& open_vector() { return Open(); }
  // Empties the store, packed or not, and makes it buildable again.
  void clear();

  // Packs the entries into rows and frees the vector. Idempotent. Entries read the same before
  // and after.
  void Pack();
  bool packed() const { return packed_ != nullptr; }
  // Bytes held (rows or vector capacity), for memory accounting.
  size_t MemoryBytes() const;

 private:
  // One per Entry field. Record ids are stored less their row (they count up by one, so the
  // column is constant), start and completion times less the enqueue time (TimeOffset); the
  // flags column holds the three booleans, then op and state with their usual low bits first
  // (every op kind and state fits in 10 bits; the rest of each byte sits above, so any value
  // survives), and at bits 10 and 11 TimeOffset's two flags.
  enum Column : int {
    kRecordId,
    kPgId,
    kCollectiveSeqId,
    kP2pSeqId,
    kOpId,
    kTimeCreated,
    kTimeStarted,
    kTimeCompleted,
    kTimeoutMs,
    kDurationMs,
    kPeerRank,
    kGroup,
    kProfilingName,
    kBackend,
    kOpName,
    kThreadName,
    kThreadId,
    kInputSizes,
    kOutputSizes,
    kInputDtypes,
    kOutputDtypes,
    kStack,
    kFlags,
    kColumnCount
  };
  using Row = std::array<uint64_t, kColumnCount>;

  // Values are packed in an order-preserving unsigned form: signed fields with their sign bit
  // flipped (so that -1 sorts below 0), ids and the duration's bits as they are.
  static constexpr uint64_t kSignFlip = uint64_t{1} << 63;
  static uint64_t FromSigned(int64_t v) { return static_cast<uint64_t>(v) ^ kSignFlip; }
  static int64_t ToSigned(uint64_t v) { return static_cast<int64_t>(v ^ kSignFlip); }
  static Row ColumnsOf(const Entry& entry, size_t row, bool durations_as_float);
  // A time column's value for `time`, stored as its offset from `created` (modulo 2^64, so any
  // values come back); kUnknown as the special value. `*minus_one`: the time is created - 1, whose
  // offset is the special value too (the flags column tells them apart).
  static uint64_t TimeOffset(int64_t time, int64_t created, bool* minus_one) {
    if (time == kUnknown) return FromSigned(kUnknown);
    const int64_t offset =
        static_cast<int64_t>(static_cast<uint64_t>(time) - static_cast<uint64_t>(created));
    *minus_one = offset == kUnknown;
    return FromSigned(offset);
  }
  static int64_t TimeFromOffset(uint64_t value, int64_t created, bool minus_one) {
    const int64_t offset = ToSigned(value);
    if (offset == kUnknown && !minus_one) return kUnknown;
    return static_cast<int64_t>(static_cast<uint64_t>(created) + static_cast<uint64_t>(offset));
  }
  // The value each column most often holds apart from its ordinary range (kUnknown, kNoStack,
  // NaN): a column that mixes it with a narrow range stores it as offset 0 instead of widening.
  static constexpr uint64_t SpecialOf(int column) {
    switch (column) {
      case kDurationMs:
        return 0x7ff8'0000'0000'0000;  // the bits of quiet_NaN()
      case kGroup:
      case kProfilingName:
      case kBackend:
      case kOpName:
      case kThreadName:
      case kThreadId:
      case kInputSizes:
      case kOutputSizes:
      case kInputDtypes:
      case kOutputDtypes:
      case kStack:
        return 0xffff'ffff;  // kNoStack, kNoString
      case kFlags:
        return 0;
      default:
        return uint64_t{0x7fff'ffff'ffff'ffff};  // FromSigned(kUnknown)
    }
  }

  Vector& Open();

  // How a packed store lays out its rows. Held apart from the store, so that a dump (of which a
  // job holds thousands, and the loader briefly two copies of each) stays small.
  struct Layout {
    size_t size = 0;
    uint32_t row_bytes = 0;
    // Durations are stored as the float bits they came from (PyTorch records a float) when every
    // one survives the round trip, else as the double's bits.
    bool durations_as_float = false;
    std::array<uint8_t, kColumnCount> position{};  // byte offset within a row
    std::array<bool, kColumnCount> zero_is_special{};
    // What a row's offset is added to (less one where zero_is_special: offsets then start at 1).
    std::array<uint64_t, kColumnCount> base{};
    // The low bytes a row holds of each column's offset; 0: every row holds base.
    std::array<uint64_t, kColumnCount> mask{};
    // `size` rows of `row_bytes`, then 8 bytes of padding so that every field is read with one
    // unaligned 8-byte load.
    std::unique_ptr<uint8_t[]> rows;
  };

  // Branch-free: a column of width 0 has mask 0 and reads as its base.
  [[gnu::always_inline]] static uint64_t Value(const Layout& layout, const uint8_t* row,
                                               int column) {
    uint64_t offset;
    std::memcpy(&offset, row + layout.position[column], sizeof(offset));
    offset &= layout.mask[column];
    const uint64_t value = layout.base[column] + offset;
    return offset == 0 && layout.zero_is_special[column] ? SpecialOf(column) : value;
  }

  static double DurationOf(const Layout& layout, uint64_t value) {
    if (!layout.durations_as_float || value == SpecialOf(kDurationMs)) {
      return std::bit_cast<double>(value);
    }
    return std::bit_cast<float>(static_cast<uint32_t>(value));
  }

  [[gnu::always_inline]] Entry Unpack(size_t i) const {
    const Layout& layout = *packed_;
    const uint8_t* row = layout.rows.get() + i * layout.row_bytes;
    auto value = [&](int column) { return Value(layout, row, column); };
    Entry e;
    e.record_id = ToSigned(value(kRecordId) + i);
    e.pg_id = ToSigned(value(kPgId));
    e.collective_seq_id = ToSigned(value(kCollectiveSeqId));
    e.p2p_seq_id = ToSigned(value(kP2pSeqId));
    e.op_id = ToSigned(value(kOpId));
    const uint64_t flags = value(kFlags);
    e.time_created_ns = ToSigned(value(kTimeCreated));
    e.time_discovered_started_ns =
        TimeFromOffset(value(kTimeStarted), e.time_created_ns, (flags >> 10) & 1);
    e.time_discovered_completed_ns =
        TimeFromOffset(value(kTimeCompleted), e.time_created_ns, (flags >> 11) & 1);
    e.timeout_ms = ToSigned(value(kTimeoutMs));
    e.duration_ms = DurationOf(layout, value(kDurationMs));
    e.peer_rank = ToSigned(value(kPeerRank));
    e.group = static_cast<uint32_t>(value(kGroup));
    e.profiling_name = static_cast<StringId>(value(kProfilingName));
    e.backend = static_cast<StringId>(value(kBackend));
    e.op_name = static_cast<StringId>(value(kOpName));
    e.thread_name = static_cast<StringId>(value(kThreadName));
    e.thread_id = static_cast<StringId>(value(kThreadId));
    e.input_sizes = static_cast<ShapeListId>(value(kInputSizes));
    e.output_sizes = static_cast<ShapeListId>(value(kOutputSizes));
    e.input_dtypes = static_cast<DtypeListId>(value(kInputDtypes));
    e.output_dtypes = static_cast<DtypeListId>(value(kOutputDtypes));
    e.stack = static_cast<StackId>(value(kStack));
    e.retired = flags & 1;
    e.is_p2p = (flags >> 1) & 1;
    e.state_from_batch = (flags >> 2) & 1;
    e.state = static_cast<EntryState>(((flags >> 3) & 0x3) | ((flags >> 14) & 0xfc));
    e.op = static_cast<OpKind>(((flags >> 5) & 0x1f) | ((flags >> 17) & 0xe0));
    return e;
  }

  Vector open_;                     // while building
  std::unique_ptr<Layout> packed_;  // once packed; open_ is then empty
};

// Iterates by value: `for (const Entry& e : store)` binds each decoded entry for one iteration.
class EntryStore::const_iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Entry;
  using difference_type = std::ptrdiff_t;
  using reference = Entry;
  using pointer = void;

  const_iterator() = default;
  const_iterator(const EntryStore* store, size_t i) : store_(store), i_(i) {}
  [[gnu::always_inline]] Entry operator*() const { return (*store_)[i_]; }
  const_iterator& operator++() {
    ++i_;
    return *this;
  }
  const_iterator operator++(int) {
    const_iterator old = *this;
    ++i_;
    return old;
  }
  friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.i_ == b.i_; }
  friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
    return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
  }

 private:
  const EntryStore* store_ = nullptr;
  size_t i_ = 0;
};

inline EntryStore::const_iterator EntryStore::begin() const { return {this, 0}; }
inline EntryStore::const_iterator EntryStore::end() const { return {this, size()}; }

static_assert(std::endian::native == std::endian::little,
              "packed rows are read with native little-endian loads");

}  // namespace fr

#endif  // FR_MODEL_ENTRY_STORE_H_
