// Byte strings the direct pickle reader read before, with what they were read as, so that the
// same bytes met again are taken as read without parsing them. Reading a pickle only depends on
// its bytes and the memo, whose slots never change once put (ids are sequential here), so the same
// bytes at a later place read the same: a dump repeats a handful of shape lists and stacks
// thousands of times, and a compare is much cheaper than parsing and hashing them again.
// Internal to lib/fr/normalize (direct_pickle_*.cc).
//
//   RecentByteCache<8> recent_shapes;
//   if (const RecentBytes* seen = recent_shapes.Find(begin, p, end - p)) {
//     p += seen->length;  // the shape list seen->id, without parsing it
//   } else {
//     ... parse it ...
//     recent_shapes.Insert(begin, RecentBytes{offset, length, id, count});
//   }
#ifndef FR_NORMALIZE_RECENT_BYTE_CACHE_H_
#define FR_NORMALIZE_RECENT_BYTE_CACHE_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fr::direct_pickle_internal {

// One byte string read before: where it is and what it was read as.
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

}  // namespace fr::direct_pickle_internal

#endif  // FR_NORMALIZE_RECENT_BYTE_CACHE_H_
