#include "fr/read/input_file.h"

namespace fr {

absl::StatusOr<InputFile> ReadInputFile(const std::string& path, const ReadOptions& options) {
  return absl::UnimplementedError("reading is not written yet");
}

absl::StatusOr<InputFile> ReadInputBytes(std::shared_ptr<const Buffer> bytes,
                                         const ReadOptions& options) {
  return absl::UnimplementedError("reading is not written yet");
}

}  // namespace fr
