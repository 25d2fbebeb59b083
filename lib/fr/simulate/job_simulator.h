// A simulator of a Megatron-style TP x PP x DP training job that produces every surviving rank's
// flight-recorder dump (as DumpSpec) together with the ground truth of one injected fault. It feeds
// the tests and benchmarks of the culprit analysis: the analysis must recover GroundTruth from the
// dumps alone.
//
//   JobSimulatorOptions options;
//   options.tensor_parallel = 4;
//   options.pipeline_parallel = 4;
//   options.data_parallel = 32;  // 512 ranks
//   options.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 133, .step = 36};
//   FR_ASSIGN_OR_RETURN(SimulatedJob job, SimulateJob(options));
//   const GroundTruth& truth = job.ground_truth();  // "missing_participant", culprit [133], ...
//   std::optional<DumpSpec> dump = job.RankDump(7);  // built on demand: cheap to hold 4096 ranks
//   // or write them all: WriteSimulatedJob (fr/simulate/job_writer.h)
//
// The model (see job_simulator.cc for the details):
// - Ranks: rank = dp_index * (pp * tp) + pp_stage * tp + tp_index. Hosts hold `ranks_per_host`
//   consecutive ranks, each host's clock is skewed.
// - Groups are created in the same order on every rank, named by their creation index as torch
//   names them: "0" = world ("default_pg"), then the TP groups ("TP", one per (dp, stage)), the PP
//   groups ("PP", one per (dp, tp_index)), the DP groups ("DP", one per (stage, tp_index)). A
//   rank's pg_config lists "0" and the three groups it belongs to, with rank-local pg_ids 0
//   (world), 1 (TP), 2 (PP), 3 (DP).
// - Each step runs a fill-drain (GPipe) pipeline over `microbatches`: per layer TP
//   _all_gather_base / _reduce_scatter_base, uneven all_to_all on MoE layers, a TP all_reduce of
//   the loss on the last stage, PP send/recv between neighbouring stages (plain or batched with
//   batch_isend_irecv), then the DP gradient sync as a coalesced group and a world barrier every
//   `barrier_every` steps.
// - Execution is a fixed-point dataflow over simulated times: the CPU enqueues in program order
//   (never more than one step ahead of completed work); an op starts when enqueued, after the
//   previous op of its (rank, group) stream and after the op its input depends on completed; a
//   collective completes when every member started it, a send/recv pair when both sides started.
// - Each rank keeps only its newest `buffer_size` entries; pg_status comes from the simulation.
#ifndef FR_SIMULATE_JOB_SIMULATOR_H_
#define FR_SIMULATE_JOB_SIMULATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fr/write/dump_spec.h"

namespace fr {

// The one fault a simulated job suffers.
enum class FaultKind {
  kNone,            // healthy: dumped on demand while running
  kStuckBeforeOp,   // the rank's CPU never enqueues the target op (stuck in the data loader)
  kCrashedRank,     // like kStuckBeforeOp, and the rank leaves no dump file at all
  kOpMismatch,      // the rank issues a different op at the target collective; it never completes
  kSizeMismatch,    // ... a different input/output shape
  kDtypeMismatch,   // ... a different dtype
  kMissingSend,     // the rank skips the target send (on a group with p2p, i.e. PP)
  kMissingRecv,     // the rank skips the target recv
  kGpuStall,        // the rank enqueues the target op but its GPU never starts it (needs timing)
  kTransportStall,  // every member starts the target collective, none completes
  kStraggler,       // the rank is late by `straggler_delay_ms` every step; the job stays healthy
};

// "none", "stuck_before_op", ... (for test names and logs).
std::string_view FaultKindName(FaultKind kind);

// The kinds of process group of the job, in the order they are created.
enum class GroupKind { kWorld, kTensor, kPipeline, kData };

struct FaultOptions {
  FaultKind kind = FaultKind::kNone;
  // Global rank of the culprit (for kTransportStall: any member of the stalled collective).
  int64_t rank = 0;
  // Step (0-based) in which the fault bites. Must be < JobSimulatorOptions::steps.
  int64_t step = 36;
  // The group of the target op and which of the rank's ops on that group in `step` it is
  // (0 = the first). Collectives faults need a group with collectives (TP, DP, world); p2p faults
  // count only sends (kMissingSend) or recvs (kMissingRecv) and need PP.
  GroupKind group = GroupKind::kData;
  int64_t occurrence = 0;
  // kStraggler: extra CPU time the rank spends before every step.
  double straggler_delay_ms = 40.0;
};

// What the simulated job is. Every field has a default that gives a small, valid job.
struct JobSimulatorOptions {
  int64_t tensor_parallel = 2;
  int64_t pipeline_parallel = 2;
  int64_t data_parallel = 2;
  int64_t microbatches = 4;
  int64_t layers_per_stage = 2;
  // Every `moe_every`-th layer (1-based) is a mixture-of-experts layer whose MLP exchanges tokens
  // with an uneven all_to_all in the TP group; 0: no MoE.
  int64_t moe_every = 2;
  // PP exchanges in the steady state go through batch_isend_irecv (one p2p_seq_id for a send and a
  // recv, then "nccl:coalesced"); false: plain send/recv only.
  bool batched_p2p = true;
  // DP gradient sync: coalesced _reduce_scatter_base of the gradient buckets followed by a
  // coalesced _all_gather_base of the parameters (distributed optimizer); false: coalesced
  // all_reduce of the buckets.
  bool dp_reduce_scatter = true;
  int64_t dp_buckets = 3;
  // A world barrier after every `barrier_every`-th step; 0: never.
  int64_t barrier_every = 10;
  // Steps in the program. With a fault the job hangs soon after fault.step and later steps never
  // run.
  int64_t steps = 48;
  // Ring-buffer length (TORCH_FR_BUFFER_SIZE): each rank keeps the newest this many entries.
  int64_t buffer_size = 2000;
  // TORCH_NCCL_ENABLE_TIMING: "started" states, time_discovered_started_ns, duration_ms.
  bool timing = true;
  // Every group's timeout.
  int64_t timeout_ms = 600000;
  int64_t ranks_per_host = 8;
  // Each host's clock is off by a uniform amount in [-max, +max].
  int64_t max_clock_skew_ns = 500'000;
  // A job without a hang (kNone, kStraggler) is dumped on demand at this fraction of its run, so
  // that some ops are in flight (younger than the timeout).
  double dump_fraction = 0.8;
  // Simulated wall clock of the job's start, ns since the epoch.
  int64_t start_time_ns = 1764400000000000000;
  uint64_t seed = 1;
  // Written into every DumpSpec.
  std::string version = "2.10";
  bool include_stacks = true;
  FaultOptions fault;
};

// A process group as the report names it.
struct GroupTruth {
  std::string name;  // "" when not applicable
  std::string desc;
  std::vector<int64_t> ranks;  // global ranks, ascending
};

// What the analysis should find, in the terms of the report contract (docs/report-contract.md).
struct GroundTruth {
  // "none", "missing_participant", "gpu_stall", "op_mismatch", "size_mismatch", "dtype_mismatch",
  // "p2p_unmatched", "stuck_collective".
  std::string failure_class = "none";
  std::vector<int64_t> culprit_ranks;  // ascending; [] for none and stuck_collective
  GroupTruth process_group;            // where the fault bites
  // The collective where the victims wait (-1 for p2p faults and healthy jobs).
  int64_t collective_seq_id = -1;
  // p2p faults: the p2p_seq_id of the peer's op left without partner, and that peer.
  int64_t p2p_seq_id = -1;
  int64_t peer_rank = -1;
  // Op name without backend prefix: "all_reduce", "_reduce_scatter_base", "send", ...
  std::string op;
  int64_t fault_step = -1;
  int64_t straggler_rank = -1;  // kStraggler
  double straggler_delay_ms = 0;
  std::vector<int64_t> missing_ranks;  // ranks without a dump (kCrashedRank)
  // True simulated time (no host skew) at which every dump was taken, ns since the epoch; for a
  // hung job it is later than the newest event by more than the timeout.
  int64_t dump_time_ns = 0;
  // One line for logs: "rank 133 stuck before DP _reduce_scatter_base #37 in step 36".
  std::string description;
};

// A rank's coordinates in the TP x PP x DP grid.
struct RankCoordinates {
  int64_t tp_index = 0;
  int64_t pp_stage = 0;
  int64_t dp_index = 0;
};

class SimulatedJob {
 public:
  SimulatedJob(SimulatedJob&&) noexcept;
  SimulatedJob& operator=(SimulatedJob&&) noexcept;
  ~SimulatedJob();

  const JobSimulatorOptions& options() const;
  int64_t world_size() const;
  const GroundTruth& ground_truth() const;

  RankCoordinates Coordinates(int64_t rank) const;
  // "node03" for the host of `rank` (ranks_per_host consecutive ranks per host).
  std::string HostName(int64_t rank) const;
  // The group of kind `kind` that `rank` belongs to (world for kWorld).
  GroupTruth GroupOf(int64_t rank, GroupKind kind) const;

  // How far `rank`'s host clock is off the true (simulated) time; timestamps in its dump include
  // it.
  int64_t HostClockSkewNs(int64_t rank) const;

  // False for a rank that left no dump (crashed).
  bool HasDump(int64_t rank) const;
  // The dump `rank` wrote, built on demand from the simulation's compact state (thread-safe; each
  // call builds a fresh DumpSpec). nullopt when HasDump(rank) is false or rank is out of range.
  std::optional<DumpSpec> RankDump(int64_t rank) const;

  // Entries ever enqueued by `rank` (before ring-buffer truncation).
  int64_t EntriesRecorded(int64_t rank) const;

  struct State;  // implementation, defined in job_simulator.cc

 private:
  friend absl::StatusOr<SimulatedJob> SimulateJob(const JobSimulatorOptions& options);
  explicit SimulatedJob(std::unique_ptr<const State> state);
  std::unique_ptr<const State> state_;
};

// The latest step at or before `step` (and before options.steps) whose program has an op on a
// group of kind `group`: every step for TP, PP and DP when that size is above 1, only the barrier
// steps (every `barrier_every`-th) for the world group. -1 when there is none. A fault on the
// world group must strike in such a step.
int64_t LatestStepWithOpOn(const JobSimulatorOptions& options, GroupKind group, int64_t step);

// Runs the simulation. Deterministic for given options. Errors: InvalidArgument for inconsistent
// options (sizes < 1, a fault rank out of range, a fault step outside the program, a fault target
// that does not exist in that step, kGpuStall without timing).
absl::StatusOr<SimulatedJob> SimulateJob(const JobSimulatorOptions& options);

}  // namespace fr

#endif  // FR_SIMULATE_JOB_SIMULATOR_H_
