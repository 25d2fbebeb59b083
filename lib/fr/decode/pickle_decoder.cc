#include "fr/decode/pickle_decoder.h"

namespace fr {

absl::StatusOr<Document> DecodePickle(std::shared_ptr<const Buffer> input,
                                      const PickleLimits& limits) {
  return absl::UnimplementedError("pickle decoding is not written yet");
}

}  // namespace fr
