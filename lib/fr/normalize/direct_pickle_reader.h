// A direct reader for the exact pickle layout that PyTorch's flight recorder writes
// (torch::jit::Pickler, protocol 2, dump versions 2.2 and newer): it fills a RankDump straight from
// the byte stream, without building the Document that DecodePickle + NormalizeDump go through.
//
//   DirectReadResult read = ReadTorchPickleDirect(bytes, /*rank=*/3);
//   if (read.dump.has_value()) {
//     use(*read.dump);  // identical to NormalizeDump(DecodePickle(bytes), 3)
//   } else {
//     // declined (read.decline_reason says why): take the general path
//   }
//
// Why: building the Document (a value per int, string and container) is most of the cost of
// reading a dump, and every real dump has the same few shapes of data in the same order.
//
// The contract: whenever the reader accepts bytes, its RankDump is identical in every field to
// what DecodePickle followed by NormalizeDump (with the same limits) produces for them: the same
// interned strings in the same order, the same shape, dtype, frame and stack tables, groups,
// statuses, comm state and oddities. It declines, and never fails, on anything it was not built
// for: another opcode or protocol (CPython re-pickles), a key it does not know, a type or order
// it does not expect, a version before 2.2, anything the general path would refuse or count as an
// unusual oddity, and inputs that could come near NormalizeLimits. Declining is always allowed;
// accepting is only allowed when the result is certain. It reads only inside `bytes`, takes memory
// and time in proportion to them, and never executes anything.
#ifndef FR_NORMALIZE_DIRECT_PICKLE_READER_H_
#define FR_NORMALIZE_DIRECT_PICKLE_READER_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "fr/model/rank_dump.h"
#include "fr/normalize/normalize.h"

namespace fr {

struct DirectReadResult {
  // The dump, when the bytes were read; nullopt when declined.
  std::optional<RankDump> dump;
  // Why it declined (a constant text, "" when read), and at which byte, for tests and diagnostics.
  std::string_view decline_reason;
  uint64_t decline_offset = 0;
};

// Reads one dump of rank `rank` from `bytes`. Thread-safe.
DirectReadResult ReadTorchPickleDirect(std::string_view bytes, int64_t rank,
                                       const NormalizeLimits& limits = {});

}  // namespace fr

#endif  // FR_NORMALIZE_DIRECT_PICKLE_READER_H_
