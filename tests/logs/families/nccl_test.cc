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

TEST(RealLogs, AVerbsCallThatFailsInInitIsACommunicatorThatNeverFormed) {
  // NCCL's trace of the error (NCCLCHECK's "file:line -> 2") runs through init.cc: the failed
  // ibv_modify_qp was the communicator's set-up. The MPI launcher tagged each line with the
  // global rank ("[155] ").
  LogSet tagged = ParseReal("nccl_ib_verbs_init_ranktag.log");
  ASSERT_THAT(Kinds(tagged), ElementsAre("init_failure"));
  EXPECT_EQ(tagged.events[0].rank, 155);
  EXPECT_EQ(tagged.events[0].host, "crow-ib-new-nccl-256-info-19");
  EXPECT_EQ(tagged.events[0].failed_step, "set up its InfiniBand/RoCE connections (ibv_modify_qp)");
  EXPECT_EQ(tagged.events[0].reason, "NET/IB verbs call ibv_modify_qp failed: Invalid argument");
  // NCCL 2.4's wording, without the error, from a .cu build (init.cu).
  LogSet old = ParseReal("nccl_ib_create_qp_init.log");
  ASSERT_THAT(Kinds(old), ElementsAre("init_failure"));
  EXPECT_EQ(old.events[0].host, "ta1-1");
  EXPECT_EQ(old.events[0].reason, "NET/IB verbs call ibv_create_qp failed");
}

TEST(WorldLogs, AVerbsCallThatFailsOutsideInitIsATransportError) {
  // The same warning, its trace cut before it reaches init.cc (a connection made later, as a
  // p2p channel's first use does): the transport failed, nothing says the job never formed.
  LogSet logs = Parse(
      "crow-ib-new-nccl-256-info-19:5330:7970 [3] misc/ibvwrap.cc:284 NCCL WARN Call to "
      "ibv_modify_qp failed with error Invalid argument\n"
      "crow-ib-new-nccl-256-info-19:5330:7970 [3] NCCL INFO transport/net_ib.cc:368 -> 2\n"
      "crow-ib-new-nccl-256-info-19:5330:7970 [3] NCCL INFO transport/net_ib.cc:471 -> 2\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("transport_error"));
  EXPECT_EQ(logs.events[0].rank, -1);
  // A bracketed number before other text is no rank tag.
  LogSet list = Parse("[3] RuntimeError: shapes differ\n");
  for (const LogEvent& e : list.events) EXPECT_EQ(e.rank, -1);
}

TEST(RealLogs, RemotePeerGone) {
  LogSet logs = ParseReal("remote_error.log");
  // The error's words are a victim's; the warning it quotes under "Last error:" on the next
  // line is what NCCL saw: the network plugin's failed request.
  ASSERT_THAT(Kinds(logs), ElementsAre("remote_peer_gone", "remote_peer_gone", "transport_error"));
  EXPECT_EQ(logs.events[0].rank, 3);
  EXPECT_EQ(logs.events[2].rank, 3);
  EXPECT_EQ(logs.events[2].reason, "NET/OFI completion error");
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

// Communicators that never formed, on logs pasted in public issues (tests/data/world: each
// case's truth.json names its source).
const LogEvent* FirstInitFailure(const LogSet& logs) {
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kInitFailure) return &e;
  }
  return nullptr;
}

TEST(WorldLogs, DuplicateGpuIsACommunicatorThatNeverFormed) {
  // NCCL's own WARN line under mpirun's tags (horovod/horovod#3929), and the same words as the
  // "Last error:" line under a DistBackendError (NVIDIA/Megatron-LM#661).
  for (const char* name : {"horovod_mpirun_duplicate_gpu", "megatron_duplicate_gpu_interleaved"}) {
    LogSet logs = log_test::ParseWorld(name);
    const LogEvent* e = FirstInitFailure(logs);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->failed_step, "form the NCCL communicator");
    EXPECT_THAT(e->reason, ::testing::MatchesRegex("ranks [0-9]+ and [0-9]+ use one GPU, CUDA "
                                                   "device [0-9a-f]+"));
  }
}

TEST(WorldLogs, NcclSetUpFailuresBeforeAnyCommunicator) {
  // NVML cannot see the GPU (NVIDIA/nccl#1529); the bootstrap socket cannot be made
  // (NVIDIA/nccl#1837).
  LogSet nvml_logs = log_test::ParseWorld("nccl_nvml_busid_not_found_containers");
  const LogEvent* nvml = FirstInitFailure(nvml_logs);
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->failed_step, "query its GPU through NVML");
  LogSet socket = log_test::ParseWorld("nccl_socket_ifname_not_found");
  const LogEvent* init = FirstInitFailure(socket);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->failed_step, "open NCCL's bootstrap socket");
  EXPECT_THAT(init->reason, ::testing::HasSubstr("neither AF_INET(2) nor AF_INET6(10)"));
  // The shapes NCCL's sources print when no interface is usable.
  EXPECT_THAT(Kinds(Parse("node1:77:77 [0] NCCL WARN Bootstrap : no socket interface found\n")),
              ElementsAre("init_failure"));
}

TEST(WorldLogs, NcclBeforeVersion23WroteItsLevelWithoutNccl) {
  // nccl-tests#15: "gpu-bql-144-103:18553:18611 [0] include/socket.h:360 WARN Call to connect
  // failed : Connection timed out" (NCCL 2.2).
  LogSet logs = log_test::ParseWorld("nccl_bootstrap_connect_timed_out");
  const LogEvent* connect = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kTransportError) connect = connect ? connect : &e;
  }
  ASSERT_NE(connect, nullptr);
  EXPECT_EQ(connect->host, "gpu-bql-144-103");
  EXPECT_EQ(connect->pid, 18553);
  EXPECT_THAT(connect->text, ::testing::HasSubstr("Call to connect failed"));
}

TEST(WorldLogs, AMarkdownQuotedPasteAndAnIbAsyncError) {
  // NCCL's lines pasted as a Markdown quote, file links mangled (the world corpus's
  // nccl_ib_local_access_violation, its source in truth.json).
  LogSet logs = log_test::ParseWorld("nccl_ib_local_access_violation");
  ASSERT_FALSE(logs.events.empty());
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kTransportError);
  EXPECT_EQ(logs.events[0].host, "node201");
  EXPECT_THAT(logs.events[0].reason, ::testing::HasSubstr("IB async error"));
  // An async event that is no error is no fault.
  EXPECT_THAT(Kinds(Parse("node1:7:9 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port "
                          "active\n")),
              IsEmpty());
}

TEST(WorldLogs, TheWarningQuotedAfterLastErrorIsTheTransportFault) {
  // The warning on the same line (torch 1.13's one-line abort) and on the writer's next line.
  LogSet one_line = log_test::ParseWorld("alpaca_one_line_ib_error12");
  ASSERT_THAT(Kinds(one_line), ElementsAre("transport_error"));
  EXPECT_EQ(one_line.events[0].reason, "NET/IB completion error");
  LogSet next_line = log_test::ParseWorld("nccl_remote_error_conn_reset_ib");
  ASSERT_THAT(Kinds(next_line),
              ElementsAre("remote_peer_gone", "remote_peer_gone", "transport_error"));
  EXPECT_EQ(next_line.events[2].reason, "connection reset by peer");
}

TEST(Recognizers, LastErrorWaitsForItsWriterNotAnotherRanksLine) {
  LogSet logs = Parse(
      "[rank3]: Last error:\n"
      "[rank1]: step 12 loss 0.25\n"
      "[rank3]: socketProgress: Connection closed by remote peer node02<55432>\n"
      "[rank2]: Last error:\n"
      "[rank2]: Traceback (most recent call last):\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("transport_error"));
  EXPECT_EQ(logs.events[0].rank, 3);
  EXPECT_EQ(logs.events[0].reason, "connection closed by remote peer");
}

TEST(WorldLogs, OlderIbCompletionErrorsNameNoPeer) {
  // NCCL before 2.12: "NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129".
  LogSet logs = log_test::ParseWorld("nccl_tests_ib_err12_then_illegal_access");
  std::vector<std::string> kinds = Kinds(logs);
  ASSERT_GE(kinds.size(), 3u);
  EXPECT_EQ(kinds[0], "transport_error");
  EXPECT_EQ(logs.events[0].host, "gpu5");
  EXPECT_EQ(logs.events[0].reason, "NET/IB completion error");
  EXPECT_EQ(kinds[1], "transport_error");
  EXPECT_EQ(logs.events[1].host, "gpu4");
}
}  // namespace
}  // namespace fr
