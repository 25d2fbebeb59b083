// An immutable run of bytes that decoded values may point into: a memory-mapped file or bytes
// owned on the heap (decompressed input, in-memory dumps, test data).
//
//   FR_ASSIGN_OR_RETURN(std::shared_ptr<const Buffer> file, Buffer::MapFile("/dumps/rank_3"));
//   std::string_view bytes = file->bytes();
//
// Buffers are shared (std::shared_ptr) because a decoded Document keeps zero-copy views into the
// bytes it came from and must keep them alive.
#ifndef FR_BASE_BUFFER_H_
#define FR_BASE_BUFFER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fr {

class Buffer {
 public:
  // Maps `path` read-only. An empty file gives an empty buffer. Errors: NotFound, PermissionDenied,
  // InvalidArgument (a directory or other non-regular file), each naming the path.
  static absl::StatusOr<std::shared_ptr<const Buffer>> MapFile(const std::string& path);

  // Reads `path` whole. Files up to kMaxReadSize go into a buffer this thread reuses for its next
  // ReadFile once nothing holds it any more: loading thousands of dumps then costs no page faults
  // and no unmapping per file, which measured faster than mapping each one. Larger files are
  // mapped (MapFile). Errors as MapFile's, plus Unavailable for a failed read.
  static absl::StatusOr<std::shared_ptr<const Buffer>> ReadFile(const std::string& path);
  static constexpr size_t kMaxReadSize = size_t{16} << 20;

  // Takes ownership of `bytes`.
  static std::shared_ptr<const Buffer> FromString(std::string bytes);

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  std::string_view bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  Buffer() = default;
  // Owns `mapping` (size bytes, from mmap), or is empty when it is nullptr.
  static std::shared_ptr<const Buffer> FromMapping(void* mapping, size_t size);

  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // non-null when data_ comes from mmap
  std::string owned_;
};

}  // namespace fr

#endif  // FR_BASE_BUFFER_H_
