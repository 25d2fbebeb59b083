#include "fr/timeline/timeline.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "fmt/format.h"
#include "fr/base/buffer.h"
#include "fr/decode/json_decoder.h"
#include "fr/load/load.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "fr/verdict/analyze.h"
#include "gtest/gtest.h"
#include "perfetto/trace.pb.h"

namespace fr {
namespace {

namespace fs = std::filesystem;

// A simulated 16-rank job whose rank `stuck` never issued a DP collective, loaded from disk and
// analysed; the expectations below come from what the simulation set up.
struct Job {
  GroundTruth truth;
  LoadedTrace trace;
  report::Report report;
  int64_t entries_with_time = 0;
};

Job StuckJob(int64_t stuck) {
  JobSimulatorOptions options;
  options.tensor_parallel = 2;
  options.pipeline_parallel = 2;
  options.data_parallel = 4;
  options.steps = 8;
  options.fault.kind = FaultKind::kStuckBeforeOp;
  options.fault.rank = stuck;
  options.fault.step = 6;
  absl::StatusOr<SimulatedJob> simulated = SimulateJob(options);
  EXPECT_TRUE(simulated.ok()) << simulated.status();
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("fr_timeline_{}", ::getpid());
  fs::remove_all(dir);
  EXPECT_TRUE(WriteSimulatedJob(*simulated, dir.string(), {}).ok());
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  EXPECT_TRUE(trace.ok()) << trace.status();
  Job job;
  job.truth = simulated->ground_truth();
  job.trace = *std::move(trace);
  LogSet no_logs;
  AnalyzeOptions analyze;
  analyze.source = dir.string();
  job.report = Analyze(job.trace, &no_logs, analyze);
  for (const RankDump& dump : job.trace.ranks) {
    for (const Entry& entry : dump.entries) job.entries_with_time += entry.time_created_ns > 0;
  }
  fs::remove_all(dir);
  return job;
}

TEST(TimelineTest, PerfettoTraceHasATrackPerRankASlicePerOpAndFlowsToTheCulprit) {
  Job job = StuckJob(5);
  ASSERT_EQ(job.truth.culprit_ranks, std::vector<int64_t>{5});
  Timeline timeline = BuildTimeline(job.trace, LogSet(), job.report);
  std::string bytes = WritePerfettoTrace(timeline);

  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(bytes));
  std::map<uint64_t, std::string> thread_names;
  int processes = 0, begins = 0, ends = 0;
  std::map<uint64_t, uint64_t> flow_source, flow_target;  // flow id -> track uuid
  for (const perfetto::protos::TracePacket& packet : trace.packet()) {
    EXPECT_EQ(packet.trusted_packet_sequence_id(), 1u);
    if (packet.has_track_descriptor()) {
      const auto& track = packet.track_descriptor();
      if (track.has_process()) ++processes;
      if (track.has_thread()) thread_names[track.uuid()] = track.thread().thread_name();
      continue;
    }
    ASSERT_TRUE(packet.has_track_event());
    const auto& event = packet.track_event();
    EXPECT_TRUE(thread_names.contains(event.track_uuid())) << "every event is on a rank's track";
    if (event.type() == perfetto::protos::TrackEvent::TYPE_SLICE_BEGIN) {
      ++begins;
      EXPECT_FALSE(event.name().empty());
      for (uint64_t id : event.flow_ids()) flow_source[id] = event.track_uuid();
      for (uint64_t id : event.terminating_flow_ids()) flow_target[id] = event.track_uuid();
    } else if (event.type() == perfetto::protos::TrackEvent::TYPE_SLICE_END) {
      ++ends;
    }
  }
  // One thread track per rank with a dump, all 16 ranks wrote one.
  EXPECT_EQ(thread_names.size(), job.trace.ranks.size());
  EXPECT_GE(processes, 1);
  // Every recorded op is a slice, opened and closed.
  EXPECT_EQ(begins, job.entries_with_time);
  EXPECT_EQ(ends, job.entries_with_time);
  // One flow per victim, from its track; each arrives at the rank it waits for, which is the
  // stuck rank or another victim that itself waits: following them always reaches rank 5.
  EXPECT_EQ(flow_source.size(), static_cast<size_t>(job.report.verdict().victim_ranks_size()));
  std::map<uint64_t, uint64_t> next;  // track -> the track its flow leads to
  for (const auto& [id, source] : flow_source) {
    ASSERT_TRUE(flow_target.contains(id)) << "flow " << id << " never arrives";
    EXPECT_TRUE(next.emplace(source, flow_target[id]).second) << "one flow per victim";
  }
  for (const auto& [source, unused] : next) {
    uint64_t track = source;
    for (int hops = 0; hops < 64 && next.contains(track); ++hops) track = next[track];
    EXPECT_EQ(thread_names[track], "rank 5 (culprit)") << thread_names[source];
  }
}

TEST(TimelineTest, ChromeJsonHoldsTheSameSlicesAndFlows) {
  Job job = StuckJob(9);
  Timeline timeline = BuildTimeline(job.trace, LogSet(), job.report);
  std::string json = WriteChromeTraceJson(timeline);
  absl::StatusOr<Document> document = DecodeJson(Buffer::FromString(json));
  ASSERT_TRUE(document.ok()) << document.status();
  // Count event phases straight from the text: the decoder above proved it is JSON.
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("\"ph\":\"X\""), job.entries_with_time);
  EXPECT_EQ(count("\"ph\":\"s\""), job.report.verdict().victim_ranks_size());
  EXPECT_EQ(count("\"ph\":\"f\""), job.report.verdict().victim_ranks_size());
  EXPECT_NE(json.find("rank 9 (culprit)"), std::string::npos);
}

TEST(TimelineTest, LogEventsAreInstantsOnTheirRanksAtTheCorrectedTime) {
  Job job = StuckJob(5);
  LogSet logs;
  logs.files.emplace_back();
  logs.files.back().path = "node00/dmesg";
  LogEvent xid;
  xid.file = 0;
  xid.kind = LogEventKind::kXid;
  xid.rank = 5;
  xid.host = "node00";
  xid.time_ns = 1'700'000'000'000'000'000;
  xid.text = "NVRM: Xid (PCI:0000:3b:00): 79";
  logs.events.push_back(xid);
  Timeline timeline = BuildTimeline(job.trace, logs, job.report);
  ASSERT_EQ(timeline.instants.size(), 1u);
  const Timeline::Instant& instant = timeline.instants[0];
  ASSERT_GE(instant.track, 0);
  EXPECT_EQ(timeline.ranks[static_cast<size_t>(instant.track)].rank, 5);
  EXPECT_EQ(instant.ns, xid.time_ns);
  EXPECT_EQ(timeline.String(instant.name), "xid");
}

}  // namespace
}  // namespace fr
