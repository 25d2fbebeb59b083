#include "fr/base/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(ErrnoStatusTest, AMissingFileIsNotFound) {
  EXPECT_EQ(ErrnoToStatus(ENOENT, "x").code(), absl::StatusCode::kNotFound);
  // A path through a file ("dumps/rank_0/x" where rank_0 is a file) is missing too.
  EXPECT_EQ(ErrnoToStatus(ENOTDIR, "x").code(), absl::StatusCode::kNotFound);
}

TEST(ErrnoStatusTest, RefusedAccessIsPermissionDenied) {
  EXPECT_EQ(ErrnoToStatus(EACCES, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoToStatus(EPERM, "x").code(), absl::StatusCode::kPermissionDenied);
}

TEST(ErrnoStatusTest, AnythingElseMayWorkAnotherTime) {
  EXPECT_EQ(ErrnoToStatus(EIO, "x").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ErrnoToStatus(EMFILE, "x").code(), absl::StatusCode::kUnavailable);
}

TEST(ErrnoStatusTest, TheMessageSaysWhatFailedAndWhy) {
  EXPECT_EQ(ErrnoToStatus(ENOENT, "/d/rank_3: cannot open").message(),
            std::string("/d/rank_3: cannot open: ") + std::strerror(ENOENT));
}

}  // namespace
}  // namespace fr
