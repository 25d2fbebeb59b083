// Decodes the JSON variant of flight-recorder dumps (from _dump_nccl_trace_json and the debug
// HTTP handlers) with simdjson into the same Document a pickle gives, so that one normalizer serves
// both. JSON objects become dicts (keys in file order), arrays become lists, integers that fit in
// int64 become ints, other numbers floats.
//
//   FR_ASSIGN_OR_RETURN(Document doc, DecodeJson(buffer));
#ifndef FR_DECODE_JSON_DECODER_H_
#define FR_DECODE_JSON_DECODER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "fr/base/buffer.h"
#include "fr/decode/document.h"

namespace fr {

struct JsonLimits {
  uint32_t max_depth = 256;
};

// Errors: InvalidArgument (malformed JSON, too deep), DataLoss (truncated); messages start with
// "byte <offset>: ".
absl::StatusOr<Document> DecodeJson(std::shared_ptr<const Buffer> input,
                                    const JsonLimits& limits = {});

}  // namespace fr

#endif  // FR_DECODE_JSON_DECODER_H_
