// A safe decoder for the pickles PyTorch's flight recorder writes (torch::jit::Pickler, protocol
// 2) and for the same data re-pickled by CPython (protocols 2 to 5). It is a small stack machine
// over an allow-list of opcodes: it builds plain values (None, bool, int, float, str, list, tuple,
// dict) and refuses every opcode that could import or call anything (GLOBAL, REDUCE, BUILD, ...).
//
//   FR_ASSIGN_OR_RETURN(Document doc, DecodePickle(buffer));
//
// Errors name the byte offset and what was expected, e.g.
//   "byte 1234: opcode GLOBAL (0x63) is not allowed: flight-recorder dumps hold only plain data".
#ifndef FR_DECODE_PICKLE_DECODER_H_
#define FR_DECODE_PICKLE_DECODER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fr/base/buffer.h"
#include "fr/decode/document.h"

namespace fr {

// Larger pickles are refused (a ring buffer of 20000 entries with stacks is some 20 MB). Below it,
// value ids fit in 31 bits, which the decoder relies on.
inline constexpr uint64_t kMaxPickleInputSize = (uint64_t{1} << 31) - 1;

struct PickleLimits {
  // Deepest container nesting accepted (real dumps nest 5 deep): a container holding only scalars
  // is depth 1. Also bounds the number of open MARKs.
  uint32_t max_depth = 256;
};

// Decodes one pickle stream (PROTO ... STOP) from `input`. The result's strings point into
// `input`, which the Document keeps alive. Memo hits share one ValueId, so the document is a DAG
// (containers with several parents are marked: Document::shared); it is never cyclic and never
// deeper than limits.max_depth, so consumers may walk it without cycle checks.
//
// Stricter than CPython's pickle.load where no producer of dumps differs: trailing bytes after
// STOP, values or MARKs left on the stack at STOP, ints beyond int64, strings that are not strict
// UTF-8 (CPython lets lone surrogates through), and filling a list or dict after it was put into
// another container (how recursive structures are pickled) are all errors.
//
// Errors: InvalidArgument for a refused opcode or malformed structure, DataLoss for a truncated
// stream; messages start with "byte <offset>: ". Thread-safe; each thread reuses its own scratch.
absl::StatusOr<Document> DecodePickle(std::shared_ptr<const Buffer> input,
                                      const PickleLimits& limits = {});

}  // namespace fr

#endif  // FR_DECODE_PICKLE_DECODER_H_
