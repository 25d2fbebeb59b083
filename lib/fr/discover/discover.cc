#include "fr/discover/discover.h"

namespace fr {

absl::StatusOr<Discovery> DiscoverDumps(const std::string& root, const DiscoverOptions& options) {
  return absl::UnimplementedError("discovery is not written yet");
}

}  // namespace fr
