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

// Reads a trace's interned strings the way Perfetto's importer does: per packet sequence, the
// tables are cleared by SEQ_INCREMENTAL_STATE_CLEARED and grow with each packet's
// interned_data; a packet may use what it or an earlier packet of the sequence defined, and only
// with SEQ_NEEDS_INCREMENTAL_STATE set. Fails the test on any iid used before it is defined or
// defined twice with different text.
class InternedStrings {
 public:
  void Read(const perfetto::protos::TracePacket& packet) {
    constexpr uint32_t kCleared = 1;
    if (packet.sequence_flags() & kCleared) {
      names_.clear();
      categories_.clear();
      annotation_names_.clear();
      values_.clear();
    }
    const perfetto::protos::InternedData& data = packet.interned_data();
    for (const auto& entry : data.event_names()) Define(names_, entry.iid(), entry.name());
    for (const auto& entry : data.event_categories()) {
      Define(categories_, entry.iid(), entry.name());
    }
    for (const auto& entry : data.debug_annotation_names()) {
      Define(annotation_names_, entry.iid(), entry.name());
    }
    for (const auto& entry : data.debug_annotation_string_values()) {
      Define(values_, entry.iid(), entry.str());
    }
  }
  std::string Name(const perfetto::protos::TracePacket& packet) const {
    return Lookup(packet, names_, packet.track_event().name_iid(), "event name");
  }
  // The event's annotations, name to value (integers printed).
  std::map<std::string, std::string> Annotations(const perfetto::protos::TracePacket& packet) {
    std::map<std::string, std::string> out;
    for (const auto& annotation : packet.track_event().debug_annotations()) {
      std::string name = Lookup(packet, annotation_names_, annotation.name_iid(), "annotation");
      out[name] = annotation.has_int_value()
                      ? std::to_string(annotation.int_value())
                      : Lookup(packet, values_, annotation.string_value_iid(), "value");
    }
    return out;
  }
  std::string Category(const perfetto::protos::TracePacket& packet) const {
    EXPECT_EQ(packet.track_event().category_iids_size(), 1);
    return packet.track_event().category_iids_size() == 0
               ? ""
               : Lookup(packet, categories_, packet.track_event().category_iids(0), "category");
  }

 private:
  static void Define(std::map<uint64_t, std::string>& table, uint64_t iid,
                     const std::string& text) {
    EXPECT_NE(iid, 0u) << "iid 0 means none";
    auto [it, inserted] = table.emplace(iid, text);
    EXPECT_TRUE(inserted || it->second == text) << "iid " << iid << " redefined as " << text;
  }
  static std::string Lookup(const perfetto::protos::TracePacket& packet,
                            const std::map<uint64_t, std::string>& table, uint64_t iid,
                            const char* what) {
    constexpr uint32_t kNeedsState = 2;
    EXPECT_TRUE(packet.sequence_flags() & kNeedsState) << what << " iid without the flag";
    auto it = table.find(iid);
    EXPECT_TRUE(it != table.end()) << what << " iid " << iid << " used before it is defined";
    return it == table.end() ? "" : it->second;
  }
  std::map<uint64_t, std::string> names_, categories_, annotation_names_, values_;
};

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
  InternedStrings interned;
  std::set<std::string> ops_seen;
  for (const perfetto::protos::TracePacket& packet : trace.packet()) {
    EXPECT_EQ(packet.trusted_packet_sequence_id(), 1u);
    interned.Read(packet);
    if (!packet.has_track_descriptor() && !packet.has_track_event()) continue;
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
      // Named "<op> #<seq>", with the op, group, state and seq as annotations.
      std::map<std::string, std::string> annotations = interned.Annotations(packet);
      EXPECT_EQ(interned.Name(packet), annotations["op"] + " #" + annotations["seq"]);
      EXPECT_EQ(interned.Category(packet), "collective");
      EXPECT_FALSE(annotations["group"].empty());
      EXPECT_TRUE(annotations["state"] == "completed" || annotations["state"] == "scheduled" ||
                  annotations["state"] == "started" || annotations["state"] == "retired")
          << annotations["state"];
      ops_seen.insert(annotations["op"]);
      for (uint64_t id : event.flow_ids()) flow_source[id] = event.track_uuid();
      for (uint64_t id : event.terminating_flow_ids()) flow_target[id] = event.track_uuid();
    } else if (event.type() == perfetto::protos::TrackEvent::TYPE_SLICE_END) {
      ++ends;
    }
  }
  // The simulated step's collectives and p2p ops appear by name.
  EXPECT_TRUE(ops_seen.contains("all_reduce") || ops_seen.contains("_reduce_scatter_base"));
  EXPECT_TRUE(ops_seen.contains("send") && ops_seen.contains("recv"));
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

  // In the Perfetto trace: one instant, in category "log", named by its kind, the line attached.
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(WritePerfettoTrace(timeline)));
  InternedStrings interned;
  int instants = 0;
  for (const perfetto::protos::TracePacket& packet : trace.packet()) {
    interned.Read(packet);
    if (packet.track_event().type() != perfetto::protos::TrackEvent::TYPE_INSTANT) continue;
    ++instants;
    EXPECT_EQ(packet.timestamp(), static_cast<uint64_t>(xid.time_ns));
    EXPECT_EQ(interned.Name(packet), "xid");
    EXPECT_EQ(interned.Category(packet), "log");
    EXPECT_EQ(interned.Annotations(packet)["line"], xid.text);
  }
  EXPECT_EQ(instants, 1);
}

TEST(TimelineTest, LongStringsAndManyNamesSurviveTheHandWrittenEncoding) {
  // Lengths of one, two and three varint bytes, and more interned names than fit one byte.
  Timeline timeline;
  timeline.Intern("");
  timeline.hosts.push_back(timeline.Intern(std::string(200, 'h')));
  timeline.ranks.push_back({.rank = 0, .host = 0, .culprit = true});
  for (int i = 0; i < 70000; ++i) {  // three chunks of the writer
    Timeline::Slice slice;
    slice.track = 0;
    slice.begin_ns = 1000 + i;
    slice.end_ns = 2000 + i;
    slice.op = timeline.Intern("op");
    slice.sizes = i < 300 ? timeline.Intern(std::string(i == 7 ? 20000 : 10, 's')) : 0;
    slice.seq = i;
    timeline.slices.push_back(slice);
  }
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(WritePerfettoTrace(timeline)));
  InternedStrings interned;
  int begins = 0;
  for (const perfetto::protos::TracePacket& packet : trace.packet()) {
    interned.Read(packet);
    if (packet.has_track_descriptor() && packet.track_descriptor().has_process()) {
      EXPECT_EQ(packet.track_descriptor().process().process_name(), std::string(200, 'h'));
    }
    if (packet.track_event().type() != perfetto::protos::TrackEvent::TYPE_SLICE_BEGIN) continue;
    EXPECT_EQ(interned.Name(packet), fmt::format("op #{}", begins));
    if (begins < 300) {
      EXPECT_EQ(interned.Annotations(packet)["sizes"].size(), begins == 7 ? 20000u : 10u);
    }
    EXPECT_EQ(packet.timestamp(), static_cast<uint64_t>(1000 + begins));
    ++begins;
  }
  EXPECT_EQ(begins, 70000);
  // Chunks are encoded on several threads; the bytes do not depend on how many.
  EXPECT_EQ(WritePerfettoTrace(timeline, 1), WritePerfettoTrace(timeline, 3));
}

}  // namespace
}  // namespace fr
