// A small, deterministic data-parallel job whose dumps exercise the reader: a world group and
// data-parallel / tensor-parallel subgroups, all_reduce / all_gather / reduce_scatter / broadcast /
// barrier collectives, send/recv pairs between neighbours, realistic Python stacks, and
// optionally one rank that stops before the last collective (the classic hang).
//
//   ExampleJobOptions options;
//   options.world_size = 8;
//   options.entries_per_rank = 2000;
//   for (int64_t rank = 0; rank < options.world_size; ++rank) {
//     DumpSpec spec = MakeExampleRankDump(options, rank);
//     WriteFile(dir + "/nccl_trace_rank_" + std::to_string(rank), WriteDumpPickle(spec));
//   }
//
// The full TP x PP x DP simulator with fault injection builds on this (a later stage).
#ifndef FR_SIMULATE_EXAMPLE_JOB_H_
#define FR_SIMULATE_EXAMPLE_JOB_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fr/write/dump_spec.h"

namespace fr {

struct ExampleJobOptions {
  int64_t world_size = 8;
  // Tensor-parallel group size; must divide world_size. Data-parallel groups span the rest.
  int64_t tensor_parallel = 2;
  // Ring-buffer length: each rank keeps the newest this many entries.
  int64_t entries_per_rank = 64;
  // Dump version to write ("2.10", "2.4", "1.4", "" for the 2023 bare list...).
  std::string version = "2.10";
  bool include_stacks = true;
  // A rank that never enqueues the final all_reduce, or -1 for a healthy job.
  int64_t stuck_rank = -1;
  // Wall clock of the first op, ns since the epoch.
  int64_t start_time_ns = 1764400000000000000;
};

// The dump `rank` of the example job would write.
DumpSpec MakeExampleRankDump(const ExampleJobOptions& options, int64_t rank);

// Writes every rank's dump to `directory` as nccl_trace_rank_<rank> (pickle), creating the
// directory. Returns the number of bytes written.
absl::StatusOr<uint64_t> WriteExampleJob(const ExampleJobOptions& options,
                                         const std::string& directory);

}  // namespace fr

#endif  // FR_SIMULATE_EXAMPLE_JOB_H_
