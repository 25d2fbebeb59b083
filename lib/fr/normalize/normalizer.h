// The normalizer's own parts, shared by its three files and by nothing else (not installed, not
// included outside lib/fr/normalize): normalize.cc runs a document through it (top level,
// errors, oddities), pg_config.cc reads the groups (pg_config, pg_status, comm state) and
// entry_reader.cc the entries with the interning of their shapes, dtypes and stacks, the hot
// path (its functions stay in one file so that they inline into each other).
#ifndef FR_NORMALIZE_NORMALIZER_H_
#define FR_NORMALIZE_NORMALIZER_H_

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fr/decode/document.h"
#include "fr/model/rank_dump.h"
#include "fr/normalize/entry_keys.h"
#include "fr/normalize/intern_caches.h"
#include "fr/normalize/normalize.h"
#include "fr/normalize/normalize_budget.h"
#include "fr/normalize/profiling_name.h"

namespace fr::normalize_internal {

// "12" -> 12; false for anything else (signs, spaces, overflow, empty).
bool ParseInt(std::string_view text, int64_t* value);
// `key` cut to a bounded length at a UTF-8 character boundary, for oddity names.
std::string_view OddityKey(std::string_view key);

// Builds one RankDump from one Document. Holds the interning caches for the duration.
class Normalizer {
 public:
  Normalizer(const Document& doc, const NormalizeLimits& limits, RankDump* dump)
      : doc_(doc), dump_(*dump), budget_(limits, doc.input().size()) {
    cache_.StartDocument(doc.value_count());
  }

  NormalizeCost cost() const { return budget_.cost(); }

  absl::Status Run();

 private:
  absl::Status Error(ValueId value, std::string_view where, std::string_view what) const;

  // Over a budget of NormalizeLimits at `value`.
  // Out of line and cold, as every error: the per-entry paths that check budgets stay small.
  [[gnu::cold, gnu::noinline]] absl::Status BudgetError(ValueId value,
                                                        std::string_view where) const;

  [[gnu::cold, gnu::noinline]] absl::Status EntryBudgetError(ValueId entry, size_t index) const;

  // Counts an oddity by name: indexed, since a hostile file can name thousands of distinct ones.
  void Oddity(std::string_view name);

  absl::StatusOr<std::string> StringOrError(ValueId value, std::string_view key);

  absl::Status NormalizeVersion(ValueId value);

  // Reads an int that may be written as a JSON string ("-1"), as pg_status values are.
  absl::StatusOr<int64_t> IntLike(ValueId value, std::string_view where);

  uint32_t GroupByName(StringId name);

  absl::Status NormalizePgConfig(ValueId config);

  // A group's ranks, from a list of ints or a string "[0, 1, 2]" (its `ok` says whether it
  // parsed), read once per value: every group that lists the same value (a pickle memoizes every
  // string, and shares a list it was given several times) then copies the result, within budget.
  struct ParsedRanks {
    SharedRanks ranks;
    bool ok = false;
  };
  // A group listed twice (1.4 ids) holds both lists, in file order.
  static void AppendRanks(const SharedRanks& ranks, ProcessGroup* group);
  absl::StatusOr<const ParsedRanks*> RankList(ValueId value, const std::string& where);

  absl::Status NormalizePgStatus(ValueId status);

  // Flattens {comm: {key: value}} into "comm.key" -> value pairs. The pairs are kept as text, so
  // a dict shared by many comms (memo hits) is copied for each of them, within the budget.
  absl::Status NormalizeCommState(ValueId state, std::string_view name);

  // An upper bound of RenderScalar(value).size(), without rendering it.
  size_t RenderedSize(ValueId value) const;

  std::string RenderScalar(ValueId value) const;

  absl::Status NormalizeEntries(ValueId entries);

  // The values an entry names that are resolved once all of its keys were read.
  struct EntryRefs {
    ValueId group_name = kNoValue;
    ValueId group_desc = kNoValue;
    ValueId profiling_name = kNoValue;
  };

  absl::Status NormalizeEntry(ValueId value, size_t index);

  // The entry key `key` of entries[index] holds a value of the wrong type.
  absl::Status FieldError(ValueId field, size_t index, ValueId key,
                          std::string_view expected) const;
  std::string FieldWhere(size_t index, ValueId key) const;

  // Readers of one field: true when the value has the expected type (and was stored). Kept free
  // of Status on the success path, which runs for every key of every entry.
  bool ReadInt(ValueId field, int64_t* target) const;

  // Dumps before 1.1 stored microseconds; the model keeps nanoseconds. A count of microseconds
  // too large for a nanosecond int64 (centuries past 2262) is no clock reading: it is refused
  // as a wrong value rather than wrapped into a plausible-looking one.
  bool ReadMicroseconds(ValueId field, int64_t* target_ns) const;

  // None in pickles and 0 in JSON both mean "not yet".
  bool ReadTime(ValueId field, int64_t* target) const;

  bool ReadBool(ValueId field, bool* target) const;

  // thread_id is a decimal string, but some writers store an int.
  bool ReadString(ValueId field, StringId* target);

  bool ReadDuration(ValueId field, double* target) const;

  // (name, desc), as a tuple in pickles and a list in JSON.
  bool ReadProcessGroup(ValueId field, EntryRefs* refs) const;

  bool ReadState(ValueId field, EntryState* state);

  // The general reader: every key is classified and checked, unknown keys are counted, and the
  // first wrong value is an error naming the entry, the key and the byte offset.
  absl::Status ReadEntryByKeys(ValueId value, std::span<const ValueId> pairs, size_t index,
                               Entry* entry, EntryRefs* refs);

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
  void LearnLayout(std::span<const ValueId> pairs);

  // Reads an entry whose keys are exactly the learned layout's. False, with nothing reported,
  // when they are not or when any value is not of the common type: ReadEntryByKeys then reads the
  // entry again and names what is wrong.
  bool ReadEntryByLayout(std::span<const ValueId> pairs, Entry* entry, EntryRefs* refs);

  // States are three strings; map each interned one once.
  EntryStateCache states_;

  void AssignGroup(Entry* entry, ValueId name, ValueId desc);

  // What a profiling_name says, parsed once per distinct name.

  // "nccl:send 0->1" -> backend "nccl", op "send", peer = the group's rank 1 as a global rank.
  void ParseProfilingName(ValueId text, Entry* entry);

  // Returned by InternShapes and InternDtypes for a value of the wrong type (never a real id).
  static constexpr uint32_t kInvalidList = std::numeric_limits<uint32_t>::max();

  // The id of a list of shapes ([[8, 1024], []]), or kInvalidList when `shapes` is not one or the
  // budget ran out (ShapesError then says which and where).
  ShapeListId InternShapes(ValueId shapes);

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

  ShapeListId InternShapeContent(ValueId shapes);

  // A few values of a shape list (how many shapes, the first shape's rank and its first and last
  // dims), mixed: enough to tell apart the handful of shapes a dump repeats, so that a recent one
  // is found by one probe and a compare against its stored encoding, without building and
  // hashing the whole key. Values of the wrong type only make the sample miss.
  uint64_t SampleShapes(std::span<const ValueId> items) const;

  // Whether `items` is exactly shape list `id`, compared against its stored encoding.
  bool SameShapes(std::span<const ValueId> items, ShapeListId id) const;

  // Why InternShapes refused `shapes`.
  absl::Status ShapesError(ValueId shapes, const std::string& where) const;

  // The id of a list of dtype names (["Float"]), or kInvalidList when `dtypes` is not one.
  DtypeListId InternDtypes(ValueId dtypes);

  DtypeListId InternDtypeContent(ValueId dtypes);

  // Why InternDtypes refused `dtypes`.
  absl::Status DtypesError(ValueId dtypes, const std::string& where) const;

  // The stack of a frames list already seen in this document, or kNoStack. Entries with the same
  // stack list the same shared frame dicts: one lookup by their ids.
  StackId FindStack(ValueId frames);

  absl::StatusOr<StackId> InternStack(ValueId frames, size_t index);

  absl::StatusOr<StackId> InternStackContent(ValueId frames, size_t index);

  absl::StatusOr<StackId> InternStackByFrames(ValueId frames_list,
                                              std::span<const ValueId> frame_values, size_t index);

  absl::StatusOr<uint32_t> InternFrame(ValueId frame, size_t index);

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
  ProfilingNameCache names_;
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

}  // namespace fr::normalize_internal

#endif  // FR_NORMALIZE_NORMALIZER_H_
