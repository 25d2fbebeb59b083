#include "fr/base/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "fmt/format.h"

namespace fr {

absl::Status ErrnoToStatus(int error, std::string_view what) {
  std::string message = fmt::format("{}: {}", what, std::strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace fr
