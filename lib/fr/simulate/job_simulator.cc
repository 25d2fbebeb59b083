#include "fr/simulate/job_simulator.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"

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

namespace {

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

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A deterministic pseudo-random value in [0, 1) for a key: independent of the order in which the
// fixed-point loop visits ops, so results depend only on the options.
double Uniform(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t h = SplitMix64(seed ^ SplitMix64(a ^ SplitMix64(b ^ SplitMix64(c))));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

std::string_view GroupDesc(int slot) {
  static constexpr std::string_view kDescs[] = {"default_pg", "TP", "PP", "DP"};
  return kDescs[slot];
}

std::string OpNameOf(std::string_view profiling_name) {
  size_t colon = profiling_name.find(':');
  std::string_view op =
      colon == std::string_view::npos ? profiling_name : profiling_name.substr(colon + 1);
  return std::string(op.substr(0, op.find(' ')));
}

int64_t DtypeBytes(std::string_view dtype) { return dtype == "Float" ? 4 : 2; }

// Frames of the stacks: a Megatron-LM pretraining script.
enum Frame : uint32_t {
  kFrameModule,
  kFramePretrain,
  kFrameTrain,
  kFrameTrainStep,
  kFrameSchedule,
  kFrameForwardStep,
  kFrameBackwardStep,
  kFrameCallImpl,
  kFrameWrappedCallImpl,
  kFrameAttention,
  kFrameMlp,
  kFrameMoe,
  kFrameTokenDispatch,
  kFrameAutogradApply,
  kFrameEngineRunBackward,
  kFrameTensorBackward,
  kFrameGatherFirstDim,
  kFrameReduceScatterFirstDim,
  kFrameCrossEntropy,
  kFrameCommunicate,
  kFrameP2pOps,
  kFrameBatchIsendIrecv,
  kFrameFinishGradSync,
  kFrameOptimizerStep,
  kFrameAllGatherParams,
  kFrameCoalescingManager,
  kFrameLogger,
  kFrameAllReduce,
  kFrameAllGatherIntoTensor,
  kFrameReduceScatterTensor,
  kFrameAllToAllSingle,
  kFrameIsend,
  kFrameIrecv,
  kFrameBarrier,
  kFrameCount,
};

std::vector<FrameSpec> MegatronFrames() {
  const std::string torch = "/usr/local/lib/python3.10/dist-packages/torch";
  const std::string c10d = torch + "/distributed/distributed_c10d.py";
  const std::string mcore = "/workspace/Megatron-LM/megatron/core";
  std::vector<FrameSpec> frames(kFrameCount);
  frames[kFrameModule] = {"<module>", "/workspace/Megatron-LM/pretrain_gpt.py", 278};
  frames[kFramePretrain] = {"pretrain", "/workspace/Megatron-LM/megatron/training/training.py",
                            386};
  frames[kFrameTrain] = {"train", "/workspace/Megatron-LM/megatron/training/training.py", 1411};
  frames[kFrameTrainStep] = {"train_step", "/workspace/Megatron-LM/megatron/training/training.py",
                             754};
  frames[kFrameSchedule] = {"forward_backward_pipelining_without_interleaving",
                            mcore + "/pipeline_parallel/schedules.py", 1629};
  frames[kFrameForwardStep] = {"forward_step", mcore + "/pipeline_parallel/schedules.py", 275};
  frames[kFrameBackwardStep] = {"backward_step", mcore + "/pipeline_parallel/schedules.py", 366};
  frames[kFrameCallImpl] = {"_call_impl", torch + "/nn/modules/module.py", 1747};
  frames[kFrameWrappedCallImpl] = {"_wrapped_call_impl", torch + "/nn/modules/module.py", 1736};
  frames[kFrameAttention] = {"forward", mcore + "/transformer/attention.py", 624};
  frames[kFrameMlp] = {"forward", mcore + "/transformer/mlp.py", 141};
  frames[kFrameMoe] = {"forward", mcore + "/transformer/moe/moe_layer.py", 206};
  frames[kFrameTokenDispatch] = {"token_permutation",
                                 mcore + "/transformer/moe/token_dispatcher.py", 549};
  frames[kFrameAutogradApply] = {"apply", torch + "/autograd/function.py", 575};
  frames[kFrameEngineRunBackward] = {"_engine_run_backward", torch + "/autograd/graph.py", 823};
  frames[kFrameTensorBackward] = {"backward", torch + "/autograd/__init__.py", 347};
  frames[kFrameGatherFirstDim] = {"_gather_along_first_dim", mcore + "/tensor_parallel/mappings.py",
                                  224};
  frames[kFrameReduceScatterFirstDim] = {"_reduce_scatter_along_first_dim",
                                         mcore + "/tensor_parallel/mappings.py", 272};
  frames[kFrameCrossEntropy] = {"forward", mcore + "/tensor_parallel/cross_entropy.py", 141};
  frames[kFrameCommunicate] = {"_communicate", mcore + "/pipeline_parallel/p2p_communication.py",
                               385};
  frames[kFrameP2pOps] = {"_p2p_ops", mcore + "/pipeline_parallel/p2p_communication.py", 239};
  frames[kFrameBatchIsendIrecv] = {"_batched_p2p_ops",
                                   mcore + "/pipeline_parallel/p2p_communication.py", 186};
  frames[kFrameFinishGradSync] = {"finish_grad_sync",
                                  mcore + "/distributed/param_and_grad_buffer.py", 498};
  frames[kFrameOptimizerStep] = {"step", mcore + "/optimizer/distrib_optimizer.py", 1715};
  frames[kFrameAllGatherParams] = {"start_param_sync",
                                   mcore + "/distributed/param_and_grad_buffer.py", 402};
  frames[kFrameCoalescingManager] = {"_coalescing_manager", c10d, 2357};
  frames[kFrameLogger] = {"wrapper", torch + "/distributed/c10d_logger.py", 81};
  frames[kFrameAllReduce] = {"all_reduce", c10d, 2501};
  frames[kFrameAllGatherIntoTensor] = {"all_gather_into_tensor", c10d, 3714};
  frames[kFrameReduceScatterTensor] = {"reduce_scatter_tensor", c10d, 4239};
  frames[kFrameAllToAllSingle] = {"all_to_all_single", c10d, 4470};
  frames[kFrameIsend] = {"isend", c10d, 2187};
  frames[kFrameIrecv] = {"irecv", c10d, 2244};
  frames[kFrameBarrier] = {"barrier", c10d, 4811};
  return frames;
}

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

std::vector<uint32_t> Simulator::Stack(std::initializer_list<uint32_t> inner, bool backward) {
  std::vector<uint32_t> frames(inner);
  if (backward) {
    frames.insert(frames.end(),
                  {kFrameEngineRunBackward, kFrameTensorBackward, kFrameBackwardStep});
  } else {
    frames.insert(frames.end(), {kFrameCallImpl, kFrameWrappedCallImpl, kFrameForwardStep});
  }
  frames.insert(frames.end(),
                {kFrameSchedule, kFrameTrainStep, kFrameTrain, kFramePretrain, kFrameModule});
  return frames;
}

void Simulator::BuildTemplates() {
  state_->frames = MegatronFrames();
  const int64_t seq = 4096, hidden = 4096;
  const int64_t shard = std::max<int64_t>(seq / tp_, 1);
  const std::string bf16 = "BFloat16", f32 = "Float";
  auto collective = [&](int slot, std::string name, std::vector<int64_t> in,
                        std::vector<int64_t> out, const std::string& dtype,
                        std::vector<uint32_t> frames) {
    return AddTemplate({slot,
                        std::move(name),
                        "",
                        false,
                        {std::move(in)},
                        {std::move(out)},
                        {dtype},
                        {dtype},
                        std::move(frames),
                        0});
  };
  for (int dir = 0; dir < 2; ++dir) {
    bool bwd = dir == 1;
    // Sequence parallelism: gather the sequence shards before a block, scatter the sum after it.
    uint32_t block = bwd ? kFrameAutogradApply : kFrameCallImpl;
    ids_.ag_attn[dir] = collective(
        kTpSlot, "nccl:_all_gather_base", {shard, 1, hidden}, {shard * tp_, 1, hidden}, bf16,
        Stack(
            {kFrameAllGatherIntoTensor, kFrameLogger, kFrameGatherFirstDim, block, kFrameAttention},
            bwd));
    ids_.rs_attn[dir] = collective(kTpSlot, "nccl:_reduce_scatter_base", {shard * tp_, 1, hidden},
                                   {shard, 1, hidden}, bf16,
                                   Stack({kFrameReduceScatterTensor, kFrameLogger,
                                          kFrameReduceScatterFirstDim, block, kFrameAttention},
                                         bwd));
    ids_.ag_mlp[dir] = collective(
        kTpSlot, "nccl:_all_gather_base", {shard, 1, hidden}, {shard * tp_, 1, hidden}, bf16,
        Stack({kFrameAllGatherIntoTensor, kFrameLogger, kFrameGatherFirstDim, block, kFrameMlp},
              bwd));
    ids_.rs_mlp[dir] = collective(kTpSlot, "nccl:_reduce_scatter_base", {shard * tp_, 1, hidden},
                                  {shard, 1, hidden}, bf16,
                                  Stack({kFrameReduceScatterTensor, kFrameLogger,
                                         kFrameReduceScatterFirstDim, block, kFrameMlp},
                                        bwd));
  }
  // MoE token exchange: rank t sends base + 128 * ((t + r) % tp) tokens and receives
  // base + 128 * ((tp - 1 - t + r) % tp): uneven per rank, equal totals over the group.
  const int64_t base_tokens = 2048;
  for (int dir = 0; dir < 2; ++dir) {
    for (int kind = 0; kind < 2; ++kind) {
      for (int64_t t = 0; t < tp_; ++t) {
        for (int64_t r = 0; r < tp_; ++r) {
          int64_t in = base_tokens + 128 * ((t + r) % tp_);
          int64_t out = base_tokens + 128 * ((tp_ - 1 - t + r) % tp_);
          if (kind == 1) std::swap(in, out);  // combine returns what dispatch sent
          ids_.a2a.push_back(
              collective(kTpSlot, "nccl:all_to_all", {in, hidden}, {out, hidden}, bf16,
                         Stack({kFrameAllToAllSingle, kFrameLogger, kFrameTokenDispatch, kFrameMoe,
                                dir == 1 ? kFrameAutogradApply : kFrameCallImpl},
                               dir == 1)));
        }
      }
    }
  }
  ids_.loss_all_reduce = collective(
      kTpSlot, "nccl:all_reduce", {seq}, {seq}, f32,
      Stack({kFrameAllReduce, kFrameLogger, kFrameCrossEntropy, kFrameAutogradApply}, false));
  for (int64_t b = 0; b < o_.dp_buckets; ++b) {
    // Buckets of 40M +- a few elements, divisible by the DP size.
    int64_t shard_elems = (40'000'000 + 1'048'576 * b) / dp_;
    std::vector<uint32_t> grad_stack = {
        kFrameReduceScatterTensor, kFrameLogger, kFrameCoalescingManager, kFrameFinishGradSync,
        kFrameTrainStep,           kFrameTrain,  kFramePretrain,          kFrameModule};
    ids_.dp_reduce_scatter.push_back(collective(
        kDpSlot, "nccl:_reduce_scatter_base", {shard_elems * dp_}, {shard_elems}, f32, grad_stack));
    grad_stack[0] = kFrameAllReduce;
    ids_.dp_all_reduce.push_back(collective(kDpSlot, "nccl:all_reduce", {shard_elems * dp_},
                                            {shard_elems * dp_}, f32, grad_stack));
    ids_.dp_all_gather.push_back(collective(
        kDpSlot, "nccl:_all_gather_base", {shard_elems}, {shard_elems * dp_}, bf16,
        {kFrameAllGatherIntoTensor, kFrameLogger, kFrameCoalescingManager, kFrameAllGatherParams,
         kFrameOptimizerStep, kFrameTrainStep, kFrameTrain, kFramePretrain, kFrameModule}));
  }
  ids_.dp_end = AddTemplate({kDpSlot,
                             "nccl:coalesced",
                             "",
                             false,
                             {},
                             {},
                             {},
                             {},
                             {kFrameCoalescingManager, kFrameFinishGradSync, kFrameTrainStep,
                              kFrameTrain, kFramePretrain, kFrameModule},
                             0});
  ids_.barrier =
      collective(kWorldSlot, "nccl:all_reduce_barrier", {1}, {1}, f32,
                 {kFrameBarrier, kFrameLogger, kFrameTrain, kFramePretrain, kFrameModule});
  for (int64_t s = 0; s < pp_; ++s) {
    for (int dir = 0; dir < 2; ++dir) {
      // Forward activations flow to s + 1, gradients back to s - 1; names use PP-local ranks.
      int64_t to = dir == 0 ? s + 1 : s - 1;
      int64_t from = dir == 0 ? s - 1 : s + 1;
      std::vector<int64_t> shape = {seq, 1, hidden};
      std::vector<uint32_t> tail = {kFrameCommunicate, kFrameSchedule, kFrameTrainStep,
                                    kFrameTrain,       kFramePretrain, kFrameModule};
      auto stack = [&](uint32_t inner) {
        std::vector<uint32_t> f = {inner, kFrameLogger,
                                   o_.batched_p2p ? kFrameBatchIsendIrecv : kFrameP2pOps};
        f.insert(f.end(), tail.begin(), tail.end());
        return f;
      };
      ids_.send.push_back(AddTemplate({kPpSlot,
                                       fmt::format("nccl:send {}->{}", s, to),
                                       "",
                                       true,
                                       {shape},
                                       {shape},
                                       {bf16},
                                       {bf16},
                                       stack(kFrameIsend),
                                       0}));
      ids_.recv.push_back(AddTemplate({kPpSlot,
                                       fmt::format("nccl:recv {}<-{}", s, from),
                                       "",
                                       true,
                                       {shape},
                                       {shape},
                                       {bf16},
                                       {bf16},
                                       stack(kFrameIrecv),
                                       0}));
    }
  }
  ids_.p2p_end = AddTemplate({kPpSlot,
                              "nccl:coalesced",
                              "",
                              true,
                              {},
                              {},
                              {},
                              {},
                              {kFrameBatchIsendIrecv, kFrameCommunicate, kFrameSchedule,
                               kFrameTrainStep, kFrameTrain, kFramePretrain, kFrameModule},
                              0});
  state_->p2p_end_template = ids_.p2p_end;
}

void Simulator::BuildStep(int32_t rank, RankSim& rs) {
  const RankCoordinates c = Coord(rank);
  const int64_t s = c.pp_stage;
  const int64_t step = rs.step;
  std::vector<ProgramOp>& prog = rs.program;
  prog.clear();
  auto collective = [&](int slot, uint32_t id, int64_t gap) {
    ProgramOp op;
    op.slot = slot;
    op.entry_count = 1;
    op.entries[0] = id;
    op.gpu_gap_ns = gap;
    prog.push_back(op);
  };
  auto coalesced = [&](int slot, const std::vector<uint32_t>& ids, uint32_t end, int64_t gap) {
    ProgramOp op;
    op.slot = slot;
    for (uint32_t id : ids) op.entries[op.entry_count++] = id;
    op.entries[op.entry_count++] = end;
    op.gpu_gap_ns = gap;
    prog.push_back(op);
  };
  // A p2p launch: one op plain, two ops as a batch_isend_irecv. dir 0 = forward, 1 = backward.
  struct P2pSpec {
    bool is_send;
    int dir;
  };
  auto p2p = [&](std::initializer_list<P2pSpec> ops) {
    ProgramOp op;
    op.slot = kPpSlot;
    op.is_p2p = true;
    op.blocking = false;
    // Within a batch the order of sends and recvs is arbitrary; vary it by stage.
    std::vector<P2pSpec> ordered(ops);
    if (ordered.size() == 2 && s % 2 == 1) std::swap(ordered[0], ordered[1]);
    for (const P2pSpec& p : ordered) {
      int64_t peer = (p.is_send == (p.dir == 0)) ? s + 1 : s - 1;
      op.p2p[op.p2p_count++] = {p.is_send, peer};
      op.entries[op.entry_count++] =
          p.is_send ? ids_.send[s * 2 + p.dir] : ids_.recv[s * 2 + p.dir];
      op.blocking |= !p.is_send;
    }
    if (ordered.size() > 1) op.entries[op.entry_count++] = ids_.p2p_end;
    prog.push_back(op);
  };
  const bool has_tp = tp_ > 1, has_pp = pp_ > 1;
  const bool batched = o_.batched_p2p;
  const bool first = s == 0, last = s == pp_ - 1;
  const int64_t m_count = o_.microbatches, layers = o_.layers_per_stage;
  auto a2a = [&](int dir, int kind, int64_t rotation) {
    return ids_.a2a[((dir * 2 + kind) * tp_ + c.tp_index) * tp_ + rotation % tp_];
  };
  auto layer_ops = [&](int dir, int64_t m, int64_t l) {
    if (!has_tp) return;
    int64_t gap = dir == 0 ? kForwardGapNs : kBackwardGapNs;
    bool moe = o_.moe_every > 0 && (l + 1) % o_.moe_every == 0;
    auto attention = [&] {
      collective(kTpSlot, ids_.ag_attn[dir], gap);
      collective(kTpSlot, ids_.rs_attn[dir], gap);
    };
    auto mlp = [&] {
      if (moe) {
        int64_t rotation = step + m + l;
        collective(kTpSlot, a2a(dir, dir == 0 ? 0 : 1, rotation), gap);
        collective(kTpSlot, a2a(dir, dir == 0 ? 1 : 0, rotation), gap);
      } else {
        collective(kTpSlot, ids_.ag_mlp[dir], gap);
        collective(kTpSlot, ids_.rs_mlp[dir], gap);
      }
    };
    if (dir == 0) {
      attention();
      mlp();
    } else {
      mlp();
      attention();
    }
  };

  // Forward of every microbatch (fill), then backward (drain).
  for (int64_t m = 0; m < m_count; ++m) {
    if (has_pp && !first && (!batched || m == 0)) p2p({{false, 0}});
    for (int64_t l = 0; l < layers; ++l) layer_ops(0, m, l);
    if (last && has_tp) collective(kTpSlot, ids_.loss_all_reduce, kForwardGapNs);
    if (!has_pp) continue;
    bool send = !last;
    if (!batched) {
      if (send) p2p({{true, 0}});
    } else if (m + 1 < m_count) {
      // send_forward_recv_forward: this microbatch out, the next one in.
      if (send && !first) {
        p2p({{true, 0}, {false, 0}});
      } else if (send) {
        p2p({{true, 0}});
      } else if (!first) {
        p2p({{false, 0}});
      }
    } else if (send) {
      // send_forward_recv_backward at the turn from forward to backward.
      p2p({{true, 0}, {false, 1}});
    }
  }
  for (int64_t m = 0; m < m_count; ++m) {
    if (has_pp && !last && (!batched ? true : false)) p2p({{false, 1}});
    for (int64_t l = layers; l-- > 0;) layer_ops(1, m, l);
    if (!has_pp) continue;
    bool send = !first;
    if (!batched) {
      if (send) p2p({{true, 1}});
    } else if (m + 1 < m_count) {
      if (send && !last) {
        p2p({{true, 1}, {false, 1}});
      } else if (send) {
        p2p({{true, 1}});
      } else if (!last) {
        p2p({{false, 1}});
      }
    } else if (send) {
      p2p({{true, 1}});
    }
  }
  if (dp_ > 1) {
    if (o_.dp_reduce_scatter) {
      coalesced(kDpSlot, ids_.dp_reduce_scatter, ids_.dp_end, kBackwardGapNs);
      coalesced(kDpSlot, ids_.dp_all_gather, ids_.dp_end, kOptimizerGapNs);
    } else {
      coalesced(kDpSlot, ids_.dp_all_reduce, ids_.dp_end, kBackwardGapNs);
    }
  }
  if (o_.barrier_every > 0 && world_ > 1 && (step + 1) % o_.barrier_every == 0) {
    collective(kWorldSlot, ids_.barrier, 0);
  }
  if (o_.fault.kind == FaultKind::kStraggler && rank == o_.fault.rank && !prog.empty()) {
    // A slow input pipeline delays the rank's first kernel of every step.
    prog[0].gpu_gap_ns += static_cast<int64_t>(o_.fault.straggler_delay_ms * kMs);
  }
}

GroupTruth Simulator::TruthGroup(int32_t rank, int slot) const {
  GroupTruth g;
  g.name = fmt::format("{}", sims_[rank].gid[slot]);
  g.desc = std::string(GroupDesc(slot));
  RankCoordinates c = Coord(rank);
  for (int64_t i = 0; i < GroupSize(slot); ++i) {
    switch (slot) {
      case kTpSlot:
        g.ranks.push_back(RankAt(c.dp_index, c.pp_stage, i));
        break;
      case kPpSlot:
        g.ranks.push_back(RankAt(c.dp_index, i, c.tp_index));
        break;
      case kDpSlot:
        g.ranks.push_back(RankAt(i, c.pp_stage, c.tp_index));
        break;
      default:
        g.ranks.push_back(i);
    }
  }
  return g;
}

absl::Status Simulator::ApplyFault(int32_t rank, RankSim& rs) {
  const FaultOptions& f = o_.fault;
  const int slot = static_cast<int>(f.group);
  GroundTruth& truth = state_->truth;
  std::vector<ProgramOp>& prog = rs.program;
  auto not_found = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        fmt::format("fault {}: rank {} has no {} #{} on its {} group in step {}{}",
                    FaultKindName(f.kind), rank, what, f.occurrence, GroupDesc(slot), f.step,
                    slot == kWorldSlot ? fmt::format(" (the world group has only the barrier of "
                                                     "every {}th step)",
                                                     o_.barrier_every)
                                       : ""));
  };
  // The target: the occurrence-th launch on the group (collective launches only, when asked).
  auto find_launch = [&](bool collectives_only) -> int64_t {
    int64_t seen = 0;
    for (size_t i = 0; i < prog.size(); ++i) {
      if (prog[i].slot != slot || (collectives_only && prog[i].is_p2p)) continue;
      if (seen++ == f.occurrence) return static_cast<int64_t>(i);
    }
    return -1;
  };
  truth.fault_step = f.step;
  switch (f.kind) {
    case FaultKind::kStuckBeforeOp:
    case FaultKind::kCrashedRank:
    case FaultKind::kGpuStall: {
      int64_t i = find_launch(false);
      if (i < 0) return not_found("op");
      if (f.kind == FaultKind::kGpuStall) {
        prog[i].gpu_stall = true;
      } else {
        // The CPU stops before this launch: truncate the program and stop at its end.
        prog.resize(i + 1);
        prog[i].gpu_stall = false;
        stop_at_ = i;
      }
      return absl::OkStatus();
    }
    case FaultKind::kOpMismatch:
    case FaultKind::kSizeMismatch:
    case FaultKind::kDtypeMismatch:
    case FaultKind::kTransportStall: {
      int64_t i = find_launch(true);
      if (i < 0) return not_found("collective");
      prog[i].poison = true;
      if (f.kind == FaultKind::kTransportStall) return absl::OkStatus();
      OpTemplate variant = state_->templates[prog[i].entries[0]];
      truth.op = variant.op;  // what the majority issues
      if (f.kind == FaultKind::kOpMismatch) {
        variant.profiling_name =
            variant.op == "all_reduce" ? "nccl:_reduce_scatter_base" : "nccl:all_reduce";
      } else if (f.kind == FaultKind::kSizeMismatch) {
        for (auto& shape : variant.input_sizes) shape.back() += 64;
        for (auto& shape : variant.output_sizes) shape.back() += 64;
      } else {
        for (auto* dtypes : {&variant.input_dtypes, &variant.output_dtypes}) {
          for (std::string& d : *dtypes) d = d == "Float" ? "BFloat16" : "Float";
        }
      }
      variant.bytes = 0;
      prog[i].entries[0] = AddTemplate(std::move(variant));
      return absl::OkStatus();
    }
    case FaultKind::kMissingSend:
    case FaultKind::kMissingRecv: {
      bool want_send = f.kind == FaultKind::kMissingSend;
      int64_t seen = 0;
      for (size_t i = 0; i < prog.size(); ++i) {
        ProgramOp& op = prog[i];
        if (op.slot != slot || !op.is_p2p) continue;
        for (int k = 0; k < op.p2p_count; ++k) {
          if (op.p2p[k].is_send != want_send || seen++ != f.occurrence) continue;
          RankCoordinates c = Coord(rank);
          p2p_fault_peer_ = RankAt(c.dp_index, op.p2p[k].peer_stage, c.tp_index);
          truth.op = state_->templates[op.entries[k]].op;
          if (op.p2p_count == 1) {
            prog.erase(prog.begin() + static_cast<int64_t>(i));
            return absl::OkStatus();
          }
          // The batch keeps its other op and its end entry.
          op.p2p[k] = op.p2p[1 - k];
          op.entries[k] = op.entries[1 - k];
          op.p2p_count = 1;
          op.entries[1] = op.entries[2];
          op.entry_count = 2;
          op.blocking = !op.p2p[0].is_send;
          return absl::OkStatus();
        }
      }
      return not_found(want_send ? "send" : "recv");
    }
    default:
      return absl::OkStatus();
  }
}

void Simulator::Advance(int32_t rank) {
  RankSim& rs = sims_[rank];
  rs.waiting_for_step = -1;
  // Completed launches at the front are no longer referenced (links to them were resolved when
  // they completed), so the window of live launches stays a few steps long.
  while (!rs.launches.empty() && rs.launches.front().completed) {
    rs.launches.pop_front();
    ++rs.base;
  }
  const FaultOptions& f = o_.fault;
  const bool is_culprit = rank == f.rank;
  while (!rs.stopped) {
    if (rs.cursor == rs.program.size()) {
      int32_t next = rs.step + 1;
      if (next >= o_.steps) {
        rs.stopped = true;
        break;
      }
      // loss.item() at the end of the previous step synchronises on the step before it.
      if (next >= 2) {
        if (rs.outstanding[next - 2] > 0) {
          rs.waiting_for_step = next - 2;
          return;
        }
        rs.cpu_time = std::max(rs.cpu_time, rs.step_done[next - 2]);
      }
      rs.cpu_time += kStepOverheadNs;
      if (f.kind == FaultKind::kStraggler && is_culprit) {
        rs.cpu_time += static_cast<int64_t>(f.straggler_delay_ms * kMs);
      }
      rs.step = next;
      rs.cursor = 0;
      BuildStep(rank, rs);
      if (is_culprit && next == f.step) {
        if (absl::Status s = ApplyFault(rank, rs); !s.ok()) {
          Fail(std::move(s));
          rs.stopped = true;
          break;
        }
      }
      continue;
    }
    const ProgramOp& op = rs.program[rs.cursor];
    if (is_culprit && stop_at_ >= 0 && rs.step == f.step &&
        rs.cursor == static_cast<size_t>(stop_at_)) {
      GroundTruth& truth = state_->truth;
      truth.process_group = TruthGroup(rank, op.slot);
      const OpTemplate& t = state_->templates[op.entries[0]];
      truth.op = t.op;
      if (op.is_p2p) {
        truth.p2p_seq_id = rs.p2p_seq[op.slot] + 1;
      } else {
        truth.collective_seq_id = rs.collective_seq[op.slot] + 1;
      }
      truth.description = fmt::format(
          "rank {} {} before {} {} #{} in step {}", rank,
          f.kind == FaultKind::kCrashedRank ? "crashed" : "is stuck", GroupDesc(op.slot), t.op,
          op.is_p2p ? truth.p2p_seq_id : truth.collective_seq_id, rs.step);
      rs.stopped = true;
      break;
    }
    int64_t last_created = rs.cpu_time + kCpuPerLaunchNs + op.entry_count * kCpuPerEntryNs;
    if (last_created > cut_) {
      rs.stopped = true;  // the on-demand dump happens before this op is issued
      break;
    }
    Enqueue(rank, rs, op);
    ++rs.cursor;
  }
}

void Simulator::Enqueue(int32_t rank, RankSim& rs, const ProgramOp& op) {
  const int32_t index = rs.base + static_cast<int32_t>(rs.launches.size());
  rs.launches.emplace_back();
  Launch& l = rs.launches.back();
  l.step = rs.step;
  l.slot = static_cast<uint8_t>(op.slot);
  l.is_p2p = op.is_p2p;
  l.blocking = op.blocking;
  l.poison = op.poison;
  l.gpu_gap = op.gpu_gap_ns;
  const int slot = op.slot;
  if (op.is_p2p) {
    l.p2p_seq = ++rs.p2p_seq[slot];
  } else {
    l.collective_seq = ++rs.collective_seq[slot];
    state_->ranks[rank].last_enqueued[slot] = l.collective_seq;
  }
  // Entries are recorded as the CPU issues them; the launch itself happens with the last one
  // (for a coalesced group, at the end of the coalescing manager).
  rs.cpu_time += kCpuPerLaunchNs;
  State::Rank& out = state_->ranks[rank];
  l.first_record = out.records;
  l.record_count = static_cast<uint16_t>(op.entry_count);
  for (int e = 0; e < op.entry_count; ++e) {
    rs.cpu_time += kCpuPerEntryNs;
    Record r;
    r.created = rs.cpu_time;
    r.started = kNever;
    r.completed = kNever;
    r.template_id = op.entries[e];
    r.collective_seq = rs.collective_seq[slot];
    r.p2p_seq = rs.p2p_seq[slot];
    const bool closes_group = op.entry_count > 1 && e == op.entry_count - 1 &&
                              (op.entries[e] == ids_.dp_end || op.entries[e] == ids_.p2p_end);
    const bool has_closing = op.entry_count > 1 && (op.entries[op.entry_count - 1] == ids_.dp_end ||
                                                    op.entries[op.entry_count - 1] == ids_.p2p_end);
    r.silent_member = has_closing && !closes_group;
    // The closing entry reuses its last member's op id.
    r.op_id = closes_group ? rs.op_id[slot] : ++rs.op_id[slot];
    if (keep_records_) {
      const size_t cap = static_cast<size_t>(o_.buffer_size);
      if (out.ring.size() < cap) {
        out.ring.push_back(r);
      } else {
        out.ring[out.records % o_.buffer_size] = r;
      }
    }
    ++out.records;
  }
  l.ready = rs.cpu_time;
  Touch(rs.cpu_time);

  // In-order stream per (rank, group).
  int32_t prev = rs.last_on_stream[slot];
  if (prev >= 0 && !Completed(rank, prev)) {
    l.prev_on_stream = prev;
    At(rank, prev).next_on_stream = index;
  } else if (prev >= 0) {
    l.ready = std::max(l.ready, rs.stream_done[slot]);
  }
  rs.last_on_stream[slot] = index;
  // The GPU work before this op needs the result of the last blocking op. (References into a
  // deque stay valid across push_back.)
  Launch& self = l;
  int32_t dep = rs.last_blocking;
  if (dep >= 0 && !Completed(rank, dep)) {
    self.dep = dep;
  } else {
    self.ready =
        std::max(self.ready, (dep >= 0 ? rs.last_blocking_done : o_.start_time_ns) + self.gpu_gap);
  }
  if (self.blocking) rs.last_blocking = index;
  if (op.gpu_stall) {
    rs.gpu_stall_from = index;
    GroundTruth& truth = state_->truth;
    truth.process_group = TruthGroup(rank, slot);
    truth.op = state_->templates[op.entries[0]].op;
    truth.collective_seq_id = op.is_p2p ? -1 : self.collective_seq;
    if (op.is_p2p) truth.p2p_seq_id = self.p2p_seq;
    truth.description = fmt::format("the GPU of rank {} never starts {} {} {}#{} (step {})", rank,
                                    GroupDesc(slot), truth.op, op.is_p2p ? "p2p " : "",
                                    op.is_p2p ? self.p2p_seq : self.collective_seq, rs.step);
  }
  if (op.poison) {
    GroundTruth& truth = state_->truth;
    truth.process_group = TruthGroup(rank, slot);
    truth.collective_seq_id = self.collective_seq;
    if (truth.op.empty()) truth.op = state_->templates[op.entries[0]].op;
  }
  rs.outstanding[rs.step] += 1;

  // FIFO pairing per (src, dst) channel: the n-th send pairs with the n-th recv.
  self.pending = static_cast<uint8_t>(op.p2p_count);
  RankCoordinates c = Coord(rank);
  for (int k = 0; k < op.p2p_count; ++k) {
    int64_t peer = RankAt(c.dp_index, op.p2p[k].peer_stage, c.tp_index);
    bool is_send = op.p2p[k].is_send;
    self.p2p_peer[k] = static_cast<int32_t>(peer);
    self.p2p_send[k] = is_send;
    uint64_t key = is_send ? (static_cast<uint64_t>(rank) << 32 | static_cast<uint64_t>(peer))
                           : (static_cast<uint64_t>(peer) << 32 | static_cast<uint64_t>(rank));
    PendingP2p& channel = channels_[key];
    std::deque<Link>& partners = is_send ? channel.recvs : channel.sends;
    if (partners.empty()) {
      (is_send ? channel.sends : channel.recvs).push_back({rank, index, k});
      continue;
    }
    Link p = partners.front();
    partners.pop_front();
    self.partner[k] = p;
    At(p.rank, p.index).partner[p.op] = {rank, index, k};
  }
  // Durations: latency plus size over bandwidth (NVLink inside a TP group, network otherwise),
  // with deterministic jitter.
  int64_t bytes = 0;
  for (int e = 0; e < op.entry_count; ++e) bytes += state_->templates[op.entries[e]].bytes;
  double bandwidth = slot == kTpSlot ? 150.0 : 20.0;  // bytes per ns
  double jitter = 1.0 + 0.2 * Uniform(o_.seed, 1, static_cast<uint64_t>(rank), index);
  self.duration =
      kCollectiveLatencyNs + static_cast<int64_t>(static_cast<double>(bytes) / bandwidth * jitter);
  work_.push_back({WorkKind::kTryStart, rank, index});
}

void Simulator::TryStart(int32_t rank, int32_t index) {
  RankSim& rs = sims_[rank];
  if (index < rs.base) return;
  Launch& l = At(rank, index);
  if (l.started || l.prev_on_stream >= 0 || l.dep >= 0 || index >= rs.gpu_stall_from) return;
  Start(rank, index);
}

void Simulator::Start(int32_t rank, int32_t index) {
  Launch& l = At(rank, index);
  l.started = true;
  l.start = l.ready;
  Touch(l.start);
  State::Rank& out = state_->ranks[rank];
  if (keep_records_) {
    for (int64_t r = l.first_record; r < l.first_record + l.record_count; ++r) {
      if (r >= out.records - o_.buffer_size) out.ring[r % o_.buffer_size].started = l.start;
    }
  }
  if (!l.is_p2p) {
    if (o_.timing && l.start + out.watchdog_lag_ns <= cut_) {
      out.last_started[l.slot] = std::max<int64_t>(out.last_started[l.slot], l.collective_seq);
    }
    uint64_t gid = static_cast<uint64_t>(sims_[rank].gid[l.slot]);
    Instance& inst = instances_[gid << 32 | l.collective_seq];
    const int64_t size = GroupSize(l.slot);
    if (inst.members.empty()) inst.members.reserve(static_cast<size_t>(size));
    inst.members.push_back({rank, index, 0});
    inst.max_start = std::max(inst.max_start, l.start);
    inst.poison |= l.poison;
    if (static_cast<int64_t>(inst.members.size()) < size || inst.poison) return;
    // Everyone's kernel ends together once the last member arrived.
    int64_t done = inst.max_start + l.duration;
    std::vector<Link> members = std::move(inst.members);
    instances_.erase(gid << 32 | l.collective_seq);
    for (const Link& m : members) Complete(m.rank, m.index, done);
    return;
  }
  for (int k = 0; k < kMaxP2pPerLaunch; ++k) {
    Link p = l.partner[k];
    if (p.rank < 0) continue;
    Launch& other = At(p.rank, p.index);
    if (!other.started) continue;
    int64_t met = std::max(l.start, other.start);
    l.pending--;
    l.max_satisfied = std::max(l.max_satisfied, met);
    other.pending--;
    other.max_satisfied = std::max(other.max_satisfied, met);
    if (other.pending == 0) Complete(p.rank, p.index, other.max_satisfied + other.duration);
  }
  Launch& self = At(rank, index);
  if (self.pending == 0) Complete(rank, index, self.max_satisfied + self.duration);
}

void Simulator::Complete(int32_t rank, int32_t index, int64_t time) {
  RankSim& rs = sims_[rank];
  Launch& l = At(rank, index);
  l.completed = true;
  l.complete = time;
  Touch(time);
  State::Rank& out = state_->ranks[rank];
  if (keep_records_) {
    for (int64_t r = l.first_record; r < l.first_record + l.record_count; ++r) {
      if (r >= out.records - o_.buffer_size) out.ring[r % o_.buffer_size].completed = time;
    }
  }
  if (!l.is_p2p && time + out.watchdog_lag_ns <= cut_) {
    out.last_completed[l.slot] = std::max<int64_t>(out.last_completed[l.slot], l.collective_seq);
  }
  rs.stream_done[l.slot] = time;
  if (l.blocking && rs.last_blocking == index) rs.last_blocking_done = time;
  rs.step_done[l.step] = std::max(rs.step_done[l.step], time);
  if (--rs.outstanding[l.step] == 0 && rs.waiting_for_step == l.step) {
    work_.push_back({WorkKind::kAdvance, rank, 0});
  }
  // Resolve the links of those waiting for this launch.
  const int32_t next = l.next_on_stream;
  const bool blocking = l.blocking;
  if (next >= 0) {
    Launch& n = At(rank, next);
    n.prev_on_stream = -1;
    n.ready = std::max(n.ready, time);
    work_.push_back({WorkKind::kTryStart, rank, next});
  }
  if (blocking) {
    const int32_t end = rs.base + static_cast<int32_t>(rs.launches.size());
    for (int32_t j = index + 1; j < end; ++j) {
      Launch& d = At(rank, j);
      if (d.dep == index) {
        d.dep = -1;
        d.ready = std::max(d.ready, time + d.gpu_gap);
        work_.push_back({WorkKind::kTryStart, rank, j});
      }
      if (d.blocking) break;
    }
  }
}

absl::Status Simulator::Run(int64_t cut_ns, bool keep_records) {
  cut_ = cut_ns;
  keep_records_ = keep_records;
  sims_.assign(static_cast<size_t>(world_), RankSim());
  instances_.clear();
  channels_.clear();
  latest_event_ = o_.start_time_ns;
  stop_at_ = -1;
  p2p_fault_peer_ = -1;
  state_->truth = GroundTruth();
  state_->ranks.assign(static_cast<size_t>(world_), State::Rank());
  for (int32_t r = 0; r < world_; ++r) {
    RankSim& rs = sims_[r];
    rs.cpu_time = o_.start_time_ns + static_cast<int64_t>(Uniform(o_.seed, 2, r) * kMs);
    rs.outstanding.assign(static_cast<size_t>(o_.steps), 0);
    rs.step_done.assign(static_cast<size_t>(o_.steps), 0);
    RankCoordinates c = Coord(r);
    rs.gid[kWorldSlot] = 0;
    rs.gid[kTpSlot] = 1 + c.dp_index * pp_ + c.pp_stage;
    rs.gid[kPpSlot] = 1 + dp_ * pp_ + c.dp_index * tp_ + c.tp_index;
    rs.gid[kDpSlot] = 1 + dp_ * pp_ + dp_ * tp_ + c.pp_stage * tp_ + c.tp_index;
    State::Rank& out = state_->ranks[r];
    if (keep_records) out.ring.reserve(static_cast<size_t>(o_.buffer_size));
    int64_t host = r / std::max<int64_t>(o_.ranks_per_host, 1);
    out.skew_ns = static_cast<int64_t>((2 * Uniform(o_.seed, 3, host) - 1) *
                                       static_cast<double>(o_.max_clock_skew_ns));
    out.watchdog_lag_ns = 100 * kUs + static_cast<int64_t>(Uniform(o_.seed, 4, r) * 400 * kUs);
    work_.push_back({WorkKind::kAdvance, r, 0});
  }
  // The fixed point: each item only raises times computed as maxima, so the order in which the
  // items are processed does not change the result.
  while (!work_.empty() && status_.ok()) {
    Work w = work_.back();
    work_.pop_back();
    if (w.kind == WorkKind::kAdvance) {
      Advance(w.rank);
    } else {
      TryStart(w.rank, w.index);
    }
  }
  return status_;
}

void Simulator::FinishTruth(int64_t dump_time_ns) {
  const FaultOptions& f = o_.fault;
  GroundTruth& truth = state_->truth;
  truth.dump_time_ns = dump_time_ns;
  const int32_t culprit = static_cast<int32_t>(f.rank);
  switch (f.kind) {
    case FaultKind::kNone:
      truth.failure_class = "none";
      truth.description = "healthy job, dumped on demand while running";
      return;
    case FaultKind::kStraggler:
      truth.failure_class = "none";
      truth.straggler_rank = f.rank;
      truth.straggler_delay_ms = f.straggler_delay_ms;
      truth.description = fmt::format("healthy job; rank {} is late by {} ms every step", f.rank,
                                      f.straggler_delay_ms);
      return;
    case FaultKind::kStuckBeforeOp:
    case FaultKind::kCrashedRank:
      truth.failure_class = "missing_participant";
      break;
    case FaultKind::kGpuStall:
      truth.failure_class = "gpu_stall";
      break;
    case FaultKind::kOpMismatch:
      truth.failure_class = "op_mismatch";
      break;
    case FaultKind::kSizeMismatch:
      truth.failure_class = "size_mismatch";
      break;
    case FaultKind::kDtypeMismatch:
      truth.failure_class = "dtype_mismatch";
      break;
    case FaultKind::kMissingSend:
    case FaultKind::kMissingRecv:
      truth.failure_class = "p2p_unmatched";
      break;
    case FaultKind::kTransportStall:
      truth.failure_class = "stuck_collective";
      break;
  }
  if (f.kind != FaultKind::kTransportStall) truth.culprit_ranks = {f.rank};
  if (f.kind == FaultKind::kCrashedRank) {
    truth.missing_ranks = {f.rank};
    state_->ranks[culprit].crashed = true;
  }
  const int fault_slot = static_cast<int>(f.group);
  if (f.kind == FaultKind::kOpMismatch || f.kind == FaultKind::kSizeMismatch ||
      f.kind == FaultKind::kDtypeMismatch || f.kind == FaultKind::kTransportStall) {
    truth.description =
        fmt::format("{} at {} {} #{} (group {}) in step {}, rank {}", FaultKindName(f.kind),
                    GroupDesc(fault_slot), truth.op, truth.collective_seq_id,
                    truth.process_group.name, f.step, f.rank);
  }
  if (f.kind == FaultKind::kMissingSend || f.kind == FaultKind::kMissingRecv) {
    truth.process_group = TruthGroup(culprit, kPpSlot);
    truth.peer_rank = p2p_fault_peer_;
    // The peer's op that was left without partner: the oldest unpaired one on the channel.
    // Sends and recvs pair in FIFO order per channel, as NCCL pairs them, so when the culprit
    // ran ahead into the next step, its later ops on the channel took that place: then it is
    // the peer's oldest op on the channel paired with an op of the culprit that never started.
    const bool send = f.kind == FaultKind::kMissingSend;
    const int32_t peer = static_cast<int32_t>(p2p_fault_peer_);
    uint64_t src = static_cast<uint64_t>(send ? f.rank : p2p_fault_peer_);
    uint64_t dst = static_cast<uint64_t>(send ? p2p_fault_peer_ : f.rank);
    auto it = channels_.find(src << 32 | dst);
    if (it != channels_.end()) {
      const std::deque<Link>& waiting = send ? it->second.recvs : it->second.sends;
      for (const Link& w : waiting) {
        if (w.rank == peer && w.index >= sims_[w.rank].base) {
          truth.p2p_seq_id = At(w.rank, w.index).p2p_seq;
          break;
        }
      }
    }
    for (size_t i = 0; truth.p2p_seq_id < 0 && peer >= 0 && i < sims_[peer].launches.size(); ++i) {
      const Launch& l = sims_[peer].launches[i];
      if (!l.is_p2p || l.completed) continue;
      for (int k = 0; k < kMaxP2pPerLaunch; ++k) {
        const Link& partner = l.partner[k];
        // The peer's side of the skipped op: a recv for a skipped send, and the reverse.
        if (l.p2p_peer[k] != culprit || l.p2p_send[k] == send || partner.rank != culprit) continue;
        if (partner.index >= sims_[culprit].base && !At(culprit, partner.index).started) {
          truth.p2p_seq_id = l.p2p_seq;
          break;
        }
      }
    }
    truth.description = fmt::format(
        "rank {} skipped a {} {} rank {} in step {}; rank {}'s p2p #{} is left without its partner",
        f.rank, truth.op, send ? "to" : "from", p2p_fault_peer_, f.step, p2p_fault_peer_,
        truth.p2p_seq_id);
  }
}

}  // namespace

std::string_view FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone:
      return "none";
    case FaultKind::kStuckBeforeOp:
      return "stuck_before_op";
    case FaultKind::kCrashedRank:
      return "crashed_rank";
    case FaultKind::kOpMismatch:
      return "op_mismatch";
    case FaultKind::kSizeMismatch:
      return "size_mismatch";
    case FaultKind::kDtypeMismatch:
      return "dtype_mismatch";
    case FaultKind::kMissingSend:
      return "missing_send";
    case FaultKind::kMissingRecv:
      return "missing_recv";
    case FaultKind::kGpuStall:
      return "gpu_stall";
    case FaultKind::kTransportStall:
      return "transport_stall";
    case FaultKind::kStraggler:
      return "straggler";
  }
  return "unknown";
}

SimulatedJob::SimulatedJob(std::unique_ptr<const State> state) : state_(std::move(state)) {}
SimulatedJob::SimulatedJob(SimulatedJob&&) noexcept = default;
SimulatedJob& SimulatedJob::operator=(SimulatedJob&&) noexcept = default;
SimulatedJob::~SimulatedJob() = default;

const JobSimulatorOptions& SimulatedJob::options() const { return state_->options; }
int64_t SimulatedJob::world_size() const { return state_->world; }
const GroundTruth& SimulatedJob::ground_truth() const { return state_->truth; }

RankCoordinates SimulatedJob::Coordinates(int64_t rank) const {
  const JobSimulatorOptions& o = state_->options;
  return {rank % o.tensor_parallel, (rank / o.tensor_parallel) % o.pipeline_parallel,
          rank / (o.tensor_parallel * o.pipeline_parallel)};
}

std::string SimulatedJob::HostName(int64_t rank) const {
  return fmt::format("node{:02d}", rank / std::max<int64_t>(state_->options.ranks_per_host, 1));
}

GroupTruth SimulatedJob::GroupOf(int64_t rank, GroupKind kind) const {
  const JobSimulatorOptions& o = state_->options;
  const int64_t tp = o.tensor_parallel, pp = o.pipeline_parallel, dp = o.data_parallel;
  const RankCoordinates c = Coordinates(rank);
  GroupTruth g;
  g.desc = std::string(GroupDesc(static_cast<int>(kind)));
  auto at = [&](int64_t d, int64_t s, int64_t t) { return d * pp * tp + s * tp + t; };
  switch (kind) {
    case GroupKind::kWorld:
      g.name = "0";
      for (int64_t r = 0; r < state_->world; ++r) g.ranks.push_back(r);
      break;
    case GroupKind::kTensor:
      g.name = fmt::format("{}", 1 + c.dp_index * pp + c.pp_stage);
      for (int64_t t = 0; t < tp; ++t) g.ranks.push_back(at(c.dp_index, c.pp_stage, t));
      break;
    case GroupKind::kPipeline:
      g.name = fmt::format("{}", 1 + dp * pp + c.dp_index * tp + c.tp_index);
      for (int64_t s = 0; s < pp; ++s) g.ranks.push_back(at(c.dp_index, s, c.tp_index));
      break;
    case GroupKind::kData:
      g.name = fmt::format("{}", 1 + dp * pp + dp * tp + c.pp_stage * tp + c.tp_index);
      for (int64_t d = 0; d < dp; ++d) g.ranks.push_back(at(d, c.pp_stage, c.tp_index));
      break;
  }
  return g;
}

bool SimulatedJob::HasDump(int64_t rank) const {
  return rank >= 0 && rank < state_->world && !state_->ranks[rank].crashed;
}

int64_t SimulatedJob::HostClockSkewNs(int64_t rank) const {
  return rank >= 0 && rank < state_->world ? state_->ranks[rank].skew_ns : 0;
}

int64_t SimulatedJob::EntriesRecorded(int64_t rank) const {
  return rank >= 0 && rank < state_->world ? state_->ranks[rank].records : 0;
}

std::optional<DumpSpec> SimulatedJob::RankDump(int64_t rank) const {
  if (!HasDump(rank)) return std::nullopt;
  const JobSimulatorOptions& o = state_->options;
  const State::Rank& in = state_->ranks[rank];
  DumpSpec spec;
  spec.version = o.version;
  spec.include_stacks = o.include_stacks;
  spec.frames = state_->frames;
  std::array<GroupTruth, 4> groups;
  for (int slot = 0; slot < 4; ++slot) {
    groups[slot] = GroupOf(rank, static_cast<GroupKind>(slot));
    spec.process_groups.push_back({groups[slot].name, groups[slot].desc, groups[slot].ranks, slot});
    PgStatusSpec status;
    status.last_enqueued_collective = in.last_enqueued[slot];
    status.last_started_collective = o.timing ? in.last_started[slot] : -1;
    status.last_completed_collective = in.last_completed[slot];
    spec.pg_status[slot] = status;
  }
  const int64_t dump_time = state_->truth.dump_time_ns;
  const int64_t lag = in.watchdog_lag_ns;
  const int64_t first = std::max<int64_t>(0, in.records - o.buffer_size);
  const std::string thread_id = fmt::format("{}", 139'872'000'000'000 + rank * 4096);
  spec.entries.reserve(static_cast<size_t>(in.records - first));
  for (int64_t id = first; id < in.records; ++id) {
    const Record& r = in.ring[id % o.buffer_size];
    const OpTemplate& t = state_->templates[r.template_id];
    EntrySpec e;
    e.record_id = id;
    e.pg_id = t.slot;
    e.pg_name = groups[t.slot].name;
    e.pg_desc = groups[t.slot].desc;
    e.collective_seq_id = r.collective_seq;
    e.p2p_seq_id = r.p2p_seq;
    e.op_id = r.op_id;
    e.profiling_name = t.profiling_name;
    e.time_created_ns = r.created + in.skew_ns;
    e.input_sizes = t.input_sizes;
    e.input_dtypes = t.input_dtypes;
    e.output_sizes = t.output_sizes;
    e.output_dtypes = t.output_dtypes;
    const bool completed =
        !r.silent_member && r.completed != kNever && r.completed + lag <= dump_time;
    const bool started = !r.silent_member && r.started != kNever && r.started + lag <= dump_time;
    if (completed) {
      e.state = "completed";
      e.retired = true;
      e.time_discovered_completed_ns = r.completed + lag + in.skew_ns;
    } else if (started && o.timing) {
      e.state = "started";
    }
    if (o.timing && started) {
      e.time_discovered_started_ns = r.started + lag + in.skew_ns;
      // PyTorch keeps the duration as a float (CUDA's event timer) and writes it out widened.
      if (completed) e.duration_ms = static_cast<float>((r.completed - r.started) / 1e6);
    }
    e.timeout_ms = o.timeout_ms;
    // PyTorch writes is_p2p false on the entry closing a p2p batch (pytorch/pytorch#139280).
    e.is_p2p = t.is_p2p && r.template_id != state_->p2p_end_template;
    e.thread_id = thread_id;
    e.frames = t.frames;
    spec.entries.push_back(std::move(e));
  }
  return spec;
}

int64_t LatestStepWithOpOn(const JobSimulatorOptions& options, GroupKind group, int64_t step) {
  const JobSimulatorOptions& o = options;
  const int64_t world = o.tensor_parallel * o.pipeline_parallel * o.data_parallel;
  for (int64_t s = std::min(step, o.steps - 1); s >= 0; --s) {
    switch (group) {
      case GroupKind::kWorld:
        // The same condition as BuildStep's barrier.
        if (o.barrier_every > 0 && world > 1 && (s + 1) % o.barrier_every == 0) return s;
        break;
      case GroupKind::kTensor:
        return o.tensor_parallel > 1 ? s : -1;
      case GroupKind::kPipeline:
        return o.pipeline_parallel > 1 ? s : -1;
      case GroupKind::kData:
        return o.data_parallel > 1 ? s : -1;
    }
  }
  return -1;
}

absl::StatusOr<SimulatedJob> SimulateJob(const JobSimulatorOptions& options) {
  const JobSimulatorOptions& o = options;
  if (o.tensor_parallel < 1 || o.pipeline_parallel < 1 || o.data_parallel < 1) {
    return absl::InvalidArgumentError(
        "tensor_parallel, pipeline_parallel and data_parallel must be >= 1");
  }
  const int64_t world = o.tensor_parallel * o.pipeline_parallel * o.data_parallel;
  if (world > (int64_t{1} << 30)) return absl::InvalidArgumentError("world size too large");
  if (o.microbatches < 1 || o.layers_per_stage < 1 || o.steps < 1 || o.buffer_size < 1) {
    return absl::InvalidArgumentError(
        "microbatches, layers_per_stage, steps and buffer_size must be >= 1");
  }
  if (o.dp_buckets < 1 || o.dp_buckets >= kMaxEntriesPerLaunch) {
    return absl::InvalidArgumentError(
        fmt::format("dp_buckets must be in [1, {}]", kMaxEntriesPerLaunch - 1));
  }
  if (o.timeout_ms < 1 || o.ranks_per_host < 1 || o.max_clock_skew_ns < 0) {
    return absl::InvalidArgumentError("timeout_ms and ranks_per_host must be >= 1, skew >= 0");
  }
  const FaultOptions& f = o.fault;
  const bool hangs = f.kind != FaultKind::kNone && f.kind != FaultKind::kStraggler;
  if (f.kind != FaultKind::kNone && (f.rank < 0 || f.rank >= world)) {
    return absl::InvalidArgumentError(
        fmt::format("fault rank {} is outside the world of {} ranks", f.rank, world));
  }
  if (hangs && (f.step < 0 || f.step >= o.steps)) {
    return absl::InvalidArgumentError(
        fmt::format("fault step {} is outside the program's {} steps", f.step, o.steps));
  }
  if (f.kind == FaultKind::kGpuStall && !o.timing) {
    return absl::InvalidArgumentError(
        "kGpuStall needs timing: without it the dumps cannot tell it from a stuck collective");
  }
  if (!(o.dump_fraction > 0 && o.dump_fraction <= 1)) {
    return absl::InvalidArgumentError("dump_fraction must be in (0, 1]");
  }

  auto state = std::make_unique<State>();
  state->options = o;
  state->world = world;
  Simulator sim(state->options, state.get());
  sim.BuildTemplates();
  int64_t dump_time = 0;
  if (hangs) {
    FR_RETURN_IF_ERROR(sim.Run(kNever, /*keep_records=*/true));
    // The watchdog fires a timeout after the oldest stuck op started; every rank dumps then. The
    // newest event is at most that old, so everything still pending is older than the timeout.
    dump_time = sim.latest_event() + 500 * kUs + o.timeout_ms * kMs + 2'000 * kMs;
  } else {
    // An on-demand dump of a running job: find how long the job runs, then run it again and stop
    // every CPU at the dump time.
    FR_RETURN_IF_ERROR(sim.Run(kNever, /*keep_records=*/false));
    const int64_t end = sim.latest_event();
    dump_time = o.start_time_ns +
                static_cast<int64_t>(o.dump_fraction * static_cast<double>(end - o.start_time_ns));
    FR_RETURN_IF_ERROR(sim.Run(dump_time, /*keep_records=*/true));
  }
  sim.FinishTruth(dump_time);
  return SimulatedJob(std::move(state));
}

}  // namespace fr
