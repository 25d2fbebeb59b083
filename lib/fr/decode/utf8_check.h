// The decoders' rule for a string's bytes: strict UTF-8 (simdjson's validator), with a fast
// answer for ASCII. Both pickle readers (decode/pickle_decoder.cc and the direct reader of
// normalize/) apply it, so a file is accepted or declined the same way by either.
#ifndef FR_DECODE_UTF8_CHECK_H_
#define FR_DECODE_UTF8_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simdjson.h"

namespace fr {

// Nearly every string in a dump is ASCII (names, paths, dtypes); checking 8 bytes at a time
// avoids the cost of a full validator call per short string.
inline bool IsAscii(const uint8_t* p, size_t n) {
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= p[i];
  return (acc & 0x8080808080808080ull) == 0;
}

inline bool IsStrictUtf8(const uint8_t* p, size_t n) {
  return IsAscii(p, n) || simdjson::validate_utf8(reinterpret_cast<const char*>(p), n);
}

}  // namespace fr

#endif  // FR_DECODE_UTF8_CHECK_H_
