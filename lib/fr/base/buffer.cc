#include "fr/base/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace fr {
namespace {

absl::Status ErrnoToStatus(int error, const std::string& path, std::string_view what) {
  std::string message = fmt::format("{}: {}: {}", path, what, std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Buffer>> Buffer::MapFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, path, "cannot open");
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    return ErrnoToStatus(error, path, "cannot stat");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(fmt::format("{}: not a regular file", path));
  }
  std::shared_ptr<Buffer> buffer(new Buffer());
  if (info.st_size > 0) {
    void* mapping = ::mmap(nullptr, info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int error = errno;
      ::close(fd);
      return ErrnoToStatus(error, path, "cannot map");
    }
    // Dumps are read once, front to back, right away. (The advice values are not bit flags, so
    // they take a call each.)
    ::madvise(mapping, info.st_size, MADV_SEQUENTIAL);
    ::madvise(mapping, info.st_size, MADV_WILLNEED);
    buffer->mapping_ = mapping;
    buffer->data_ = static_cast<const char*>(mapping);
    buffer->size_ = static_cast<size_t>(info.st_size);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return buffer;
}

std::shared_ptr<const Buffer> Buffer::FromString(std::string bytes) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->owned_ = std::move(bytes);
  buffer->data_ = buffer->owned_.data();
  buffer->size_ = buffer->owned_.size();
  return buffer;
}

Buffer::~Buffer() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

}  // namespace fr
