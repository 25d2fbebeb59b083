// The keys of a flight-recorder entry as values: one classifier for both readers of entries (the
// normalizer, normalize.cc, and the direct pickle reader, direct_pickle_reader.cc), so that they
// cannot drift on which keys exist (docs/dump-format.md, "Entries").
//
//   EntryField field = ClassifyEntryKey("time_created_ns");   // EntryField::kTimeCreatedNs
//   if (IsLegacyEntryKey(field)) ...                           // seq_id, time_created_us
#ifndef FR_NORMALIZE_ENTRY_KEYS_H_
#define FR_NORMALIZE_ENTRY_KEYS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "fr/model/entry.h"
#include "fr/model/string_table.h"

namespace fr {

enum class EntryField : uint8_t {
  kUnknown,
  kFrames,
  kRecordId,
  kPgId,
  kProcessGroup,
  kThreadName,
  kThreadId,
  kCollectiveSeqId,
  kSeqId,  // 1.x name of collective_seq_id
  kP2pSeqId,
  kOpId,
  kProfilingName,
  kTimeCreatedNs,
  kTimeCreatedUs,  // before 1.1
  kDurationMs,
  kInputSizes,
  kInputDtypes,
  kOutputSizes,
  kOutputDtypes,
  kState,
  kTimeDiscoveredStartedNs,
  kTimeDiscoveredCompletedNs,
  kRetired,
  kTimeoutMs,
  kIsP2p,
  kCount,  // not a field: how many there are
};

// Every entry repeats the same ~22 keys, so this runs tens of thousands of times per file: a
// switch on length keeps it to one or two comparisons.
inline EntryField ClassifyEntryKey(std::string_view key) {
  switch (key.size()) {
    case 5:
      if (key == "op_id") return EntryField::kOpId;
      if (key == "pg_id") return EntryField::kPgId;
      if (key == "state") return EntryField::kState;
      break;
    case 6:
      if (key == "frames") return EntryField::kFrames;
      if (key == "is_p2p") return EntryField::kIsP2p;
      if (key == "seq_id") return EntryField::kSeqId;
      break;
    case 7:
      if (key == "retired") return EntryField::kRetired;
      break;
    case 9:
      if (key == "record_id") return EntryField::kRecordId;
      if (key == "thread_id") return EntryField::kThreadId;
      break;
    case 10:
      if (key == "p2p_seq_id") return EntryField::kP2pSeqId;
      if (key == "timeout_ms") return EntryField::kTimeoutMs;
      break;
    case 11:
      if (key == "thread_name") return EntryField::kThreadName;
      if (key == "input_sizes") return EntryField::kInputSizes;
      if (key == "duration_ms") return EntryField::kDurationMs;
      break;
    case 12:
      if (key == "input_dtypes") return EntryField::kInputDtypes;
      if (key == "output_sizes") return EntryField::kOutputSizes;
      break;
    case 13:
      if (key == "process_group") return EntryField::kProcessGroup;
      if (key == "output_dtypes") return EntryField::kOutputDtypes;
      break;
    case 14:
      if (key == "profiling_name") return EntryField::kProfilingName;
      break;
    case 15:
      if (key == "time_created_ns") return EntryField::kTimeCreatedNs;
      if (key == "time_created_us") return EntryField::kTimeCreatedUs;
      break;
    case 17:
      if (key == "collective_seq_id") return EntryField::kCollectiveSeqId;
      break;
    case 26:
      if (key == "time_discovered_started_ns") return EntryField::kTimeDiscoveredStartedNs;
      break;
    case 28:
      if (key == "time_discovered_completed_ns") return EntryField::kTimeDiscoveredCompletedNs;
      break;
  }
  return EntryField::kUnknown;
}

// Keys of old dump versions that need a conversion (1.x seq_id, microseconds before 1.1): the
// normalizer reads them, the direct reader hands such dumps to it.
inline bool IsLegacyEntryKey(EntryField field) {
  return field == EntryField::kSeqId || field == EntryField::kTimeCreatedUs;
}

// An entry's state ("scheduled", "started", "completed"; anything else kUnknown), mapped once
// per interned string: a dump spells out the same three strings thousands of times. Both readers
// keep one per dump.
class EntryStateCache {
 public:
  [[gnu::always_inline]] EntryState Get(StringId state, const StringTable& strings) {
    if (state < state_of_.size() && state_of_[state] != kNotParsed) [[likely]] {
      return static_cast<EntryState>(state_of_[state]);
    }
    return Parse(state, strings);
  }

 private:
  static constexpr uint8_t kNotParsed = 0xff;

  [[gnu::noinline]] EntryState Parse(StringId state, const StringTable& strings) {
    std::string_view text = strings.view(state);
    EntryState parsed = text == "completed"   ? EntryState::kCompleted
                        : text == "started"   ? EntryState::kStarted
                        : text == "scheduled" ? EntryState::kScheduled
                                              : EntryState::kUnknown;
    if (state >= state_of_.size()) state_of_.resize(state + 1, kNotParsed);
    state_of_[state] = static_cast<uint8_t>(parsed);
    return parsed;
  }

  std::vector<uint8_t> state_of_;
};

}  // namespace fr

#endif  // FR_NORMALIZE_ENTRY_KEYS_H_
