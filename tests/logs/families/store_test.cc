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

TEST(RealLogs, StoreServerThatCannotListen) {
  // hao-ai-lab/FastVideo#575: torchrun's store could not bind port 29500. The bind warnings are
  // no fault on their own (another address may still work); "failed to listen on any local
  // network address" is.
  LogSet logs = ParseReal("store_listen_glog.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("init_failure"));
  EXPECT_EQ(logs.events[0].line, 4);
  EXPECT_EQ(logs.events[0].failed_step, "start the rendezvous store (c10d's TCPStore server)");
  EXPECT_EQ(logs.events[0].reason, "it could not listen on its port");
}

TEST(RealLogs, StoreServerWhosePortIsTakenNamesThePort) {
  // The exception's two wordings: the bind errors appended (showlab/Tune-A-Video#90), and
  // libuv's "port: 29500, ... name: EADDRINUSE" (om-ai-lab/VLM-R1#289, torch 2.4 and later).
  for (const char* fixture : {"store_listen_bind_errors.log", "store_listen_libuv.log"}) {
    SCOPED_TRACE(fixture);
    LogSet logs = ParseReal(fixture);
    ASSERT_THAT(Kinds(logs), ElementsAre("init_failure"));
    EXPECT_EQ(logs.events[0].failed_step, "start the rendezvous store (c10d's TCPStore server)");
    EXPECT_EQ(logs.events[0].reason,
              "port 29500 is already in use: another job, or a leftover process of an earlier "
              "run, holds it");
  }
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

TEST(WorldLogs, StoreBasedBarrierThatTimedOutOrDrewTooManyWorkers) {
  // deepspeedai/Megatron-DeepSpeed#338: a traceback's "RuntimeError: Timed out initializing
  // process group in store based barrier on rank: 7, ... (world_size=8, worker_count=4, ...)".
  bool found = false;
  for (const LogEvent& e : log_test::ParseWorld("megatron_ds_store_barrier_tp2_pp2").events) {
    if (e.kind != LogEventKind::kInitFailure) continue;
    found = true;
    EXPECT_EQ(e.failed_step, "pass the store-based barrier that forms a process group");
    EXPECT_EQ(e.reason, "4 of 8 ranks arrived");
  }
  EXPECT_TRUE(found);
  // ultralytics/yolov5#4409: "Waiting in store based barrier ... (world_size=4,
  // worker_count=16, ...)": more workers than the world.
  LogSet waiting = log_test::ParseWorld("yolov5_store_barrier_worker_count_16");
  ASSERT_FALSE(waiting.events.empty());
  EXPECT_EQ(waiting.events[0].kind, LogEventKind::kInitFailure);
  EXPECT_THAT(waiting.events[0].reason,
              ::testing::HasSubstr("16 workers arrived for a world of 4"));
  // Waiting with fewer workers than the world is the barrier doing its work.
  EXPECT_THAT(log_test::Kinds(log_test::Parse(
                  "Waiting in store based barrier to initialize process group for rank: 0, key: "
                  "store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)\n")),
              ::testing::IsEmpty());
}

}  // namespace
}  // namespace fr
