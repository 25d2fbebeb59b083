#include "fr/normalize/profiling_name.h"

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(SplitProfilingNameTest, BackendOpAndPeerAsPyTorchWritesThem) {
  ProfilingNameParts send = SplitProfilingName("nccl:send 0->3");
  EXPECT_EQ(send.backend, "nccl");
  EXPECT_EQ(send.op, "send");
  EXPECT_EQ(send.kind, OpKind::kSend);
  EXPECT_EQ(send.peer_local, 3);
  ProfilingNameParts recv = SplitProfilingName("nccl:recv 3<-12");
  EXPECT_EQ(recv.kind, OpKind::kRecv);
  EXPECT_EQ(recv.peer_local, 12);
  ProfilingNameParts gather = SplitProfilingName("gloo:_all_gather_base");
  EXPECT_EQ(gather.backend, "gloo");
  EXPECT_EQ(gather.op, "_all_gather_base");
  EXPECT_EQ(gather.kind, OpKind::kAllGather);
  EXPECT_EQ(gather.peer_local, kUnknown);
}

TEST(SplitProfilingNameTest, OddNamesKeepWhatTheySay) {
  ProfilingNameParts bare = SplitProfilingName("all_reduce");
  EXPECT_EQ(bare.backend, "");
  EXPECT_EQ(bare.op, "all_reduce");
  EXPECT_EQ(bare.kind, OpKind::kAllReduce);
  // A send without a number after its arrow, or with more after it, has no peer.
  EXPECT_EQ(SplitProfilingName("nccl:send 0->").peer_local, kUnknown);
  EXPECT_EQ(SplitProfilingName("nccl:send 0->1x").peer_local, kUnknown);
  EXPECT_EQ(SplitProfilingName("nccl:send 1<-0").peer_local, kUnknown);  // a recv's arrow
  // An all_reduce "->" is not a peer: only sends and recvs have one.
  EXPECT_EQ(SplitProfilingName("nccl:all_reduce 0->1").peer_local, kUnknown);
  ProfilingNameParts empty = SplitProfilingName("");
  EXPECT_EQ(empty.op, "");
  EXPECT_EQ(empty.kind, OpKind::kUnknown);
}

}  // namespace
}  // namespace fr
