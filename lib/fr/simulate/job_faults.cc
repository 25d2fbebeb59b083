// The one fault a simulated job suffers: where it bites in the culprit's program (the op it
// never issues, issues differently, skips or never starts) and the ground truth the analysis must
// recover from the dumps: the failure class, the culprit, the group, the op and its seq.
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/simulate/job_simulator_internal.h"

namespace fr::simulate_internal {

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

}  // namespace fr::simulate_internal
