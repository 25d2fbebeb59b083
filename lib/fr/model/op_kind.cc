#include "fr/model/op_kind.h"

namespace fr {
namespace {

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kUnknown:
      return "unknown";
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kAllGather:
      return "all_gather";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllToAll:
      return "all_to_all";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kGather:
      return "gather";
    case OpKind::kScatter:
      return "scatter";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kCoalesced:
      return "coalesced";
  }
  return "unknown";
}

OpKind ParseOpKind(std::string_view op) {
  if (op == "send") return OpKind::kSend;
  if (op == "recv" || op == "recv_any_source" || op == "recvanysource") return OpKind::kRecv;
  if (op == "coalesced") return OpKind::kCoalesced;
  // Order matters: "all_reduce_barrier" is a barrier, "reduce_scatter" is not a reduce.
  if (Contains(op, "barrier")) return OpKind::kBarrier;
  if (Contains(op, "reduce_scatter") || Contains(op, "reducescatter")) {
    return OpKind::kReduceScatter;
  }
  if (Contains(op, "all_reduce") || Contains(op, "allreduce")) return OpKind::kAllReduce;
  if (Contains(op, "all_gather") || Contains(op, "allgather")) return OpKind::kAllGather;
  if (Contains(op, "all_to_all") || Contains(op, "alltoall")) return OpKind::kAllToAll;
  if (Contains(op, "broadcast")) return OpKind::kBroadcast;
  if (Contains(op, "reduce")) return OpKind::kReduce;
  if (Contains(op, "gather")) return OpKind::kGather;
  if (Contains(op, "scatter")) return OpKind::kScatter;
  return OpKind::kUnknown;
}

}  // namespace fr
