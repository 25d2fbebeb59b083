// The simulated job as callers see it: options checked, the simulation run (twice for an
// on-demand dump of a running job, to know when to take it), and each rank's dump built on demand
// from the compact records the run kept.
#include "fr/simulate/job_simulator.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/simulate/job_simulator_internal.h"

namespace fr {
namespace {

using simulate_internal::GroupDesc;
using simulate_internal::kMaxEntriesPerLaunch;
using simulate_internal::kMs;
using simulate_internal::kNever;
using simulate_internal::kUs;
using simulate_internal::OpTemplate;
using simulate_internal::Record;
using simulate_internal::Simulator;
using simulate_internal::State;

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