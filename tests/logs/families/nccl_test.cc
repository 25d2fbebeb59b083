// The NCCL family (lib/fr/logs/families/nccl.cc): NCCL_DEBUG=INFO / WARN lines and the
// transport failures NCCL's errors name, on real lines from public issues (tests/data/logs/real)
// and lines of the shapes NCCL prints.
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
using ::testing::IsEmpty;

TEST(RealLogs, NcclInit) {
  LogSet logs = ParseReal("nccl_init.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("nccl_init", "nccl_init"));
  const LogEvent& e = logs.events[0];
  EXPECT_EQ(e.host, "hostname-test");
  EXPECT_EQ(e.pid, 984);
  EXPECT_EQ(e.cuda_dev, 4);
  EXPECT_EQ(e.comm_rank, 36);
  EXPECT_EQ(e.nranks, 64);
  EXPECT_EQ(e.bus_id, "0000:9b:00");
  EXPECT_EQ(e.comm_id, "0x5ae77eb5ea4ec1ee");
  EXPECT_EQ(logs.files[0].format, "nccl");
  LogSet old = ParseReal("nccl_init_old.log");
  ASSERT_THAT(Kinds(old), ElementsAre("nccl_init"));
  EXPECT_EQ(old.events[0].bus_id, "0000:e7:00");
  EXPECT_EQ(old.events[0].host, "A03-R28-I49-3-9000018");
}

TEST(RealLogs, NcclTransportWarnings) {
  LogSet ib = ParseReal("nccl_ib_warn.log");
  ASSERT_THAT(Kinds(ib), ElementsAre("transport_error"));
  EXPECT_EQ(ib.events[0].host, "kp-ddp-worker-0");
  EXPECT_EQ(ib.events[0].cuda_dev, 4);
  EXPECT_EQ(ib.events[0].peer_address, "10.216.210.236<54862>");
  EXPECT_EQ(ib.events[0].reason, "NET/IB completion error");
  LogSet socket = ParseReal("nccl_socket_warn.log");
  ASSERT_THAT(Kinds(socket), ElementsAre("transport_error"));
  EXPECT_EQ(socket.events[0].peer_address, "10.200.84.247<58355>");
}

TEST(RealLogs, RemotePeerGone) {
  LogSet logs = ParseReal("remote_error.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("remote_peer_gone", "remote_peer_gone"));
  EXPECT_EQ(logs.events[0].rank, 3);
}

TEST(Recognizers, NcclCudaFailureAndSystemError) {
  LogSet logs = Parse(
      "node1:1:2 [0] enqueue.cc:12 NCCL WARN Cuda failure 'out of memory'\n"
      "node1:1:2 [0] NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"
      "RuntimeError: NCCL error in: x.cpp:1, unhandled system error, ncclSystemError: boom\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_oom", "cuda_error", "transport_error"));
  EXPECT_EQ(logs.events[1].reason, "an illegal memory access was encountered");
}

TEST(RealLogs, NcclCudaFailure) {
  LogSet logs = ParseReal("nccl_cuda_failure.log");
  // The WARN line is the fault; the INFO line after it ("-> 1") is NCCL unwinding.
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_error"));
  EXPECT_EQ(logs.events[0].host, "n122-164-108");
  EXPECT_EQ(logs.events[0].pid, 7400);
  EXPECT_EQ(logs.events[0].cuda_dev, 1);
}

// "Bootstrap : Using", "NET/IB : Using ...; OOB" and newer NCCL's "Bootstrap: Using" (the lines
// quoted in nccl.cc): the address the host's peers name in their transport errors.
TEST(Nccl, InterfaceLinesGiveTheHostsAddress) {
  LogSet logs = Parse(
      "node01:3468:3468 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n"
      "node02:5520:5520 [0] NCCL INFO NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; "
      "OOB enp220s0np0:11.1.128.136<0>\n"
      "node03:7701:7701 [0] NCCL INFO Bootstrap: Using enp39s0:10.0.10.226<0>\n"
      "node03:7701:7701 [0] NCCL INFO NET/IB : Using [0]mlx5_10:1/RoCE [RO]\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_address", "host_address", "host_address"));
  EXPECT_EQ(logs.events[0].host, "node01");
  EXPECT_EQ(logs.events[0].peer_address, "10.0.0.5");
  EXPECT_EQ(logs.events[1].host, "node02");
  EXPECT_EQ(logs.events[1].peer_address, "11.1.128.136");
  EXPECT_EQ(logs.events[2].peer_address, "10.0.10.226");
}

TEST(Nccl, VersionOfEachHost) {
  LogSet logs = Parse(
      "node01:3468:3468 [0] NCCL INFO NCCL version 2.22.3+cuda12.2\n"
      "node02:5520:5520 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("nccl_version", "nccl_version"));
  EXPECT_EQ(logs.events[0].host, "node01");
  EXPECT_EQ(logs.events[0].reason, "2.22.3+cuda12.2");
  EXPECT_EQ(logs.events[1].reason, "2.21.5+cuda12.4");
}

TEST(Nccl, OtherInfoLinesMakeNoEvent) {
  // NCCL_DEBUG=INFO chatter (real lines of tests/data/logs/real).
  LogSet logs = Parse(
      "hostname-test:983:1261 [3] NCCL INFO Connected NVLS tree\n"
      "hostname-test:983:1261 [3] NCCL INFO threadThresholds 8/8/64 | 512/8/64 | 512 | 512\n"
      "0: g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to "
      "ffff0000,00000000,ffff0000,00000000\n"
      "kp-ddp-worker-0:3468:3905 [4] NCCL INFO transport/net.cc:1302 -> 6\n");
  EXPECT_THAT(Kinds(logs), IsEmpty());
  EXPECT_EQ(logs.files[0].format, "nccl");
}

}  // namespace
}  // namespace fr
