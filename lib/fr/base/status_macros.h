// Early-return helpers for absl::Status, which Debian's Abseil 20220623 does not ship.
//
//   absl::StatusOr<Dump> Load(std::string_view path) {
//     FR_ASSIGN_OR_RETURN(std::shared_ptr<const Buffer> bytes, ReadInput(path));
//     FR_RETURN_IF_ERROR(Validate(*bytes));
//     ...
//   }
#ifndef FR_BASE_STATUS_MACROS_H_
#define FR_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FR_STATUS_CONCAT_INNER_(a, b) a##b
#define FR_STATUS_CONCAT_(a, b) FR_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define FR_RETURN_IF_ERROR(expr)                              \
  do {                                                        \
    if (absl::Status fr_status_ = (expr); !fr_status_.ok()) { \
      return fr_status_;                                      \
    }                                                         \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise moves the value
// into `lhs`, which may be a declaration.
#define FR_ASSIGN_OR_RETURN(lhs, rexpr) \
  FR_ASSIGN_OR_RETURN_IMPL_(FR_STATUS_CONCAT_(fr_statusor_, __LINE__), lhs, rexpr)

#define FR_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (!statusor.ok()) {                                 \
    return std::move(statusor).status();                \
  }                                                     \
  lhs = *std::move(statusor)

#endif  // FR_BASE_STATUS_MACROS_H_
