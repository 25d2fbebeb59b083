// The kind of communication an entry records, parsed from the op part of profiling_name
// ("nccl:_all_gather_base" -> kAllGather). Matching applies one shape rule per kind.
#ifndef FR_MODEL_OP_KIND_H_
#define FR_MODEL_OP_KIND_H_

#include <cstdint>
#include <string_view>

namespace fr {

enum class OpKind : uint8_t {
  kUnknown,
  kAllReduce,      // all_reduce, allreduce_coalesced
  kAllGather,      // all_gather, _all_gather_base, all_gather_into_tensor_coalesced, ...
  kReduceScatter,  // reduce_scatter, _reduce_scatter_base, reduce_scatter_tensor_coalesced
  kAllToAll,       // all_to_all, all_to_all_base, alltoall
  kBroadcast,      // broadcast, _broadcast_oop
  kReduce,         // reduce, _reduce_oop
  kGather,
  kScatter,
  kBarrier,  // barrier, all_reduce_barrier
  kSend,
  kRecv,
  kCoalesced,  // "coalesced": the entry that closes a coalesced group or p2p batch
};

std::string_view OpKindName(OpKind kind);  // "all_reduce", "send", "coalesced", ...

// The kind for an op name as it appears after the backend in profiling_name.
OpKind ParseOpKind(std::string_view op_name);

inline bool IsPointToPoint(OpKind kind) { return kind == OpKind::kSend || kind == OpKind::kRecv; }

}  // namespace fr

#endif  // FR_MODEL_OP_KIND_H_
