#include "tests/support/rank_dump_builder.h"

#include "absl/status/statusor.h"
#include "fr/decode/document.h"
#include "fr/normalize/normalize.h"
#include "fr/write/dump_document.h"
#include "gtest/gtest.h"

namespace fr::test_support {

DumpSpec OpsSpec(int64_t world, const std::vector<TestOp>& ops, int64_t first_record) {
  DumpSpec spec;
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < world; ++r) ranks.push_back(r);
  spec.process_groups = {{"0", "default_pg", ranks, 0}};
  spec.pg_status.clear();
  int64_t op_id = 0, record = first_record;
  for (const TestOp& op : ops) {
    EntrySpec e;
    e.record_id = record++;
    e.pg_name = "0";
    e.pg_desc = "default_pg";
    bool p2p = op.name.starts_with("send") || op.name.starts_with("recv");
    e.is_p2p = p2p;
    e.collective_seq_id = p2p ? 0 : op.seq;
    e.p2p_seq_id = p2p ? op.seq : op.closes_batch;
    e.op_id = ++op_id;
    e.profiling_name = "nccl:" + op.name;
    e.time_created_ns = kStart + e.op_id * kSecond;
    e.state = op.state;
    e.retired = op.state == "completed";
    if (op.state != "scheduled") e.time_discovered_started_ns = e.time_created_ns + 1;
    if (op.state == "completed") e.time_discovered_completed_ns = e.time_created_ns + 2;
    if (!op.name.ends_with("coalesced")) {  // a closing entry records no tensors
      e.input_sizes = {op.size};
      e.output_sizes = {op.size};
      e.input_dtypes = {op.dtype};
      e.output_dtypes = {op.dtype};
    }
    spec.entries.push_back(e);
  }
  return spec;
}

RankDump NormalizedDump(int64_t rank, const DumpSpec& spec) {
  Document document = BuildDumpDocument(spec, DumpFlavor::kPickle);
  absl::StatusOr<RankDump> dump = NormalizeDump(document, rank);
  EXPECT_TRUE(dump.ok()) << dump.status();
  if (!dump.ok()) return RankDump();
  return *std::move(dump);
}

}  // namespace fr::test_support
