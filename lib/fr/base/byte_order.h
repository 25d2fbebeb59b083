// Fixed-width integers read from unaligned bytes in a given byte order, whatever the host's:
// pickles store lengths and ints little-endian and floats big-endian. For the pickle decoder and
// the direct pickle reader, whose hottest loops read them.
//
//   uint32_t length = LoadLe32(p + 1);   // BINUNICODE's length after its opcode
#ifndef FR_BASE_BYTE_ORDER_H_
#define FR_BASE_BYTE_ORDER_H_

#include <bit>
#include <cstdint>
#include <cstring>

namespace fr {

inline uint32_t LoadLe16(const uint8_t* p) { return p[0] | (uint32_t{p[1]} << 8); }

inline uint32_t LoadLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

inline uint64_t LoadBe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

}  // namespace fr

#endif  // FR_BASE_BYTE_ORDER_H_
