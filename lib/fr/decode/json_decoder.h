// Decodes the JSON variant of flight-recorder dumps (from _dump_nccl_trace_json and the debug
// HTTP handlers) with simdjson into the same Document a pickle gives, so that one normalizer serves
// both. JSON objects become dicts (keys in file order), arrays become lists, integers that fit in
// int64 become ints, other numbers floats (correctly rounded). Every value's source_offset is the
// byte offset of its token. Strings without escapes point into the input (zero-copy, as pickle
// strings do); escaped ones are unescaped into the document. A leading UTF-8 BOM is skipped.
//
// How: simdjson's DOM parser validates the whole input (fast, strict); its On Demand API, which
// exposes token positions, then builds the document iteratively (no recursion per nesting level).
// Rejected input is re-read by a small strict checker to name the offending byte. The parsers are
// thread-local and reused, so decoding files in parallel on a thread pool is fine.
//
//   FR_ASSIGN_OR_RETURN(Document doc, DecodeJson(buffer));
#ifndef FR_DECODE_JSON_DECODER_H_
#define FR_DECODE_JSON_DECODER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fr/base/buffer.h"
#include "fr/decode/document.h"

namespace fr {

// Decoding takes about kJsonBytesPerInputByte bytes of memory per input byte at its peak:
// simdjson's validating pass (tape 8, structural indexes 4, strings 5/3), its On Demand pass
// (indexes 4, strings 5/3), the padded copy (1) and the document (up to one 24-byte value per two
// input bytes). Above kJsonFreeValidatorAboveBytes the validating pass is freed before the rest
// is allocated, and the peak is the larger of the two phases: kLargeJsonBytesPerInputByte.
inline constexpr uint64_t kJsonBytesPerInputByte = 34;
inline constexpr uint64_t kLargeJsonBytesPerInputByte = 20;
inline constexpr uint64_t kJsonFreeValidatorAboveBytes = uint64_t{8} << 20;
// JSON dumps hold no stacks: a full 20000-entry ring buffer is some 12 MB. Twenty times that
// is accepted by default (about 5 GB while decoding).
inline constexpr uint64_t kMaxJsonInputSize = uint64_t{256} << 20;

struct JsonLimits {
  // Deepest nesting of arrays and objects accepted (the top-level container is depth 1).
  uint32_t max_depth = 256;
  // Larger inputs are refused before anything is allocated for them (at most 4 GiB - 1, so that
  // offsets fit in 32 bits).
  uint64_t max_input_bytes = kMaxJsonInputSize;
};

// Errors: InvalidArgument (malformed JSON, too deep, trailing content, an integer outside int64 or
// a number outside the double range), DataLoss (the input ends early: a truncated dump),
// ResourceExhausted (input over limits.max_input_bytes, or memory ran out; the message names the
// input size and the limit); messages start with "byte <offset>: ". NaN and Infinity,
// which Python's json accepts, are rejected (flight-recorder dumps never contain them).
absl::StatusOr<Document> DecodeJson(std::shared_ptr<const Buffer> input,
                                    const JsonLimits& limits = {});

}  // namespace fr

#endif  // FR_DECODE_JSON_DECODER_H_
