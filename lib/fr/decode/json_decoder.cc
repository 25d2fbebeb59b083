#include "fr/decode/json_decoder.h"

namespace fr {

absl::StatusOr<Document> DecodeJson(std::shared_ptr<const Buffer> input, const JsonLimits& limits) {
  return absl::UnimplementedError("JSON decoding is not written yet");
}

}  // namespace fr
