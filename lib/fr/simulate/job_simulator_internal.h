// The job simulator's own parts, shared by its four files and by nothing else (not installed,
// not included outside lib/fr/simulate): the state a finished simulation keeps
// (SimulatedJob::State) and the Simulator that fills it. The Simulator builds each rank's program
// in job_program.cc, injects the fault and writes the ground truth in job_faults.cc and runs the
// dataflow over simulated times in job_dataflow.cc; job_simulator.cc runs it and builds the dumps.
//
//   Simulator sim(state->options, state.get());
//   sim.BuildTemplates();
//   FR_RETURN_IF_ERROR(sim.Run(kNever, /*keep_records=*/true));
//   sim.FinishTruth(dump_time);
#ifndef FR_SIMULATE_JOB_SIMULATOR_INTERNAL_H_
#define FR_SIMULATE_JOB_SIMULATOR_INTERNAL_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "fr/simulate/job_simulator.h"
#include "fr/write/dump_spec.h"

namespace fr {

// The state a finished simulation keeps: per rank only its ring of compact records and its
// counters; DumpSpecs are built from it on demand.
struct SimulatedJob::State {
  struct OpTemplate {
    int slot = 0;  // GroupKind as an index
    std::string profiling_name;
    std::string op;  // profiling_name without backend and arguments
    bool is_p2p = false;
    std::vector<std::vector<int64_t>> input_sizes;
    std::vector<std::vector<int64_t>> output_sizes;
    std::vector<std::string> input_dtypes;
    std::vector<std::string> output_dtypes;
    std::vector<uint32_t> frames;
    int64_t bytes = 0;  // payload, for the transfer time
  };

  // One entry as recorded; 40 bytes, so that 4096 ranks x 2000 entries stay around 330 MB.
  struct Record {
    int64_t created = 0;    // true simulated time
    int64_t started = 0;    // kNever when not (yet)
    int64_t completed = 0;  // kNever when not (yet)
    uint32_t template_id = 0;
    uint32_t collective_seq = 0;
    uint32_t p2p_seq = 0;
    uint32_t op_id = 0;
    // A member of a coalesced group or batch_isend_irecv: PyTorch records it without events
    // (scheduled, not retired, forever); only the closing entry gets them.
    bool silent_member = false;
  };

  struct Rank {
    std::vector<Record> ring;  // record_id % buffer_size, filled up to buffer_size
    int64_t records = 0;       // entries ever recorded
    int64_t skew_ns = 0;       // host clock minus true time
    int64_t watchdog_lag_ns = 0;
    bool crashed = false;
    std::array<int64_t, 4> last_enqueued{-1, -1, -1, -1};
    std::array<int64_t, 4> last_started{-1, -1, -1, -1};
    std::array<int64_t, 4> last_completed{-1, -1, -1, -1};
  };

  JobSimulatorOptions options;
  int64_t world = 0;
  std::vector<OpTemplate> templates;
  uint32_t p2p_end_template = std::numeric_limits<uint32_t>::max();
  std::vector<FrameSpec> frames;
  std::vector<Rank> ranks;
  GroundTruth truth;
};

namespace simulate_internal {

using State = SimulatedJob::State;
using OpTemplate = State::OpTemplate;
using Record = State::Record;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr int kWorldSlot = static_cast<int>(GroupKind::kWorld);
constexpr int kTpSlot = static_cast<int>(GroupKind::kTensor);
constexpr int kPpSlot = static_cast<int>(GroupKind::kPipeline);
constexpr int kDpSlot = static_cast<int>(GroupKind::kData);
constexpr int kMaxEntriesPerLaunch = 16;
constexpr int kMaxP2pPerLaunch = 2;

// Times in ns of the simulated workload.
constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;
constexpr int64_t kCpuPerLaunchNs = 30 * kUs;  // Python overhead to issue one op
constexpr int64_t kCpuPerEntryNs = 15 * kUs;
constexpr int64_t kStepOverheadNs = 300 * kUs;  // loss.item(), logging, scheduler
constexpr int64_t kForwardGapNs = 350 * kUs;    // GPU compute before a forward TP collective
constexpr int64_t kBackwardGapNs = 700 * kUs;
constexpr int64_t kOptimizerGapNs = 2 * kMs;
constexpr int64_t kCollectiveLatencyNs = 15 * kUs;

inline std::string_view GroupDesc(int slot) {
  static constexpr std::string_view kDescs[] = {"default_pg", "TP", "PP", "DP"};
  return kDescs[slot];
}

inline std::string OpNameOf(std::string_view profiling_name) {
  size_t colon = profiling_name.find(':');
  std::string_view op =
      colon == std::string_view::npos ? profiling_name : profiling_name.substr(colon + 1);
  return std::string(op.substr(0, op.find(' ')));
}

inline int64_t DtypeBytes(std::string_view dtype) { return dtype == "Float" ? 4 : 2; }

// One launch in a rank's program: a single collective, a coalesced group of collectives (then
// the end entry), a single send/recv, or a batch_isend_irecv (then the end entry).
struct ProgramOp {
  int slot = 0;
  bool is_p2p = false;
  // The GPU compute that consumes its result waits for it (collectives, anything with a recv);
  // a plain send is fire-and-forget.
  bool blocking = true;
  bool poison = false;     // mismatch or transport stall: its collective never completes
  bool gpu_stall = false;  // the GPU never starts it (nor anything after it)
  int entry_count = 0;
  std::array<uint32_t, kMaxEntriesPerLaunch> entries{};
  int p2p_count = 0;  // p2p ops are entries[0, p2p_count)
  struct P2p {
    bool is_send = false;
    int64_t peer_stage = 0;
  };
  std::array<P2p, kMaxP2pPerLaunch> p2p{};
  int64_t gpu_gap_ns = 0;  // compute on the GPU between its input dependency and it
};

// Template ids, built once per job.
struct Templates {
  uint32_t ag_attn[2], rs_attn[2], ag_mlp[2], rs_mlp[2];  // [forward, backward]
  std::vector<uint32_t> a2a;  // [direction][dispatch/combine][tp_index][rotation]
  uint32_t loss_all_reduce = 0;
  std::vector<uint32_t> dp_reduce_scatter, dp_all_gather, dp_all_reduce;  // per bucket
  uint32_t dp_end = 0;
  uint32_t barrier = 0;
  std::vector<uint32_t> send, recv;  // [stage][forward/backward]
  uint32_t p2p_end = 0;
};

class Simulator {
 public:
  Simulator(const JobSimulatorOptions& options, State* state) : o_(options), state_(state) {
    tp_ = o_.tensor_parallel;
    pp_ = o_.pipeline_parallel;
    dp_ = o_.data_parallel;
    world_ = tp_ * pp_ * dp_;
  }

  void BuildTemplates();
  // Runs the job until every rank stopped or blocked. Entries created after `cut_ns` are never
  // enqueued (an on-demand dump at that time); `keep_records` false skips the ring buffers.
  absl::Status Run(int64_t cut_ns, bool keep_records);
  int64_t latest_event() const { return latest_event_; }
  // Completes the ground truth once the run is over and the dump time is known.
  void FinishTruth(int64_t dump_time_ns);

 private:
  struct Link {
    int32_t rank = -1;
    int32_t index = -1;
    int32_t op = 0;
  };
  struct Launch {
    int64_t ready = 0;  // earliest start, from the links already resolved
    int64_t start = kNever;
    int64_t complete = kNever;
    int64_t max_satisfied = 0;
    int64_t duration = 0;
    int64_t first_record = 0;
    int64_t gpu_gap = 0;
    int32_t step = 0;
    int32_t prev_on_stream = -1;  // unresolved: not completed yet
    int32_t next_on_stream = -1;
    int32_t dep = -1;  // unresolved input dependency
    uint32_t collective_seq = 0;
    uint32_t p2p_seq = 0;
    uint16_t record_count = 0;
    uint8_t slot = 0;
    uint8_t pending = 0;
    bool is_p2p = false;
    bool blocking = false;
    bool poison = false;
    bool started = false;
    bool completed = false;
    std::array<Link, kMaxP2pPerLaunch> partner{};
    // Each p2p op's peer (global rank, -1: none) and direction.
    std::array<int32_t, kMaxP2pPerLaunch> p2p_peer{-1, -1};
    std::array<bool, kMaxP2pPerLaunch> p2p_send{};
  };
  struct RankSim {
    int64_t cpu_time = 0;
    int32_t step = -1;
    size_t cursor = 0;
    std::vector<ProgramOp> program;
    bool stopped = false;
    int32_t waiting_for_step = -1;
    std::deque<Launch> launches;
    int32_t base = 0;  // index of launches.front()
    std::array<int32_t, 4> last_on_stream{-1, -1, -1, -1};
    std::array<int64_t, 4> stream_done{0, 0, 0, 0};
    int32_t last_blocking = -1;
    int64_t last_blocking_done = 0;
    int32_t gpu_stall_from = std::numeric_limits<int32_t>::max();
    std::array<uint32_t, 4> collective_seq{};
    std::array<uint32_t, 4> p2p_seq{};
    std::array<uint32_t, 4> op_id{};
    std::vector<int32_t> outstanding;  // per step
    std::vector<int64_t> step_done;    // per step: when its last launch completed
    std::array<int64_t, 4> gid{};
  };
  struct Instance {
    int64_t max_start = 0;
    bool poison = false;
    std::vector<Link> members;
  };
  struct PendingP2p {
    std::deque<Link> sends, recvs;
  };
  enum class WorkKind { kAdvance, kTryStart };
  struct Work {
    WorkKind kind;
    int32_t rank;
    int32_t index;
  };

  RankCoordinates Coord(int64_t rank) const {
    return {rank % tp_, (rank / tp_) % pp_, rank / (tp_ * pp_)};
  }
  int64_t RankAt(int64_t dp, int64_t stage, int64_t tp) const {
    return dp * pp_ * tp_ + stage * tp_ + tp;
  }
  int64_t GroupSize(int slot) const {
    switch (slot) {
      case kTpSlot:
        return tp_;
      case kPpSlot:
        return pp_;
      case kDpSlot:
        return dp_;
      default:
        return world_;
    }
  }
  uint32_t AddTemplate(OpTemplate t) {
    t.op = OpNameOf(t.profiling_name);
    for (size_t i = 0; i < t.input_sizes.size(); ++i) {
      int64_t n = 1;
      for (int64_t d : t.input_sizes[i]) n *= d;
      t.bytes = std::max(t.bytes, n * DtypeBytes(t.input_dtypes[i]));
    }
    state_->templates.push_back(std::move(t));
    return static_cast<uint32_t>(state_->templates.size() - 1);
  }

  // Defined in job_program.cc: Stack, BuildTemplates and BuildStep; in job_faults.cc: ApplyFault,
  // TruthGroup and FinishTruth; in job_dataflow.cc: Run, Advance, Enqueue, TryStart, Start and
  // Complete.
  static std::vector<uint32_t> Stack(std::initializer_list<uint32_t> inner, bool backward);

  void BuildStep(int32_t rank, RankSim& rs);
  absl::Status ApplyFault(int32_t rank, RankSim& rs);
  void Advance(int32_t rank);
  void Enqueue(int32_t rank, RankSim& rs, const ProgramOp& op);
  void TryStart(int32_t rank, int32_t index);
  void Start(int32_t rank, int32_t index);
  void Complete(int32_t rank, int32_t index, int64_t time);
  Launch& At(int32_t rank, int32_t index) {
    RankSim& rs = sims_[rank];
    return rs.launches[index - rs.base];
  }
  bool Completed(int32_t rank, int32_t index) {
    return index < sims_[rank].base || At(rank, index).completed;
  }
  void Touch(int64_t t) {
    if (t != kNever) latest_event_ = std::max(latest_event_, t);
  }
  void Fail(absl::Status status) {
    if (status_.ok()) status_ = std::move(status);
  }
  GroupTruth TruthGroup(int32_t rank, int slot) const;

  const JobSimulatorOptions& o_;
  State* state_;
  int64_t tp_, pp_, dp_, world_;
  Templates ids_;
  std::vector<RankSim> sims_;
  absl::flat_hash_map<uint64_t, Instance> instances_;
  absl::flat_hash_map<uint64_t, PendingP2p> channels_;
  std::vector<Work> work_;
  int64_t cut_ = kNever;
  bool keep_records_ = true;
  int64_t latest_event_ = 0;
  absl::Status status_;
  // The rank whose skipped p2p op left its peer unmatched (kMissingSend / kMissingRecv).
  int64_t p2p_fault_peer_ = -1;
  // kStuckBeforeOp / kCrashedRank: the culprit's CPU stops before this op of the fault step.
  int64_t stop_at_ = -1;
};

}  // namespace simulate_internal
}  // namespace fr

#endif  // FR_SIMULATE_JOB_SIMULATOR_INTERNAL_H_
