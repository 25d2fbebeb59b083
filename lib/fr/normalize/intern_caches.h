// The normalizer's caches (normalize.cc): what makes interning a dump's repeated shapes,
// stacks, dtype lists and keys cost a probe instead of a hash of their contents. Internal to
// lib/fr/normalize; each is a plain value with no knowledge of dumps.
//
//   ByteKeyInterner shapes;
//   uint64_t hash = ByteKeyInterner::Hash(bytes);
//   if (uint32_t id = shapes.Find(bytes, hash); id != ByteKeyInterner::kMissing) return id;
//   shapes.Insert(bytes, hash, next_id);
#ifndef FR_NORMALIZE_INTERN_CACHES_H_
#define FR_NORMALIZE_INTERN_CACHES_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "fr/decode/document.h"
#include "fr/model/string_table.h"

namespace fr {

// Interning of short byte strings (encoded shape lists, id sequences) by a 64-bit hash, keeping
// the bytes to verify hits: one cheap hash per lookup and no allocation on a hit. Each entry
// interns four or five such keys, so this is the normalizer's hottest path. A small direct-mapped
// table of recent hits sits in front of the hash map: a dump repeats a handful of shapes and
// stacks thousands of times, and one array probe is far cheaper than a map lookup.
class ByteKeyInterner {
 public:
  static constexpr uint32_t kMissing = std::numeric_limits<uint32_t>::max();

  static uint64_t Hash(absl::string_view key) {
    uint64_t hash = 0x9e3779b97f4a7c15ULL ^ key.size();
    size_t at = 0;
    for (; at + 8 <= key.size(); at += 8) {
      uint64_t word;
      std::memcpy(&word, key.data() + at, 8);
      hash = (hash ^ word) * 0xff51afd7ed558ccdULL;
      hash ^= hash >> 32;
    }
    for (; at < key.size(); ++at) {
      hash = (hash ^ static_cast<unsigned char>(key[at])) * 0xc4ceb9fe1a85ec53ULL;
    }
    return hash ^ (hash >> 29);
  }

  uint32_t Find(absl::string_view key, uint64_t hash) {
    Slot& recent = recent_[hash % kRecentSlots];
    if (recent.hash == hash && Matches(recent, key)) return recent.id;
    auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) return kMissing;
    if (Matches(it->second, key)) {
      recent = it->second;
      return it->second.id;
    }
    auto collided = collided_.find(key);
    return collided == collided_.end() ? kMissing : collided->second;
  }

  void Insert(absl::string_view key, uint64_t hash, uint32_t id) {
    Slot slot{hash, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id};
    auto [it, inserted] = by_hash_.try_emplace(hash, slot);
    if (inserted) {
      arena_.append(key.data(), key.size());
      recent_[hash % kRecentSlots] = slot;
    } else {
      collided_.emplace(std::string(key), id);
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t length = kMissing;  // never equal to a key's length: an empty recent slot
    uint32_t id = kMissing;
  };
  // Keys of by_hash_ are Hash() values, already mixed: hashing them again would be wasted work.
  struct IdentityHash {
    size_t operator()(uint64_t hash) const { return static_cast<size_t>(hash); }
  };
  static constexpr size_t kRecentSlots = 64;

  // Keys are a few dozen bytes: an inline word loop beats a call to memcmp.
  bool Matches(const Slot& slot, absl::string_view key) const {
    if (slot.length != key.size()) return false;
    const char* stored = arena_.data() + slot.offset;
    size_t at = 0;
    for (; at + 8 <= key.size(); at += 8) {
      uint64_t a, b;
      std::memcpy(&a, stored + at, 8);
      std::memcpy(&b, key.data() + at, 8);
      if (a != b) return false;
    }
    for (; at < key.size(); ++at) {
      if (stored[at] != key[at]) return false;
    }
    return true;
  }

  std::array<Slot, kRecentSlots> recent_;
  absl::flat_hash_map<uint64_t, Slot, IdentityHash> by_hash_;
  std::string arena_;
  absl::flat_hash_map<std::string, uint32_t> collided_;
};

// Results for lists whose items are memo-shared values, such as a stack's frame dicts or a list
// of dtype names: within one pickle such a list is determined by its item ids, which a few
// compares verify, so a list seen before costs no hashing of its contents. A small direct-mapped
// table: a dump repeats a few dozen stacks and dtype lists. JSON documents share no values and
// simply miss.
template <size_t kSlots, size_t kMaxItems>  // longer lists are not cached
class ItemIdsCache {
 public:
  static constexpr uint32_t kMissing = std::numeric_limits<uint32_t>::max();

  uint32_t Find(std::span<const ValueId> items) const {
    const Slot& slot = slots_[SlotOf(items)];
    if (slot.count != items.size()) return kMissing;
    for (size_t i = 0; i < items.size(); ++i) {
      if (slot.items[i] != items[i]) return kMissing;
    }
    return slot.result;
  }

  void Insert(std::span<const ValueId> items, uint32_t result) {
    if (items.size() > kMaxItems) return;
    Slot& slot = slots_[SlotOf(items)];
    slot.count = static_cast<uint32_t>(items.size());
    std::copy(items.begin(), items.end(), slot.items.begin());
    slot.result = result;
  }

 private:
  struct Slot {
    uint32_t count = kMissing;  // never a list's size: an empty slot
    uint32_t result = kMissing;
    std::array<ValueId, kMaxItems> items;
  };

  static size_t SlotOf(std::span<const ValueId> items) {
    if (items.empty()) return 0;
    uint32_t mixed = static_cast<uint32_t>(items.size()) * 0x9e3779b1u ^
                     items.front() * 0x85ebca77u ^ items.back() * 0xc2b2ae3du;
    return (mixed >> 16) % kSlots;
  }

  std::array<Slot, kSlots> slots_;
};

// Per-ValueId caches, one per thread and reused across documents: a slot is valid only when its
// stamp is the current document's, so starting a document costs nothing (no clearing of arrays as
// large as the document).
struct ValueCache {
  struct Slot {
    uint32_t stamp = 0;
    StringId string = kNoString;  // the interned string of a string value
    uint8_t field = 0xff;         // the EntryField of a key, 0xff until classified
  };
  std::vector<Slot> slots;
  uint32_t stamp = 0;

  void StartDocument(size_t values) {
    if (++stamp == 0) {  // wrapped: forget everything once
      std::fill(slots.begin(), slots.end(), Slot{});
      stamp = 1;
    }
    if (slots.size() < values) slots.resize(values);
  }

  Slot& At(ValueId value) {
    Slot& slot = slots[value];
    if (slot.stamp != stamp) slot = Slot{stamp};
    return slot;
  }
};

}  // namespace fr

#endif  // FR_NORMALIZE_INTERN_CACHES_H_
