// Tests of the job simulator: properties of the simulated dumps a user of the analysis would rely
// on (matched collectives, seq semantics, ring buffers, FIFO p2p), and for every fault that the
// ground truth agrees with what the dumps show.
#include "fr/simulate/job_simulator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fmt/format.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Every surviving rank's dump of a job, with lookups by (group, collective seq).
class Dumps {
 public:
  explicit Dumps(const SimulatedJob& job) : job_(job) {
    for (int64_t r = 0; r < job.world_size(); ++r) {
      std::optional<DumpSpec> spec = job.RankDump(r);
      if (spec) specs_.emplace(r, std::move(*spec));
    }
    for (const auto& [rank, spec] : specs_) {
      // As PyTorch records them: members of a coalesced group or batch carry no events, and the
      // entry closing a p2p batch says is_p2p false (pytorch/pytorch#139280).
      std::map<std::string, const EntrySpec*> closing;  // per group, the next closing entry
      for (size_t i = spec.entries.size(); i-- > 0;) {
        const EntrySpec& e = spec.entries[i];
        const EntrySpec* end = closing[e.pg_name];
        bool member = end != nullptr && e.state == "scheduled" && !e.retired &&
                      (e.is_p2p ? e.p2p_seq_id == end->p2p_seq_id
                                : e.collective_seq_id == end->collective_seq_id);
        state_[&e] = member ? end->state : e.state;
        if (e.profiling_name == "nccl:coalesced") {
          closing[e.pg_name] = &e;
        } else if (!member) {
          closing[e.pg_name] = nullptr;
        }
        if (member && e.is_p2p) p2p_ends_.insert(end);
      }
      for (const EntrySpec& e : spec.entries) {
        if (!IsP2pSide(e)) by_seq_[{e.pg_name, e.collective_seq_id}][rank].push_back(&e);
      }
    }
  }
  // The state an entry stands for: its own, or its closing entry's for a silent member.
  const std::string& StateOf(const EntrySpec& e) const { return state_.at(&e); }
  // A send, a recv, or the entry that closes a batch of them.
  bool IsP2pSide(const EntrySpec& e) const { return e.is_p2p || p2p_ends_.contains(&e); }
  const std::map<int64_t, DumpSpec>& specs() const { return specs_; }
  const DumpSpec& spec(int64_t rank) const { return specs_.at(rank); }
  // The non-p2p entries of `rank` at (group, seq): one, or several for a coalesced group.
  std::vector<const EntrySpec*> At(const std::string& group, int64_t seq, int64_t rank) const {
    auto it = by_seq_.find({group, seq});
    if (it == by_seq_.end()) return {};
    auto r = it->second.find(rank);
    return r == it->second.end() ? std::vector<const EntrySpec*>{} : r->second;
  }
  const std::map<std::pair<std::string, int64_t>, std::map<int64_t, std::vector<const EntrySpec*>>>&
  by_seq() const {
    return by_seq_;
  }
  // The [first, last] collective seq of `group` still in `rank`'s buffer, or {0, -1}.
  std::pair<int64_t, int64_t> Window(int64_t rank, const std::string& group) const {
    int64_t lo = -1, hi = -1;
    for (const EntrySpec& e : specs_.at(rank).entries) {
      if (e.pg_name != group || IsP2pSide(e)) continue;
      if (lo < 0) lo = e.collective_seq_id;
      hi = e.collective_seq_id;
    }
    return lo < 0 ? std::pair<int64_t, int64_t>{0, -1} : std::pair<int64_t, int64_t>{lo, hi};
  }

 private:
  const SimulatedJob& job_;
  std::map<int64_t, DumpSpec> specs_;
  std::map<std::pair<std::string, int64_t>, std::map<int64_t, std::vector<const EntrySpec*>>>
      by_seq_;
  std::map<const EntrySpec*, std::string> state_;
  std::set<const EntrySpec*> p2p_ends_;
};

JobSimulatorOptions SmallJob() {
  JobSimulatorOptions o;
  o.tensor_parallel = 2;
  o.pipeline_parallel = 4;
  o.data_parallel = 2;  // 16 ranks
  o.steps = 24;
  o.buffer_size = 100000;  // nothing rolls out unless a test says so
  return o;
}

SimulatedJob Simulate(const JobSimulatorOptions& options) {
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  EXPECT_TRUE(job.ok()) << job.status();
  return *std::move(job);
}

std::vector<int64_t> Ranks(int64_t n) {
  std::vector<int64_t> r(n);
  for (int64_t i = 0; i < n; ++i) r[i] = i;
  return r;
}

TEST(JobSimulatorTest, LayoutAndGroupNamesFollowCreationOrder) {
  SimulatedJob job = Simulate(SmallJob());
  EXPECT_EQ(job.world_size(), 16);
  // rank = dp * (pp * tp) + stage * tp + tp_index
  RankCoordinates c = job.Coordinates(13);
  EXPECT_EQ(c.dp_index, 1);
  EXPECT_EQ(c.pp_stage, 2);
  EXPECT_EQ(c.tp_index, 1);
  const DumpSpec spec = *job.RankDump(13);
  ASSERT_EQ(spec.process_groups.size(), 4u);
  // "0" world; TP groups "1".."8" (dp, stage); PP "9".."12" (dp, tp); DP "13".."20" (stage, tp).
  EXPECT_EQ(spec.process_groups[0].name, "0");
  EXPECT_EQ(spec.process_groups[0].desc, "default_pg");
  EXPECT_EQ(spec.process_groups[0].ranks, Ranks(16));
  EXPECT_EQ(spec.process_groups[1].name, "7");
  EXPECT_EQ(spec.process_groups[1].desc, "TP");
  EXPECT_THAT(spec.process_groups[1].ranks, ElementsAre(12, 13));
  EXPECT_EQ(spec.process_groups[2].name, "12");
  EXPECT_EQ(spec.process_groups[2].desc, "PP");
  EXPECT_THAT(spec.process_groups[2].ranks, ElementsAre(9, 11, 13, 15));
  EXPECT_EQ(spec.process_groups[3].name, "18");
  EXPECT_EQ(spec.process_groups[3].desc, "DP");
  EXPECT_THAT(spec.process_groups[3].ranks, ElementsAre(5, 13));
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(spec.process_groups[i].pg_id, i);
  for (const EntrySpec& e : spec.entries) {
    EXPECT_EQ(spec.process_groups[e.pg_id].name, e.pg_name);
  }
  EXPECT_EQ(job.HostName(13), "node01");
}

TEST(JobSimulatorTest, HealthyJobMatchesEveryCollectiveAndNothingIsStuck) {
  SimulatedJob job = Simulate(SmallJob());
  const GroundTruth& truth = job.ground_truth();
  EXPECT_EQ(truth.failure_class, "none");
  EXPECT_THAT(truth.culprit_ranks, IsEmpty());
  Dumps dumps(job);
  ASSERT_EQ(dumps.specs().size(), 16u);
  int64_t complete_groups = 0, in_flight = 0;
  for (const auto& [key, members] : dumps.by_seq()) {
    const auto& [group, seq] = key;
    std::vector<int64_t> expected =
        dumps.spec(members.begin()->first).process_groups[members.begin()->second[0]->pg_id].ranks;
    bool all_there = members.size() == expected.size();
    const std::vector<const EntrySpec*>& first = members.begin()->second;
    bool all_completed = true;
    for (const auto& [rank, entries] : members) {
      ASSERT_EQ(entries.size(), first.size()) << group << " #" << seq;
      for (size_t i = 0; i < entries.size(); ++i) {
        EXPECT_EQ(entries[i]->profiling_name, first[i]->profiling_name) << group << " #" << seq;
        EXPECT_EQ(entries[i]->input_dtypes, first[i]->input_dtypes);
        if (entries[i]->profiling_name != "nccl:all_to_all") {
          EXPECT_EQ(entries[i]->input_sizes, first[i]->input_sizes) << group << " #" << seq;
          EXPECT_EQ(entries[i]->output_sizes, first[i]->output_sizes);
        }
        all_completed &= dumps.StateOf(*entries[i]) == "completed";
      }
    }
    if (all_there && all_completed) ++complete_groups;
    if (!all_completed) ++in_flight;
    // A collective every member has not yet reached is one in flight at the dump, not stuck.
    if (!all_there || !all_completed) {
      for (const auto& [rank, entries] : members) {
        for (const EntrySpec* e : entries) {
          if (dumps.StateOf(*e) == "completed") continue;
          int64_t age_ns = truth.dump_time_ns - e->time_created_ns;
          EXPECT_LT(age_ns, 5'000'000'000) << "rank " << rank << " " << group << " #" << seq;
        }
      }
    }
  }
  EXPECT_GT(complete_groups, 500);
  EXPECT_GT(in_flight, 0) << "an on-demand dump of a running job catches ops in flight";
  // pg_status agrees with the entries: the last completed collective is completed.
  for (const auto& [rank, spec] : dumps.specs()) {
    for (const ProcessGroupSpec& g : spec.process_groups) {
      const PgStatusSpec& status = spec.pg_status.at(g.pg_id);
      EXPECT_LE(status.last_completed_collective, status.last_started_collective);
      EXPECT_LE(status.last_started_collective, status.last_enqueued_collective);
      if (status.last_completed_collective > 0) {
        auto at = dumps.At(g.name, status.last_completed_collective, rank);
        ASSERT_FALSE(at.empty());
        EXPECT_EQ(dumps.StateOf(*at[0]), "completed");
      }
    }
  }
}

TEST(JobSimulatorTest, SeqIdsBumpPerCollectiveAndOpIdsPerOp) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 3, .step = 20};
  SimulatedJob job = Simulate(o);
  Dumps dumps(job);
  int64_t coalesced_dp = 0, batches = 0;
  for (const auto& [rank, spec] : dumps.specs()) {
    std::map<std::string, const EntrySpec*> last;
    for (size_t i = 0; i < spec.entries.size(); ++i) {
      const EntrySpec& e = spec.entries[i];
      EXPECT_EQ(e.record_id, static_cast<int64_t>(i));
      const EntrySpec* prev = last[e.pg_name];
      last[e.pg_name] = &e;
      if (prev == nullptr) {
        EXPECT_EQ(e.op_id, 1);
        continue;
      }
      bool closing = e.profiling_name == "nccl:coalesced";
      // The closing entry reuses its last member's op id.
      EXPECT_EQ(e.op_id, prev->op_id + (closing ? 0 : 1));
      bool p2p = dumps.IsP2pSide(e);
      bool prev_open = prev->profiling_name != "nccl:coalesced" &&
                       ((p2p && e.p2p_seq_id == prev->p2p_seq_id && prev->is_p2p) ||
                        (!p2p && e.collective_seq_id == prev->collective_seq_id && !prev->is_p2p));
      if (closing) {
        EXPECT_FALSE(e.is_p2p) << "PyTorch writes is_p2p false on a batch's end";
      }
      if (p2p) {
        EXPECT_EQ(e.collective_seq_id, prev->collective_seq_id);
        EXPECT_EQ(e.p2p_seq_id, prev->p2p_seq_id + (prev_open ? 0 : 1)) << e.profiling_name;
      } else {
        EXPECT_EQ(e.p2p_seq_id, prev->p2p_seq_id);
        EXPECT_EQ(e.collective_seq_id, prev->collective_seq_id + (prev_open ? 0 : 1));
      }
      if (e.profiling_name == "nccl:coalesced") {
        EXPECT_TRUE(prev_open) << "an end entry closes a group of ops sharing its seq";
        (p2p ? batches : coalesced_dp) += 1;
        EXPECT_EQ(e.pg_desc, p2p ? "PP" : "DP");
      }
    }
  }
  EXPECT_GT(coalesced_dp, 0);
  EXPECT_GT(batches, 0);
}

TEST(JobSimulatorTest, CoalescedGradientSyncAndUnevenAllToAll) {
  SimulatedJob job = Simulate(SmallJob());
  const DumpSpec spec = *job.RankDump(0);
  // One DP coalesced group: three _reduce_scatter_base then the end entry, one seq.
  std::vector<const EntrySpec*> dp;
  for (const EntrySpec& e : spec.entries) {
    if (e.pg_desc == "DP" && e.collective_seq_id == 1) dp.push_back(&e);
  }
  ASSERT_EQ(dp.size(), 4u);
  EXPECT_EQ(dp[0]->profiling_name, "nccl:_reduce_scatter_base");
  EXPECT_EQ(dp[3]->profiling_name, "nccl:coalesced");
  // all_to_all: per-rank sizes differ, totals over the TP group agree.
  Dumps dumps(job);
  int64_t uneven = 0;
  for (const auto& [key, members] : dumps.by_seq()) {
    if (members.begin()->second[0]->profiling_name != "nccl:all_to_all") continue;
    int64_t in = 0, out = 0;
    for (const auto& [rank, entries] : members) {
      in += entries[0]->input_sizes[0][0];
      out += entries[0]->output_sizes[0][0];
      uneven += entries[0]->input_sizes != entries[0]->output_sizes;
    }
    if (members.size() == 2) {
      EXPECT_EQ(in, out);
    }
  }
  EXPECT_GT(uneven, 0);
}

// The p2p ops of every channel (src -> dst), in order: sends on src, recvs on dst.
struct Channel {
  std::vector<const EntrySpec*> sends, recvs;
};
std::map<std::pair<int64_t, int64_t>, Channel> Channels(const Dumps& dumps) {
  std::map<std::pair<int64_t, int64_t>, Channel> channels;
  for (const auto& [rank, spec] : dumps.specs()) {
    for (const EntrySpec& e : spec.entries) {
      if (!e.is_p2p || e.profiling_name == "nccl:coalesced") continue;
      const std::vector<int64_t>& ranks = spec.process_groups[e.pg_id].ranks;
      int a = 0, b = 0;
      if (std::sscanf(e.profiling_name.c_str(), "nccl:send %d->%d", &a, &b) == 2) {
        channels[{rank, ranks[b]}].sends.push_back(&e);
        EXPECT_EQ(ranks[a], rank);
      } else {
        EXPECT_EQ(std::sscanf(e.profiling_name.c_str(), "nccl:recv %d<-%d", &a, &b), 2);
        channels[{ranks[b], rank}].recvs.push_back(&e);
        EXPECT_EQ(ranks[a], rank);
      }
    }
  }
  return channels;
}

TEST(JobSimulatorTest, SendsAndRecvsPairUpPerChannelInOrder) {
  for (bool batched : {false, true}) {
    JobSimulatorOptions o = SmallJob();
    o.batched_p2p = batched;
    SimulatedJob job = Simulate(o);
    Dumps dumps(job);
    auto channels = Channels(dumps);
    EXPECT_EQ(channels.size(), 2u * 3 * 4);  // 4 pipelines of 4 stages, both directions
    for (const auto& [key, ch] : channels) {
      // In flight at the dump, the sides may differ by the ops just issued.
      size_t n = std::min(ch.sends.size(), ch.recvs.size());
      EXPECT_GT(n, 20u);
      EXPECT_LE(std::max(ch.sends.size(), ch.recvs.size()) - n, 2u);
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(ch.sends[i]->input_sizes, ch.recvs[i]->input_sizes);
        // A side completes only once both sides started (a batch completes with its last op).
        if (dumps.StateOf(*ch.sends[i]) == "completed") {
          EXPECT_NE(dumps.StateOf(*ch.recvs[i]), "scheduled");
        }
        if (dumps.StateOf(*ch.recvs[i]) == "completed") {
          EXPECT_NE(dumps.StateOf(*ch.sends[i]), "scheduled");
        }
      }
    }
  }
}

TEST(JobSimulatorTest, RingBuffersKeepTheNewestEntriesAndStagesStartApart) {
  JobSimulatorOptions o = SmallJob();
  o.buffer_size = 300;
  o.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 5, .step = 20};
  SimulatedJob job = Simulate(o);
  Dumps dumps(job);
  std::set<int64_t> first_tp_seq;
  for (const auto& [rank, spec] : dumps.specs()) {
    ASSERT_GT(job.EntriesRecorded(rank), 300);
    ASSERT_EQ(spec.entries.size(), 300u);
    EXPECT_EQ(spec.entries.back().record_id, job.EntriesRecorded(rank) - 1);
    EXPECT_EQ(spec.entries.front().record_id, job.EntriesRecorded(rank) - 300);
    first_tp_seq.insert(dumps.Window(rank, spec.process_groups[1].name).first);
  }
  EXPECT_GT(first_tp_seq.size(), 1u) << "pipeline stages wrap at different points";
  // Within every member's window each (group, seq) is present on every member.
  for (const auto& [key, members] : dumps.by_seq()) {
    const auto& [group, seq] = key;
    const DumpSpec& some = dumps.spec(members.begin()->first);
    const std::vector<int64_t>& ranks =
        some.process_groups[members.begin()->second[0]->pg_id].ranks;
    for (int64_t r : ranks) {
      auto [lo, hi] = dumps.Window(r, group);
      if (seq >= lo && seq <= hi) {
        EXPECT_FALSE(dumps.At(group, seq, r).empty()) << r << " " << group << " #" << seq;
      }
    }
  }
}

TEST(JobSimulatorTest, IsDeterministic) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {.kind = FaultKind::kGpuStall, .rank = 6, .step = 15, .group = GroupKind::kTensor};
  SimulatedJob a = Simulate(o);
  SimulatedJob b = Simulate(o);
  EXPECT_EQ(a.ground_truth().dump_time_ns, b.ground_truth().dump_time_ns);
  for (int64_t r : {0, 6, 15}) {
    EXPECT_EQ(WriteDumpJson(*a.RankDump(r)), WriteDumpJson(*b.RankDump(r)));
  }
  o.seed = 2;
  SimulatedJob c = Simulate(o);
  EXPECT_NE(WriteDumpJson(*a.RankDump(6)), WriteDumpJson(*c.RankDump(6)));
}

TEST(JobSimulatorTest, RejectsImpossibleFaults) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {.kind = FaultKind::kOpMismatch, .rank = 99};
  EXPECT_FALSE(SimulateJob(o).ok());
  o.fault = {.kind = FaultKind::kOpMismatch, .rank = 1, .step = 5, .group = GroupKind::kPipeline};
  EXPECT_FALSE(SimulateJob(o).ok()) << "PP carries no collectives";
  o.fault = {.kind = FaultKind::kMissingSend, .rank = 1, .step = 5, .group = GroupKind::kData};
  EXPECT_FALSE(SimulateJob(o).ok());
  o.timing = false;
  o.fault = {.kind = FaultKind::kGpuStall, .rank = 1, .step = 5};
  EXPECT_FALSE(SimulateJob(o).ok());
  o.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 1, .step = 24};
  EXPECT_FALSE(SimulateJob(o).ok());
}

// Entries not completed at the dump of a hung job are older than the timeout.
void ExpectPendingOlderThanTimeout(const SimulatedJob& job, const Dumps& dumps) {
  const int64_t timeout_ns = job.options().timeout_ms * 1'000'000;
  int64_t pending = 0;
  for (const auto& [rank, spec] : dumps.specs()) {
    for (const EntrySpec& e : spec.entries) {
      if (dumps.StateOf(e) == "completed") continue;
      ++pending;
      EXPECT_GT(job.ground_truth().dump_time_ns - e.time_created_ns, timeout_ns);
    }
  }
  EXPECT_GT(pending, 0);
}

// The states of every member's entries at the ground truth's (group, seq), first entry each.
std::map<int64_t, std::string> StatesAtFault(const SimulatedJob& job, const Dumps& dumps) {
  const GroundTruth& t = job.ground_truth();
  std::map<int64_t, std::string> states;
  for (int64_t r : t.process_group.ranks) {
    auto at = dumps.At(t.process_group.name, t.collective_seq_id, r);
    states[r] = at.empty() ? "absent" : dumps.StateOf(*at[0]);
  }
  return states;
}

class StuckTest : public ::testing::TestWithParam<bool> {};

TEST_P(StuckTest, CulpritNeverIssuesWhatItsPeersWaitIn) {
  JobSimulatorOptions o = SmallJob();
  o.timing = GetParam();
  o.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 5, .step = 18};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, "missing_participant");
  EXPECT_THAT(t.culprit_ranks, ElementsAre(5));
  EXPECT_EQ(t.process_group.desc, "DP");
  EXPECT_THAT(t.process_group.ranks, ElementsAre(5, 13));
  EXPECT_EQ(t.op, "_reduce_scatter_base");
  Dumps dumps(job);
  auto states = StatesAtFault(job, dumps);
  EXPECT_EQ(states[5], "absent");
  EXPECT_EQ(states[13], o.timing ? "started" : "scheduled");
  EXPECT_EQ(dumps.spec(5).pg_status.at(3).last_enqueued_collective, t.collective_seq_id - 1);
  // The peer ran ahead and enqueued more, but completed nothing from the stuck seq on.
  EXPECT_GE(dumps.spec(13).pg_status.at(3).last_enqueued_collective, t.collective_seq_id);
  EXPECT_EQ(dumps.spec(13).pg_status.at(3).last_completed_collective, t.collective_seq_id - 1);
  ExpectPendingOlderThanTimeout(job, dumps);
  // The hang spreads: every rank ends up with something pending.
  for (const auto& [rank, spec] : dumps.specs()) {
    bool pending = false;
    for (const EntrySpec& e : spec.entries) pending |= dumps.StateOf(e) != "completed";
    EXPECT_TRUE(pending || rank == 5) << "rank " << rank;
  }
}
INSTANTIATE_TEST_SUITE_P(Timing, StuckTest, ::testing::Bool());

TEST(JobSimulatorTest, CrashedRankLeavesNoDump) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {.kind = FaultKind::kCrashedRank,
             .rank = 10,
             .step = 12,
             .group = GroupKind::kTensor,
             .occurrence = 3};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, "missing_participant");
  EXPECT_THAT(t.culprit_ranks, ElementsAre(10));
  EXPECT_THAT(t.missing_ranks, ElementsAre(10));
  EXPECT_FALSE(job.HasDump(10));
  EXPECT_FALSE(job.RankDump(10).has_value());
  Dumps dumps(job);
  EXPECT_EQ(dumps.specs().size(), 15u);
  EXPECT_THAT(t.process_group.ranks, ElementsAre(10, 11));
  EXPECT_EQ(StatesAtFault(job, dumps)[11], "started");
}

struct MismatchCase {
  FaultKind kind;
  std::string failure_class;
};
class MismatchTest : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(MismatchTest, CulpritDiffersInExactlyTheInjectedAttribute) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {
      .kind = GetParam().kind, .rank = 9, .step = 16, .group = GroupKind::kTensor, .occurrence = 2};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, GetParam().failure_class);
  EXPECT_THAT(t.culprit_ranks, ElementsAre(9));
  EXPECT_THAT(t.process_group.ranks, ElementsAre(8, 9));
  Dumps dumps(job);
  const EntrySpec& good = *dumps.At(t.process_group.name, t.collective_seq_id, 8).at(0);
  const EntrySpec& bad = *dumps.At(t.process_group.name, t.collective_seq_id, 9).at(0);
  EXPECT_EQ(good.profiling_name == bad.profiling_name, o.fault.kind != FaultKind::kOpMismatch);
  EXPECT_EQ(good.input_sizes == bad.input_sizes, o.fault.kind != FaultKind::kSizeMismatch);
  EXPECT_EQ(good.output_sizes == bad.output_sizes, o.fault.kind != FaultKind::kSizeMismatch);
  EXPECT_EQ(good.input_dtypes == bad.input_dtypes, o.fault.kind != FaultKind::kDtypeMismatch);
  EXPECT_EQ(good.output_dtypes == bad.output_dtypes, o.fault.kind != FaultKind::kDtypeMismatch);
  EXPECT_EQ("nccl:" + t.op, good.profiling_name);
  EXPECT_EQ(dumps.StateOf(good), "started");
  EXPECT_EQ(dumps.StateOf(bad), "started");
  ExpectPendingOlderThanTimeout(job, dumps);
}
INSTANTIATE_TEST_SUITE_P(
    Kinds, MismatchTest,
    ::testing::Values(MismatchCase{FaultKind::kOpMismatch, "op_mismatch"},
                      MismatchCase{FaultKind::kSizeMismatch, "size_mismatch"},
                      MismatchCase{FaultKind::kDtypeMismatch, "dtype_mismatch"}),
    [](const auto& info) { return std::string(FaultKindName(info.param.kind)); });

class MissingP2pTest : public ::testing::TestWithParam<std::tuple<FaultKind, bool>> {};

TEST_P(MissingP2pTest, PeerIsLeftWithoutPartner) {
  auto [kind, batched] = GetParam();
  JobSimulatorOptions o = SmallJob();
  o.batched_p2p = batched;
  // Rank 5 is stage 2 of pipeline (dp 0, tp 1): it both sends and receives.
  o.fault = {.kind = kind, .rank = 5, .step = 14, .group = GroupKind::kPipeline, .occurrence = 1};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, "p2p_unmatched");
  EXPECT_THAT(t.culprit_ranks, ElementsAre(5));
  EXPECT_EQ(t.process_group.desc, "PP");
  EXPECT_EQ(t.op, kind == FaultKind::kMissingSend ? "send" : "recv");
  ASSERT_TRUE(t.peer_rank == 3 || t.peer_rank == 7) << t.peer_rank;
  Dumps dumps(job);
  auto channels = Channels(dumps);
  bool send = kind == FaultKind::kMissingSend;
  const Channel& ch = channels[send ? std::pair<int64_t, int64_t>{5, t.peer_rank}
                                    : std::pair<int64_t, int64_t>{t.peer_rank, 5}];
  // The culprit's side is one op short.
  const auto& short_side = send ? ch.sends : ch.recvs;
  const auto& long_side = send ? ch.recvs : ch.sends;
  EXPECT_EQ(long_side.size(), short_side.size() + 1);
  const EntrySpec* unmatched = long_side[short_side.size()];
  EXPECT_EQ(unmatched->p2p_seq_id, t.p2p_seq_id);
  EXPECT_NE(unmatched->state, "completed");
  ExpectPendingOlderThanTimeout(job, dumps);
}
INSTANTIATE_TEST_SUITE_P(Kinds, MissingP2pTest,
                         ::testing::Combine(::testing::Values(FaultKind::kMissingSend,
                                                              FaultKind::kMissingRecv),
                                            ::testing::Bool()));

TEST(JobSimulatorTest, GpuStallLeavesCulpritScheduledWhilePeersStarted) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {.kind = FaultKind::kGpuStall, .rank = 6, .step = 15, .group = GroupKind::kData};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, "gpu_stall");
  EXPECT_THAT(t.culprit_ranks, ElementsAre(6));
  Dumps dumps(job);
  auto states = StatesAtFault(job, dumps);
  EXPECT_EQ(states[6], "scheduled");
  EXPECT_EQ(states[14], "started");
  // Nothing the culprit enqueued afterwards ever started either.
  for (const EntrySpec& e : dumps.spec(6).entries) {
    if (e.pg_desc == "DP" && e.collective_seq_id >= t.collective_seq_id) {
      EXPECT_EQ(dumps.StateOf(e), "scheduled");
    }
  }
}

TEST(JobSimulatorTest, TransportStallHasEveryoneStartedAndNoCulprit) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {.kind = FaultKind::kTransportStall, .rank = 2, .step = 19, .group = GroupKind::kWorld};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, "stuck_collective");
  EXPECT_THAT(t.culprit_ranks, IsEmpty());
  EXPECT_EQ(t.op, "all_reduce_barrier");
  EXPECT_EQ(t.process_group.name, "0");
  Dumps dumps(job);
  for (const auto& [rank, state] : StatesAtFault(job, dumps)) EXPECT_EQ(state, "started") << rank;
  ExpectPendingOlderThanTimeout(job, dumps);
}

TEST(JobSimulatorTest, StragglerIsLateEveryStepButNothingHangs) {
  JobSimulatorOptions o = SmallJob();
  o.fault = {.kind = FaultKind::kStraggler, .rank = 1, .straggler_delay_ms = 40};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, "none");
  EXPECT_EQ(t.straggler_rank, 1);
  Dumps dumps(job);
  // Its TP peer waits for it in the first collective of every step: long durations there.
  double peer_wait = 0, straggler_wait = 0;
  int64_t steps = 0;
  bool step_begins = false;  // the first TP op after the DP sync opens the next step
  for (const EntrySpec& e : dumps.spec(0).entries) {
    if (e.pg_desc == "DP") step_begins = true;
    if (e.pg_desc != "TP" || !step_begins) continue;
    step_begins = false;
    if (!e.duration_ms) continue;
    const EntrySpec* s = dumps.At(e.pg_name, e.collective_seq_id, 1).at(0);
    if (!s->duration_ms) continue;
    peer_wait += *e.duration_ms;
    straggler_wait += *s->duration_ms;
    ++steps;
  }
  ASSERT_GT(steps, 5);
  EXPECT_GT((peer_wait - straggler_wait) / steps, 20.0);
  for (const auto& [rank, spec] : dumps.specs()) {
    for (const EntrySpec& e : spec.entries) {
      if (dumps.StateOf(e) != "completed") {
        EXPECT_LT(t.dump_time_ns - e.time_created_ns, 5'000'000'000);
      }
    }
  }
}

class ShapeTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

// Degenerate and odd grids (no TP, no PP, no DP, an odd pipeline) still run and hang where told.
TEST_P(ShapeTest, EveryoneWaitsInTheBarrierTheCulpritNeverReaches) {
  auto [tp, pp, dp] = GetParam();
  JobSimulatorOptions o;
  o.tensor_parallel = tp;
  o.pipeline_parallel = pp;
  o.data_parallel = dp;
  o.steps = 24;
  o.fault = {.kind = FaultKind::kStuckBeforeOp, .rank = 5, .step = 19, .group = GroupKind::kWorld};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.op, "all_reduce_barrier");
  EXPECT_EQ(t.process_group.ranks, Ranks(tp * pp * dp));
  Dumps dumps(job);
  for (const auto& [rank, state] : StatesAtFault(job, dumps)) {
    EXPECT_EQ(state, rank == 5 ? "absent" : "started") << rank;
  }
  ExpectPendingOlderThanTimeout(job, dumps);
}
INSTANTIATE_TEST_SUITE_P(Grids, ShapeTest,
                         ::testing::Values(std::make_tuple(1, 1, 8), std::make_tuple(1, 8, 1),
                                           std::make_tuple(8, 1, 1), std::make_tuple(2, 3, 2)));

TEST(JobSimulatorTest, FiveHundredTwelveRanksCulpritDeepInThePipeline) {
  JobSimulatorOptions o;
  o.tensor_parallel = 4;
  o.pipeline_parallel = 4;
  o.data_parallel = 32;
  // dp 21, stage 2, tp 3: a middle pipeline stage.
  const int64_t culprit = 21 * 16 + 2 * 4 + 3;
  o.fault = {.kind = FaultKind::kStuckBeforeOp,
             .rank = culprit,
             .step = 36,
             .group = GroupKind::kTensor,
             .occurrence = 5};
  SimulatedJob job = Simulate(o);
  const GroundTruth& t = job.ground_truth();
  EXPECT_EQ(t.failure_class, "missing_participant");
  EXPECT_THAT(t.culprit_ranks, ElementsAre(culprit));
  EXPECT_EQ(t.process_group.desc, "TP");
  EXPECT_EQ(t.process_group.ranks.size(), 4u);
  Dumps dumps(job);
  EXPECT_EQ(dumps.specs().size(), 512u);
  for (int64_t r : t.process_group.ranks) {
    auto at = dumps.At(t.process_group.name, t.collective_seq_id, r);
    if (r == culprit) {
      EXPECT_TRUE(at.empty());
    } else {
      ASSERT_EQ(at.size(), 1u);
      EXPECT_EQ(dumps.StateOf(*at[0]), "started");
    }
  }
  int64_t wrapped = 0;
  for (const auto& [rank, spec] : dumps.specs()) {
    wrapped += job.EntriesRecorded(rank) > o.buffer_size;
    EXPECT_LE(spec.entries.size(), 2000u);
  }
  EXPECT_EQ(wrapped, 512) << "the fault is deep in the job: every buffer wrapped";
  ExpectPendingOlderThanTimeout(job, dumps);
}

}  // namespace
}  // namespace fr
