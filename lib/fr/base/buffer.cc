#include "fr/base/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/errno_status.h"
#include "fr/base/status_macros.h"

namespace fr {
namespace {

// "<path>: <what>: <strerror(errno)>" with its canonical code (errno_status.h).
absl::Status FileError(const std::string& path, std::string_view what) {
  int error = errno;  // before formatting can touch it
  return ErrnoToStatus(error, fmt::format("{}: {}", path, what));
}

// An open regular file; closes it when done.
class OpenFile {
 public:
  static absl::StatusOr<OpenFile> Open(const std::string& path) {
    OpenFile file;
    file.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file.fd_ < 0) return FileError(path, "cannot open");
    struct stat info;
    if (::fstat(file.fd_, &info) != 0) return FileError(path, "cannot stat");
    if (!S_ISREG(info.st_mode)) {
      return absl::InvalidArgumentError(fmt::format("{}: not a regular file", path));
    }
    file.size_ = static_cast<size_t>(info.st_size);
    return file;
  }
  OpenFile(OpenFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}
  ~OpenFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  int fd() const { return fd_; }
  size_t size() const { return size_; }

 private:
  OpenFile() = default;
  int fd_ = -1;
  size_t size_ = 0;
};

// Maps an open file whole (nullptr for an empty one); the mapping outlives the descriptor.
absl::StatusOr<void*> MapWhole(const OpenFile& file, const std::string& path) {
  if (file.size() == 0) return nullptr;
  void* mapping = ::mmap(nullptr, file.size(), PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (mapping == MAP_FAILED) return FileError(path, "cannot map");
  // Dumps are read once, front to back, right away. (The advice values are not bit flags, so
  // they take a call each.)
  ::madvise(mapping, file.size(), MADV_SEQUENTIAL);
  ::madvise(mapping, file.size(), MADV_WILLNEED);
  return mapping;
}

}  // namespace

std::shared_ptr<const Buffer> Buffer::FromMapping(void* mapping, size_t size) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  if (mapping != nullptr) {
    buffer->mapping_ = mapping;
    buffer->data_ = static_cast<const char*>(mapping);
    buffer->size_ = size;
  }
  return buffer;
}

absl::StatusOr<std::shared_ptr<const Buffer>> Buffer::MapFile(const std::string& path) {
  FR_ASSIGN_OR_RETURN(OpenFile file, OpenFile::Open(path));
  FR_ASSIGN_OR_RETURN(void* mapping, MapWhole(file, path));
  return FromMapping(mapping, file.size());
}

absl::StatusOr<std::shared_ptr<const Buffer>> Buffer::ReadFile(const std::string& path) {
  FR_ASSIGN_OR_RETURN(OpenFile file, OpenFile::Open(path));
  if (file.size() > kMaxReadSize) {
    FR_ASSIGN_OR_RETURN(void* mapping, MapWhole(file, path));
    return FromMapping(mapping, file.size());
  }
  // This thread's buffer, taken again when nothing else holds it any more (the document decoded
  // from the previous file is gone): no page faults, no unmapping per file.
  thread_local std::shared_ptr<Buffer> reusable;
  std::shared_ptr<Buffer> buffer;
  if (reusable != nullptr && reusable.use_count() == 1) {
    buffer = reusable;
  } else {
    buffer.reset(new Buffer());
    reusable = buffer;
  }
  buffer->owned_.resize(file.size());
  size_t done = 0;
  while (done < file.size()) {
    ssize_t got = ::pread(file.fd(), buffer->owned_.data() + done, file.size() - done,
                          static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return FileError(path, "cannot read");
    if (got == 0) break;  // the file shrank since fstat
    done += static_cast<size_t>(got);
  }
  buffer->owned_.resize(done);
  buffer->data_ = buffer->owned_.data();
  buffer->size_ = done;
  return std::shared_ptr<const Buffer>(std::move(buffer));
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
