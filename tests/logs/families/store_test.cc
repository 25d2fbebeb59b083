// The store family (lib/fr/logs/families/store.cc): a job that never formed because its
// processes could not reach the TCPStore, on real lines from public issues
// (tests/data/logs/real).
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::Kinds;
using log_test::Parse;
using log_test::ParseReal;
using ::testing::ElementsAre;

TEST(RealLogs, StoreUnreachable) {
  LogSet logs = ParseReal("store_timeout.log");
  // The socket's line and TCPStore's (which quotes it): each names the store's address.
  ASSERT_THAT(Kinds(logs), ElementsAre("init_failure", "init_failure"));
  for (const LogEvent& e : logs.events) {
    EXPECT_EQ(e.peer_address, "172.18.21.4:37907");
    EXPECT_EQ(e.reason, "timed out");
    EXPECT_EQ(e.raw_time.kind, LogTime::Kind::kNoYear);
  }
  EXPECT_EQ(logs.files[0].format, "glog");
}

TEST(Store, ConnectionRefusedNamesTheStoreAsWritten) {
  LogSet logs = Parse(
      "[W1201 12:03:04.123456 socket.cpp:464] [c10d] The client socket has failed to connect to "
      "[node01]:29500 (errno: 111 - Connection refused).\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("init_failure"));
  EXPECT_EQ(logs.events[0].peer_address, "[node01]:29500");
  EXPECT_EQ(logs.events[0].reason, "connection failed");
}

TEST(RealLogs, DistNetworkErrorTracebackNamesTheStore) {
  // The same words in a Python exception (its traceback: lib/fr/logs/families/python.cc).
  LogSet logs = ParseReal("dist_network_error.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("init_failure"));
  EXPECT_EQ(logs.events[0].peer_address, "036c56dce41b:41331");
  EXPECT_EQ(logs.events[0].reason, "torch.distributed.DistNetworkError");
  EXPECT_EQ(logs.events[0].line, 2);
}

}  // namespace
}  // namespace fr
