#include "fr/simulate/example_job.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "fmt/format.h"
#include "fr/write/dump_writer.h"

namespace fr {
namespace {

// One collective or p2p op in the job's program, before ring-buffer truncation.
struct PlannedOp {
  uint32_t group;  // index into the rank's process_groups
  std::string profiling_name;
  bool is_p2p = false;
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::vector<int64_t>> output_sizes;
  std::string dtype;
  std::vector<uint32_t> frames;
};

// Frames shared by every stack; indices into DumpSpec::frames.
std::vector<FrameSpec> ExampleFrames() {
  return {
      {"main", "/workspace/train.py", 412},                                  // 0
      {"train_step", "/workspace/train.py", 301},                            // 1
      {"forward", "/workspace/model/transformer.py", 188},                   // 2
      {"backward", "/usr/lib/python3/dist-packages/torch/_tensor.py", 521},  // 3
      {"all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
       2501},  // 4
      {"all_gather_into_tensor",
       "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 3714},  // 5
      {"reduce_scatter_tensor",
       "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 4239},          // 6
      {"send", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 2187},  // 7
      {"recv", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 2244},  // 8
      {"barrier", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
       4811},                                                                              // 9
      {"wrapper", "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py", 81},  // 10
      {"sync_gradients", "/workspace/parallel/data_parallel.py", 97},                      // 11
      {"exchange_activations", "/workspace/parallel/tensor_parallel.py", 142},             // 12
      // The frames every training stack passes through between main() and the model.
      {"_call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 1747},  // 13
      {"_wrapped_call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
       1736},                                       // 14
      {"run_epoch", "/workspace/trainer.py", 221},  // 15
      {"fit", "/workspace/trainer.py", 118},        // 16
      {"wrapper",
       "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/"
       "errors/__init__.py",
       355},                                     // 17
      {"<module>", "/workspace/train.py", 530},  // 18
  };
}

}  // namespace

DumpSpec MakeExampleRankDump(const ExampleJobOptions& options, int64_t rank) {
  const int64_t world = options.world_size;
  const int64_t tp = options.tensor_parallel;
  const int64_t tp_index = rank / tp;  // which tensor-parallel group
  const int64_t tp_local = rank % tp;  // rank inside it
  const int64_t dp_groups = tp;        // one data-parallel group per tensor-parallel position

  DumpSpec spec;
  spec.version = options.version;
  spec.include_stacks = options.include_stacks;
  spec.frames = ExampleFrames();

  // Group names are created in the same order on every rank, as torch.distributed.new_group
  // requires: "0" the world, then the tensor-parallel groups, then the data-parallel ones. A rank
  // knows only the groups it belongs to.
  ProcessGroupSpec world_group{"0", "default_pg", {}, 0};
  for (int64_t r = 0; r < world; ++r) world_group.ranks.push_back(r);
  ProcessGroupSpec tp_group{fmt::format("{}", 1 + tp_index), "TP", {}, 1};
  for (int64_t r = tp_index * tp; r < (tp_index + 1) * tp; ++r) tp_group.ranks.push_back(r);
  ProcessGroupSpec dp_group{fmt::format("{}", 1 + world / tp + tp_local), "DP", {}, 2};
  for (int64_t r = tp_local; r < world; r += dp_groups) dp_group.ranks.push_back(r);
  spec.process_groups = {world_group, tp_group, dp_group};
  constexpr uint32_t kWorld = 0, kTp = 1, kDp = 2;

  // The program: per step, tensor-parallel all_gather, reduce_scatter and an activation
  // send/recv, then the data-parallel gradient all_reduce; a world barrier every ten steps.
  std::vector<PlannedOp> program;
  // Real stacks run 10-20 frames deep: the op's own frames, then the common way down from main.
  auto stack = [](std::vector<uint32_t> frames) {
    frames.insert(frames.end(), {14, 13, 15, 16, 17, 18});
    return frames;
  };
  const int64_t steps = options.entries_per_rank / 4 + 2;
  for (int64_t step = 0; step < steps; ++step) {
    program.push_back({kTp,
                       "nccl:_all_gather_base",
                       false,
                       {{1024, 4096}},
                       {{1024 * tp, 4096}},
                       "BFloat16",
                       stack({5, 10, 2, 14, 13, 1, 0})});
    program.push_back({kTp,
                       "nccl:_reduce_scatter_base",
                       false,
                       {{1024 * tp, 4096}},
                       {{1024, 4096}},
                       "BFloat16",
                       stack({6, 10, 3, 1, 0})});
    if (tp >= 2 && tp_local < 2) {
      bool sender = tp_local == 0;
      program.push_back({kTp,
                         sender ? "nccl:send 0->1" : "nccl:recv 1<-0",
                         true,
                         {{8, 1024, 4096}},
                         {{8, 1024, 4096}},
                         "BFloat16",
                         stack({sender ? 7u : 8u, 12, 2, 14, 13, 1, 0})});
    }
    program.push_back({kDp,
                       "nccl:all_reduce",
                       false,
                       {{25165824}},
                       {{25165824}},
                       "Float",
                       stack({4, 10, 11, 1, 0})});
    if (step % 10 == 9) {
      program.push_back(
          {kWorld, "nccl:all_reduce_barrier", false, {{1}}, {{1}}, "Float", stack({9, 10, 1, 0})});
    }
  }
  // The stuck rank never reaches the last data-parallel all_reduce; its peers wait in it.
  size_t last_all_reduce = program.size();
  for (size_t i = program.size(); i-- > 0;) {
    if (program[i].group == kDp) {
      last_all_reduce = i;
      break;
    }
  }
  bool in_stuck_dp_group = false;
  for (int64_t r : dp_group.ranks) in_stuck_dp_group |= r == options.stuck_rank;
  if (rank == options.stuck_rank) program.resize(last_all_reduce);
  if (options.stuck_rank >= 0) {
    // Everyone stops at the step of the hang: nothing after the final all_reduce was enqueued.
    program.resize(std::min(program.size(), last_all_reduce + 1));
  }

  int64_t seq[3] = {0, 0, 0};
  int64_t p2p_seq[3] = {0, 0, 0};
  int64_t op_ids[3] = {0, 0, 0};
  // Hosts hold eight ranks each, and their clocks disagree by a few microseconds.
  const int64_t host_skew_ns = (rank / 8) * 3700;
  std::vector<EntrySpec> entries;
  for (size_t i = 0; i < program.size(); ++i) {
    const PlannedOp& op = program[i];
    EntrySpec entry;
    entry.record_id = static_cast<int64_t>(i);
    entry.pg_id = spec.process_groups[op.group].pg_id;
    entry.pg_name = spec.process_groups[op.group].name;
    entry.pg_desc = spec.process_groups[op.group].desc;
    if (op.is_p2p) {
      entry.p2p_seq_id = ++p2p_seq[op.group];
      entry.collective_seq_id = seq[op.group];
    } else {
      entry.collective_seq_id = ++seq[op.group];
      entry.p2p_seq_id = p2p_seq[op.group];
    }
    entry.op_id = ++op_ids[op.group];
    entry.profiling_name = op.profiling_name;
    entry.is_p2p = op.is_p2p;
    entry.time_created_ns =
        options.start_time_ns + static_cast<int64_t>(i) * 1'500'000 + host_skew_ns + rank * 11;
    entry.input_sizes = op.input_sizes;
    entry.output_sizes = op.output_sizes;
    entry.input_dtypes.assign(op.input_sizes.size(), op.dtype);
    entry.output_dtypes.assign(op.output_sizes.size(), op.dtype);
    entry.frames = op.frames;
    bool hung = options.stuck_rank >= 0 && i == last_all_reduce && in_stuck_dp_group;
    if (hung) {
      entry.state = "scheduled";
    } else {
      entry.state = "completed";
      entry.time_discovered_completed_ns = entry.time_created_ns + 900'000;
      entry.retired = true;
    }
    entries.push_back(std::move(entry));
  }
  // The ring buffer keeps the newest entries.
  if (static_cast<int64_t>(entries.size()) > options.entries_per_rank) {
    entries.erase(entries.begin(), entries.end() - options.entries_per_rank);
  }
  spec.entries = std::move(entries);

  for (uint32_t g = 0; g < 3; ++g) {
    PgStatusSpec status;
    status.last_enqueued_collective = seq[g] > 0 ? seq[g] : -1;
    int64_t completed = seq[g];
    if (options.stuck_rank >= 0 && g == kDp && in_stuck_dp_group && rank != options.stuck_rank) {
      completed = seq[g] - 1;
    }
    status.last_completed_collective = completed > 0 ? completed : -1;
    spec.pg_status[spec.process_groups[g].pg_id] = status;
  }
  return spec;
}

absl::StatusOr<uint64_t> WriteExampleJob(const ExampleJobOptions& options,
                                         const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return absl::InvalidArgumentError(
        fmt::format("{}: cannot create directory: {}", directory, error.message()));
  }
  uint64_t written = 0;
  for (int64_t rank = 0; rank < options.world_size; ++rank) {
    std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, rank));
    std::string path = fmt::format("{}/nccl_trace_rank_{}", directory, rank);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return absl::UnavailableError(fmt::format("{}: cannot write", path));
    written += bytes.size();
  }
  return written;
}

}  // namespace fr
