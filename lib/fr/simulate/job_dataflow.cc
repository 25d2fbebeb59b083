// How the simulated job runs: a fixed-point dataflow over simulated times. Each rank's CPU
// enqueues its program in order (never more than one step ahead of completed work); an op starts
// after the previous op of its stream and the op its input depends on; a collective completes when
// every member started it, a send/recv pair when both sides did. Records the entries as it goes.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/simulate/job_simulator_internal.h"

namespace fr::simulate_internal {
namespace {

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

}  // namespace

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

}  // namespace fr::simulate_internal
