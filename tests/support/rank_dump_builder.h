// Small hand-built dumps for the tests of the stages after loading (index, match, verdict): a
// rank's ops, one short line each, become the Document PyTorch would have pickled
// (write/dump_document.h) and are read by the normalizer itself. A test thus sees what a real
// file of those ops gives, without writing and decoding its bytes (the writer's and decoder's
// own tests cover those).
//
//   Match(Rank(0, 3, {{"all_reduce", 1, "completed"}, {"all_reduce", 2, "started"}}),
//         Rank(1, 3, {{"all_reduce", 1, "completed"}}), ...);
#ifndef FR_TESTS_SUPPORT_RANK_DUMP_BUILDER_H_
#define FR_TESTS_SUPPORT_RANK_DUMP_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/model/rank_dump.h"
#include "fr/write/dump_spec.h"

namespace fr::test_support {

inline constexpr int64_t kSecond = 1'000'000'000;
// When the ops of a built dump start; op n (1-based) is created n seconds later.
inline constexpr int64_t kStart = 1'800'000'000 * kSecond;

struct TestOp {
  std::string name;   // "all_reduce", "send 0->1", "recv 1<-0", "coalesced", ...
  int64_t seq = 0;    // collective seq (or p2p seq for send/recv)
  std::string state;  // scheduled | started | completed
  std::vector<int64_t> size = {4};
  std::string dtype = "Float";
  int64_t closes_batch = 0;  // for a closing entry: the p2p seq of the batch it closes
};

// NCCL-style entries of `ops`, in order, all in group "0" (default_pg) of ranks 0..world-1:
// started and completed ops carry their event times, completed ones are retired.
DumpSpec OpsSpec(int64_t world, const std::vector<TestOp>& ops, int64_t first_record = 0);

// `spec` as rank `rank`'s dump, normalized from the Document its pickle would decode to. A spec
// the normalizer rejects fails the calling test (and gives an empty dump).
RankDump NormalizedDump(int64_t rank, const DumpSpec& spec);

// The two together: rank `rank` of `world`, with `ops`.
inline RankDump Rank(int64_t rank, int64_t world, const std::vector<TestOp>& ops,
                     int64_t first_record = 0) {
  return NormalizedDump(rank, OpsSpec(world, ops, first_record));
}

}  // namespace fr::test_support

#endif  // FR_TESTS_SUPPORT_RANK_DUMP_BUILDER_H_
