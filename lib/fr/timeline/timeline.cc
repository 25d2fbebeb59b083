#include "fr/timeline/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/model/rank_dump.h"
#include "perfetto/trace.pb.h"

namespace fr {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
// A slice needs a width to be seen and clicked; ops with no recorded end get this much.
constexpr int64_t kMinimumSliceNs = 1000;

std::string GroupLabel(const RankDump& dump, const ProcessGroup& group) {
  std::string name(dump.strings.view(group.name));
  std::string desc(dump.strings.view(group.desc));
  return desc.empty() ? name : fmt::format("{} ({})", name, desc);
}

}  // namespace

uint32_t Timeline::Intern(const std::string& text) {
  if (strings.empty()) {
    strings.emplace_back();
    index_.emplace("", 0);
  }
  auto [it, inserted] = index_.try_emplace(text, static_cast<uint32_t>(strings.size()));
  if (inserted) strings.push_back(text);
  return it->second;
}

Timeline BuildTimeline(const LoadedTrace& trace, const LogSet& logs, const report::Report& report,
                       const MonitorSnapshots* monitors) {
  Timeline timeline;
  std::vector<MonitorFinding> monitor_findings;
  if (monitors != nullptr) monitor_findings = FindMonitorAnomalies(*monitors);
  timeline.Intern("");
  // Hosts: the logs' names for a rank's host first (real host names), else the dumps' paths.
  std::map<int64_t, std::string> host_of_rank;
  for (const LogEvent& event : logs.events) {
    if (event.rank >= 0 && !event.host.empty()) host_of_rank.emplace(event.rank, event.host);
  }
  std::set<int64_t> culprits(report.verdict().culprit_ranks().begin(),
                             report.verdict().culprit_ranks().end());
  for (const report::RankReport& rank : report.ranks()) {
    if (!rank.host().empty()) host_of_rank.emplace(rank.rank(), rank.host());
  }
  std::map<std::string, int64_t> offset_ns;
  for (const report::HostClock& host : report.timeline().hosts()) {
    offset_ns[host.host()] = host.offset_ms() * kNanosPerMs;
  }
  std::set<std::string> host_names;
  auto host_name = [&](int64_t rank) {
    auto it = host_of_rank.find(rank);
    return it == host_of_rank.end() ? std::string("unknown host") : it->second;
  };
  for (const RankDump& dump : trace.ranks) host_names.insert(host_name(dump.rank));
  for (const LogEvent& event : logs.events) {
    if (event.time_ns == kNoTime) continue;
    host_names.insert(event.rank >= 0 ? host_name(event.rank)
                                      : (event.host.empty() ? "unknown host" : event.host));
  }
  for (const MonitorFinding& finding : monitor_findings) {
    for (const MonitorMark& mark : finding.marks) {
      host_names.insert(mark.host.empty() ? "unknown host" : mark.host);
    }
  }
  std::map<std::string, uint32_t> host_index;
  for (const std::string& name : host_names) {
    host_index[name] = static_cast<uint32_t>(timeline.hosts.size());
    timeline.hosts.push_back(timeline.Intern(name));
  }

  // Slices, one track per rank with a dump.
  uint32_t retired_state = timeline.Intern("retired");
  auto state_id = [&](EntryState state) {
    return timeline.Intern(std::string(EntryStateName(state)));
  };
  int64_t dump_time = report.inputs().dump_time_ns();
  std::map<int32_t, uint32_t> track_of_rank;
  // Per track, its slices [first, end) in `timeline.slices`, and per slice its group's name
  // (interned): the flows below look up a waiter's op by (group, seq) among its own slices only.
  // Both are linear in the slices; a map keyed by strings cost more than the dumps at 4096 ranks.
  std::vector<std::pair<uint32_t, uint32_t>> slices_of_track;
  std::vector<uint32_t> slice_group_name;
  for (const RankDump& dump : trace.ranks) {
    int64_t rank = dump.rank;
    std::string host = host_name(rank);
    uint32_t track = static_cast<uint32_t>(timeline.ranks.size());
    track_of_rank[rank] = track;
    timeline.ranks.push_back(
        {.rank = rank, .host = host_index[host], .culprit = culprits.contains(rank)});
    int64_t offset = offset_ns.contains(host) ? offset_ns[host] : 0;
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < dump.entries.size(); ++i) {
      if (dump.entries[i].time_created_ns > 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return dump.entries[a].time_created_ns < dump.entries[b].time_created_ns;
    });
    uint32_t first_slice = static_cast<uint32_t>(timeline.slices.size());
    // What repeats across a dump's entries is interned once per distinct value: its groups, ops
    // and size signatures (formatting them per entry was most of the cost at 2M entries).
    std::vector<std::pair<uint32_t, uint32_t>> group_ids;  // per local group: (label, name)
    for (const ProcessGroup& group : dump.groups) {
      group_ids.push_back({timeline.Intern(GroupLabel(dump, group)),
                           timeline.Intern(std::string(dump.strings.view(group.name)))});
    }
    absl::flat_hash_map<uint64_t, uint32_t> sizes_of;  // (input, output) shape lists -> id
    absl::flat_hash_map<uint32_t, uint32_t> op_of;     // op name string -> id
    for (size_t k = 0; k < order.size(); ++k) {
      const Entry& entry = dump.entries[order[k]];
      int64_t begin = entry.time_created_ns;
      int64_t end = begin + kMinimumSliceNs;
      bool pending = !entry.retired && entry.state != EntryState::kCompleted;
      if (!std::isnan(entry.duration_ms) && entry.duration_ms >= 0) {
        end = begin + static_cast<int64_t>(entry.duration_ms * kNanosPerMs);
      } else if (entry.time_discovered_completed_ns > begin) {
        end = entry.time_discovered_completed_ns;
      } else if (pending) {
        if (dump_time > begin) end = dump_time;
      } else if (k + 1 < order.size()) {
        // Completed with no recorded end: it ended by the time the rank enqueued its next op.
        end = std::max(end, dump.entries[order[k + 1]].time_created_ns);
      }
      end = std::max(end, begin + kMinimumSliceNs);
      auto [group_label, group_name] =
          entry.group < group_ids.size() ? group_ids[entry.group] : std::pair<uint32_t, uint32_t>{};
      int64_t seq = entry.is_p2p ? entry.p2p_seq_id : entry.collective_seq_id;
      std::string_view op = dump.strings.view(entry.op_name);
      auto [op_id, new_op] = op_of.try_emplace(entry.op_name, 0);
      if (new_op) op_id->second = timeline.Intern(std::string(op));
      uint64_t sizes_key = uint64_t{entry.input_sizes} << 32 | entry.output_sizes;
      auto [sizes_id, new_sizes] = sizes_of.try_emplace(sizes_key, 0);
      if (new_sizes) {
        sizes_id->second = timeline.Intern(fmt::format(
            "in {} out {}", dump.Shapes(entry.input_sizes), dump.Shapes(entry.output_sizes)));
      }
      Timeline::Slice slice;
      slice.track = track;
      slice.begin_ns = begin - offset;
      slice.end_ns = end - offset;
      slice.name = seq >= 0 ? timeline.Intern(fmt::format("{} #{}", op, seq)) : op_id->second;
      slice.group = group_label;
      slice.op = op_id->second;
      slice.state = entry.retired && entry.state != EntryState::kCompleted ? retired_state
                                                                           : state_id(entry.state);
      slice.sizes = sizes_id->second;
      slice.seq = seq;
      slice_group_name.push_back(group_name);
      timeline.slices.push_back(slice);
    }
    slices_of_track.push_back({first_slice, static_cast<uint32_t>(timeline.slices.size())});
  }

  // The last slice of a track (they are in begin order): where its rank stopped; -1 when none.
  auto last_slice = [&](uint32_t track) -> int64_t {
    const auto& [first, end] = slices_of_track[track];
    return first == end ? -1 : static_cast<int64_t>(end) - 1;
  };
  std::map<uint32_t, int64_t> last_of_track;
  for (const auto& [rank, track] : track_of_rank) last_of_track[track] = last_slice(track);
  // The slice of `track` for collective `seq` of the group named `group`; -1 when none.
  auto slice_at = [&](uint32_t track, const std::string& group, int64_t seq) -> int64_t {
    const auto& [first, end] = slices_of_track[track];
    for (uint32_t i = end; i > first; --i) {
      if (timeline.slices[i - 1].seq == seq && timeline.String(slice_group_name[i - 1]) == group) {
        return i - 1;
      }
    }
    return -1;
  };

  // Flows: the verdict's wait chains, then every other victim to the first culprit with a dump.
  std::set<int64_t> linked;
  uint64_t next_flow = 1;
  for (const report::WaitChain& chain : report.verdict().chains()) {
    for (const report::WaitEdge& edge : chain.edges()) {
      auto from_track = track_of_rank.find(edge.waiter());
      auto to_track = track_of_rank.find(edge.waits_for());
      if (from_track == track_of_rank.end() || to_track == track_of_rank.end()) continue;
      int64_t from_slice = slice_at(from_track->second, edge.process_group().name(), edge.seq_id());
      if (from_slice < 0) from_slice = last_of_track[from_track->second];
      int64_t to_slice = last_of_track[to_track->second];
      if (from_slice < 0 || to_slice < 0 || linked.contains(edge.waiter())) continue;
      timeline.flows.push_back({.id = next_flow++,
                                .from_slice = static_cast<uint32_t>(from_slice),
                                .to_slice = static_cast<uint32_t>(to_slice)});
      linked.insert(edge.waiter());
    }
  }
  int64_t culprit_slice = -1;
  for (int64_t culprit : culprits) {
    if (auto it = track_of_rank.find(culprit); it != track_of_rank.end()) {
      culprit_slice = last_of_track[it->second];
      if (culprit_slice >= 0) break;
    }
  }
  if (culprit_slice >= 0) {
    for (int64_t victim : report.verdict().victim_ranks()) {
      auto it = track_of_rank.find(victim);
      if (it == track_of_rank.end() || linked.contains(victim)) continue;
      int64_t from_slice = last_of_track[it->second];
      if (from_slice < 0) continue;
      timeline.flows.push_back({.id = next_flow++,
                                .from_slice = static_cast<uint32_t>(from_slice),
                                .to_slice = static_cast<uint32_t>(culprit_slice)});
    }
  }

  // Instants: every timed log event, on its rank's track when the rank has one.
  for (const LogEvent& event : logs.events) {
    if (event.time_ns == kNoTime) continue;
    Timeline::Instant instant;
    auto track = event.rank >= 0 ? track_of_rank.find(event.rank) : track_of_rank.end();
    instant.track = track == track_of_rank.end() ? -1 : static_cast<int32_t>(track->second);
    std::string host = event.rank >= 0 ? host_name(event.rank)
                                       : (event.host.empty() ? "unknown host" : event.host);
    instant.host = host_index[host];
    instant.ns = event.time_ns;
    instant.name = timeline.Intern(LogEventKindName(event.kind));
    instant.text = timeline.Intern(event.text);
    timeline.instants.push_back(instant);
  }
  // Instants: the moments the monitor findings point at, on the host's clock corrected like its
  // ranks' records; on the GPU's rank when its bus id names one, else on the host.
  for (const MonitorFinding& finding : monitor_findings) {
    for (const MonitorMark& mark : finding.marks) {
      std::string host = mark.host.empty() ? "unknown host" : mark.host;
      Timeline::Instant instant;
      auto track = mark.rank >= 0 ? track_of_rank.find(mark.rank) : track_of_rank.end();
      instant.track = track == track_of_rank.end() ? -1 : static_cast<int32_t>(track->second);
      instant.host = host_index[host];
      instant.ns = mark.host_ns - (offset_ns.contains(host) ? offset_ns[host] : 0);
      instant.name = timeline.Intern(finding.kind);
      instant.text = timeline.Intern(mark.label);
      timeline.instants.push_back(instant);
    }
  }
  return timeline;
}

namespace {

// Track uuids: hosts 1..H, ranks above them (uuid 0 is Perfetto's implicit global track).
uint64_t HostUuid(uint32_t host) { return uint64_t{host} + 1; }
uint64_t RankUuid(const Timeline& timeline, uint32_t track) {
  return uint64_t{timeline.hosts.size()} + 1 + track;
}

void Annotate(perfetto::protos::TrackEvent* event, const char* name, const std::string& value) {
  if (value.empty()) return;
  perfetto::protos::DebugAnnotation* annotation = event->add_debug_annotations();
  annotation->set_name(name);
  annotation->set_string_value(value);
}

}  // namespace

namespace {

// Emits a Trace message's `packet` field (number 1) one packet at a time: each is a tag, a
// length and the serialized packet, exactly what Trace::SerializeAsString writes for it.
class PacketStream {
 public:
  explicit PacketStream(const TraceSink& sink) : sink_(sink) {}

  // The next packet, empty but for its sequence and time; the previous one is written out.
  perfetto::protos::TracePacket* Next(uint64_t timestamp) {
    EndPacket();
    constexpr uint32_t kSequence = 1;
    constexpr uint32_t kIncrementalStateCleared = 1;
    packet_.Clear();
    packet_.set_trusted_packet_sequence_id(kSequence);
    if (first_) packet_.set_sequence_flags(kIncrementalStateCleared);
    first_ = false;
    if (timestamp > 0) packet_.set_timestamp(timestamp);
    pending_ = true;
    return &packet_;
  }

  // Writes out what is left.
  void Finish() {
    EndPacket();
    if (!buffer_.empty()) sink_(buffer_);
    buffer_.clear();
  }

 private:
  void EndPacket() {
    if (!pending_) return;
    pending_ = false;
    bytes_.clear();
    packet_.SerializeToString(&bytes_);
    buffer_.push_back(static_cast<char>((1 << 3) | 2));  // field 1, length-delimited
    for (uint64_t size = bytes_.size();; size >>= 7) {
      if (size < 0x80) {
        buffer_.push_back(static_cast<char>(size));
        break;
      }
      buffer_.push_back(static_cast<char>((size & 0x7f) | 0x80));
    }
    buffer_ += bytes_;
    // Packets go out in batches: a sink call per packet would cost more than the packet.
    if (buffer_.size() >= (size_t{1} << 20)) {
      sink_(buffer_);
      buffer_.clear();
    }
  }

  const TraceSink& sink_;
  perfetto::protos::TracePacket packet_;
  std::string bytes_;
  std::string buffer_;
  bool first_ = true;
  bool pending_ = false;
};

}  // namespace

std::string WritePerfettoTrace(const Timeline& timeline) {
  std::string out;
  WritePerfettoTrace(timeline, [&](std::string_view bytes) { out.append(bytes); });
  return out;
}

void WritePerfettoTrace(const Timeline& timeline, const TraceSink& sink) {
  using perfetto::protos::TrackEvent;
  PacketStream stream(sink);
  auto packet = [&](uint64_t timestamp) { return stream.Next(timestamp); };
  for (uint32_t h = 0; h < timeline.hosts.size(); ++h) {
    perfetto::protos::TrackDescriptor* track = packet(0)->mutable_track_descriptor();
    track->set_uuid(HostUuid(h));
    track->mutable_process()->set_pid(static_cast<int32_t>(h) + 1);
    track->mutable_process()->set_process_name(timeline.String(timeline.hosts[h]));
  }
  for (uint32_t t = 0; t < timeline.ranks.size(); ++t) {
    const Timeline::RankTrack& rank = timeline.ranks[t];
    perfetto::protos::TrackDescriptor* track = packet(0)->mutable_track_descriptor();
    track->set_uuid(RankUuid(timeline, t));
    track->set_parent_uuid(HostUuid(rank.host));
    track->mutable_thread()->set_pid(static_cast<int32_t>(rank.host) + 1);
    // tids must not collide with the pids of the process tracks.
    track->mutable_thread()->set_tid(rank.rank + 1'000'000);
    track->mutable_thread()->set_thread_name(
        fmt::format("rank {}{}", rank.rank, rank.culprit ? " (culprit)" : ""));
  }
  std::map<uint32_t, std::vector<uint64_t>> flows_out, flows_in;
  for (const Timeline::Flow& flow : timeline.flows) {
    flows_out[flow.from_slice].push_back(flow.id);
    flows_in[flow.to_slice].push_back(flow.id);
  }
  for (uint32_t i = 0; i < timeline.slices.size(); ++i) {
    const Timeline::Slice& slice = timeline.slices[i];
    uint64_t uuid = RankUuid(timeline, slice.track);
    TrackEvent* begin = packet(static_cast<uint64_t>(slice.begin_ns))->mutable_track_event();
    begin->set_type(TrackEvent::TYPE_SLICE_BEGIN);
    begin->set_track_uuid(uuid);
    begin->set_name(timeline.String(slice.name));
    begin->add_categories("collective");
    Annotate(begin, "group", timeline.String(slice.group));
    Annotate(begin, "op", timeline.String(slice.op));
    Annotate(begin, "state", timeline.String(slice.state));
    Annotate(begin, "sizes", timeline.String(slice.sizes));
    if (slice.seq >= 0) {
      perfetto::protos::DebugAnnotation* seq = begin->add_debug_annotations();
      seq->set_name("seq");
      seq->set_int_value(slice.seq);
    }
    for (uint64_t id : flows_out[i]) begin->add_flow_ids(id);
    for (uint64_t id : flows_in[i]) begin->add_terminating_flow_ids(id);
    TrackEvent* end = packet(static_cast<uint64_t>(slice.end_ns))->mutable_track_event();
    end->set_type(TrackEvent::TYPE_SLICE_END);
    end->set_track_uuid(uuid);
  }
  for (const Timeline::Instant& instant : timeline.instants) {
    TrackEvent* event = packet(static_cast<uint64_t>(instant.ns))->mutable_track_event();
    event->set_type(TrackEvent::TYPE_INSTANT);
    event->set_track_uuid(instant.track >= 0
                              ? RankUuid(timeline, static_cast<uint32_t>(instant.track))
                              : HostUuid(instant.host));
    event->set_name(timeline.String(instant.name));
    event->add_categories("log");
    Annotate(event, "line", timeline.String(instant.text));
  }
  stream.Finish();
}

namespace {

void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

std::string Micros(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, std::abs(ns % 1000)); }

}  // namespace

std::string WriteChromeTraceJson(const Timeline& timeline) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto begin_event = [&]() {
    if (!first) out += ",\n";
    first = false;
  };
  for (uint32_t h = 0; h < timeline.hosts.size(); ++h) {
    begin_event();
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":",
                       h + 1);
    AppendJsonString(timeline.String(timeline.hosts[h]), &out);
    out += "}}";
  }
  for (const Timeline::RankTrack& rank : timeline.ranks) {
    begin_event();
    out += fmt::format(
        "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":",
        rank.host + 1, rank.rank);
    AppendJsonString(fmt::format("rank {}{}", rank.rank, rank.culprit ? " (culprit)" : ""), &out);
    out += "}}";
  }
  for (const Timeline::Slice& slice : timeline.slices) {
    const Timeline::RankTrack& rank = timeline.ranks[slice.track];
    begin_event();
    out += "{\"ph\":\"X\",\"cat\":\"collective\",\"name\":";
    AppendJsonString(timeline.String(slice.name), &out);
    out +=
        fmt::format(",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"seq\":{},\"group\":",
                    rank.host + 1, rank.rank, Micros(slice.begin_ns),
                    Micros(slice.end_ns - slice.begin_ns), slice.seq);
    AppendJsonString(timeline.String(slice.group), &out);
    out += ",\"state\":";
    AppendJsonString(timeline.String(slice.state), &out);
    out += ",\"sizes\":";
    AppendJsonString(timeline.String(slice.sizes), &out);
    out += "}}";
  }
  for (const Timeline::Flow& flow : timeline.flows) {
    for (bool start : {true, false}) {
      const Timeline::Slice& slice = timeline.slices[start ? flow.from_slice : flow.to_slice];
      const Timeline::RankTrack& rank = timeline.ranks[slice.track];
      begin_event();
      out += fmt::format(
          "{{\"ph\":\"{}\",\"cat\":\"wait\",\"name\":\"waits for\",\"id\":{},\"pid\":{},"
          "\"tid\":{},\"ts\":{}{}}}",
          start ? "s" : "f", flow.id, rank.host + 1, rank.rank, Micros(slice.begin_ns),
          start ? "" : ",\"bp\":\"e\"");
    }
  }
  for (const Timeline::Instant& instant : timeline.instants) {
    begin_event();
    out += "{\"ph\":\"i\",\"cat\":\"log\",\"name\":";
    AppendJsonString(timeline.String(instant.name), &out);
    if (instant.track >= 0) {
      const Timeline::RankTrack& rank = timeline.ranks[static_cast<size_t>(instant.track)];
      out += fmt::format(",\"s\":\"t\",\"pid\":{},\"tid\":{}", rank.host + 1, rank.rank);
    } else {
      out += fmt::format(",\"s\":\"p\",\"pid\":{},\"tid\":0", instant.host + 1);
    }
    out += fmt::format(",\"ts\":{},\"args\":{{\"line\":", Micros(instant.ns));
    AppendJsonString(timeline.String(instant.text), &out);
    out += "}}";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace fr
