// An errno as an absl::Status with the canonical code a caller can act on: one mapping for every
// stage that touches the filesystem (reading dumps, mapping files, discovery).
//
//   if (::stat(path.c_str(), &info) != 0) return ErrnoToStatus(errno, path + ": cannot stat");
//   // NotFoundError("/x/rank_3: cannot stat: No such file or directory")
#ifndef FR_BASE_ERRNO_STATUS_H_
#define FR_BASE_ERRNO_STATUS_H_

#include <string_view>

#include "absl/status/status.h"

namespace fr {

// "<what>: <strerror(error)>", as NotFoundError (ENOENT, ENOTDIR), PermissionDeniedError
// (EACCES, EPERM), or UnavailableError (anything else: the file may be readable another time).
absl::Status ErrnoToStatus(int error, std::string_view what);

}  // namespace fr

#endif  // FR_BASE_ERRNO_STATUS_H_
