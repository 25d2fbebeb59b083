#include "fr/timeline/timeline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/base/parallel_for.h"
#include "fr/model/rank_dump.h"

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

// The timeline's ids of the entry states ("scheduled", ...), and of "retired".
struct SliceStates {
  std::array<uint32_t, 4> by_state{};
  uint32_t retired = 0;
  uint32_t Of(const Entry& entry) const {
    if (entry.retired && entry.state != EntryState::kCompleted) return retired;
    size_t index = static_cast<size_t>(entry.state);
    return by_state[index < by_state.size() ? index : static_cast<size_t>(EntryState::kUnknown)];
  }
};

// The entries of `dump` that become slices (those with an enqueue time).
size_t CountSlices(const RankDump& dump) {
  size_t count = 0;
  for (size_t i = 0; i < dump.entries.size(); ++i) count += dump.entries[i].time_created_ns > 0;
  return count;
}

// Writes the slices of `dump` into `slices` (CountSlices of them), and each one's group name
// into `group_names`: their group, op, sizes and group name as ids into the strings returned (id
// 0 is ""), their state the timeline's already. Dumps are read on every core this way; the ids
// are then made the timeline's.
std::vector<std::string> ReadDumpSlices(const RankDump& dump, uint32_t track, int64_t offset,
                                        int64_t dump_time, const SliceStates& states,
                                        std::span<Timeline::Slice> slices,
                                        std::span<uint32_t> group_names) {
  std::vector<std::string> strings(1);
  absl::flat_hash_map<std::string, uint32_t> ids;
  ids.emplace("", 0);
  auto intern = [&](std::string text) {
    auto [it, inserted] = ids.try_emplace(std::move(text), static_cast<uint32_t>(ids.size()));
    if (inserted) strings.push_back(it->first);
    return it->second;
  };
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < dump.entries.size(); ++i) {
    if (dump.entries[i].time_created_ns > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return dump.entries[a].time_created_ns < dump.entries[b].time_created_ns;
  });
  // What repeats across a dump's entries is numbered once per distinct value: its groups, ops
  // and size signatures (formatting them per entry was most of the cost at 2M entries).
  std::vector<std::pair<uint32_t, uint32_t>> group_ids;  // per local group: (label, name)
  for (const ProcessGroup& group : dump.groups) {
    group_ids.push_back(
        {intern(GroupLabel(dump, group)), intern(std::string(dump.strings.view(group.name)))});
  }
  absl::flat_hash_map<uint64_t, uint32_t> sizes_of;  // (input, output) shape lists -> id
  absl::flat_hash_map<uint32_t, uint32_t> op_of;     // op name string -> id
  for (size_t k = 0; k < order.size(); ++k) {
    const Entry entry = dump.entries[order[k]];
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
    auto [op_id, new_op] = op_of.try_emplace(entry.op_name, 0);
    if (new_op) op_id->second = intern(std::string(dump.strings.view(entry.op_name)));
    uint64_t sizes_key = uint64_t{entry.input_sizes} << 32 | entry.output_sizes;
    auto [sizes_id, new_sizes] = sizes_of.try_emplace(sizes_key, 0);
    if (new_sizes) {
      sizes_id->second = intern(fmt::format("in {} out {}", dump.Shapes(entry.input_sizes),
                                            dump.Shapes(entry.output_sizes)));
    }
    Timeline::Slice slice;
    slice.track = track;
    slice.begin_ns = begin - offset;
    slice.end_ns = end - offset;
    slice.group = group_label;
    slice.op = op_id->second;
    slice.state = states.Of(entry);
    slice.sizes = sizes_id->second;
    slice.seq = entry.is_p2p ? entry.p2p_seq_id : entry.collective_seq_id;
    slices[k] = slice;
    group_names[k] = group_name;
  }
  return strings;
}

}  // namespace

std::string Timeline::SliceName(const Slice& slice) const {
  return slice.seq >= 0 ? fmt::format("{} #{}", String(slice.op), slice.seq) : String(slice.op);
}

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
                       const MonitorSnapshots* monitors, int jobs) {
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

  // Slices, one track per rank with a dump. The dumps are read on every core, each numbering the
  // few distinct strings it uses (groups, ops, sizes) on its own; they are then renumbered into
  // the timeline's strings one dump at a time, a table lookup per slice.
  SliceStates states;
  states.retired = timeline.Intern("retired");
  for (size_t s = 0; s < states.by_state.size(); ++s) {
    states.by_state[s] = timeline.Intern(std::string(EntryStateName(static_cast<EntryState>(s))));
  }
  int64_t dump_time = report.inputs().dump_time_ns();
  std::map<int32_t, uint32_t> track_of_rank;
  std::vector<int64_t> offset_of_track;
  for (const RankDump& dump : trace.ranks) {
    std::string host = host_name(dump.rank);
    track_of_rank[dump.rank] = static_cast<uint32_t>(timeline.ranks.size());
    timeline.ranks.push_back(
        {.rank = dump.rank, .host = host_index[host], .culprit = culprits.contains(dump.rank)});
    offset_of_track.push_back(offset_ns.contains(host) ? offset_ns[host] : 0);
  }
  // Per track, its slices [first, end) in `timeline.slices`, and per slice its group's name
  // (interned): the flows below look up a waiter's op by (group, seq) among its own slices only.
  // Both are linear in the slices; a map keyed by strings cost more than the dumps at 4096 ranks.
  const size_t dumps = trace.ranks.size();
  std::vector<std::pair<uint32_t, uint32_t>> slices_of_track(dumps);
  ParallelFor(
      dumps, jobs,
      [&](size_t d) {
        slices_of_track[d].second = static_cast<uint32_t>(CountSlices(trace.ranks[d]));
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/16);
  size_t total = 0;
  for (auto& [first, end] : slices_of_track) {
    first = static_cast<uint32_t>(total);
    total += end;
    end = static_cast<uint32_t>(total);
  }
  timeline.slices.resize(total);
  std::vector<uint32_t> slice_group_name(total);
  std::vector<std::vector<std::string>> strings_of_dump(dumps);
  auto range = [&](auto& all, size_t d) {
    const auto& [first, end] = slices_of_track[d];
    return std::span(all.data() + first, end - first);
  };
  ParallelFor(
      dumps, jobs,
      [&](size_t d) {
        strings_of_dump[d] =
            ReadDumpSlices(trace.ranks[d], static_cast<uint32_t>(d), offset_of_track[d], dump_time,
                           states, range(timeline.slices, d), range(slice_group_name, d));
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/16);
  // The dumps' own string ids become the timeline's: a few distinct strings per dump, interned
  // one dump at a time, then a table lookup per slice on every core.
  std::vector<std::vector<uint32_t>> global_of_dump(dumps);
  for (size_t d = 0; d < dumps; ++d) {
    for (const std::string& text : strings_of_dump[d]) {
      global_of_dump[d].push_back(timeline.Intern(text));
    }
    strings_of_dump[d] = {};
  }
  ParallelFor(
      dumps, jobs,
      [&](size_t d) {
        const std::vector<uint32_t>& global = global_of_dump[d];
        for (Timeline::Slice& slice : range(timeline.slices, d)) {
          slice.group = global[slice.group];
          slice.op = global[slice.op];
          slice.sizes = global[slice.sizes];
        }
        for (uint32_t& name : range(slice_group_name, d)) name = global[name];
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/16);

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

// Protobuf's wire format, written by hand for the few messages of a trace. A trace holds two
// packets per recorded op (millions at a few thousand ranks); filling and serializing a
// generated message per packet cost about 0.8 us per op, most of `fr-analyze timeline`.
class WireWriter {
 public:
  // Room for the fields of one packet other than strings (which reserve their own length): the
  // writes below then need no capacity checks.
  static constexpr size_t kPacketBytes = 512;

  // Makes room for `bytes` more bytes.
  void Reserve(size_t bytes) {
    if (size_ + bytes > storage_.size())
      storage_.resize(std::max(2 * storage_.size(), size_ + bytes));
  }
  std::string_view bytes() const { return std::string_view(storage_.data(), size_); }
  void clear() { size_ = 0; }

  void Varint(uint64_t value) {
    char* out = storage_.data() + size_;
    while (value >= 0x80) {
      *out++ = static_cast<char>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    *out++ = static_cast<char>(value);
    size_ = static_cast<size_t>(out - storage_.data());
  }
  void UInt(uint32_t field, uint64_t value) {
    Varint(uint64_t{field} << 3);  // wire type 0
    Varint(value);
  }
  // (Any number of flows may end at one slice: each makes its own room.)
  void Fixed64(uint32_t field, uint64_t value) {
    Reserve(kPacketBytes);
    Varint(uint64_t{field} << 3 | 1);
    for (int i = 0; i < 8; ++i) storage_[size_++] = static_cast<char>(value >> (8 * i));
  }
  void Bytes(uint32_t field, std::string_view bytes) {
    Reserve(bytes.size() + kPacketBytes);
    Varint(uint64_t{field} << 3 | 2);
    Varint(bytes.size());
    std::memcpy(storage_.data() + size_, bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  // A nested message: its length is known only when it ends. One byte is kept for it, which
  // holds nearly every message here; a longer one is moved up to make room.
  size_t Open(uint32_t field) {
    Varint(uint64_t{field} << 3 | 2);
    storage_[size_++] = '\0';
    return size_;
  }
  void Close(size_t start) {
    uint64_t length = size_ - start;
    if (length < 0x80) [[likely]] {
      storage_[start - 1] = static_cast<char>(length);
      return;
    }
    char prefix[10];
    size_t n = 0;
    for (; length >= 0x80; length >>= 7) prefix[n++] = static_cast<char>((length & 0x7f) | 0x80);
    prefix[n++] = static_cast<char>(length);
    Reserve(n - 1 + kPacketBytes);
    std::memmove(storage_.data() + start + n - 1, storage_.data() + start, size_ - start);
    std::memcpy(storage_.data() + start - 1, prefix, n);
    size_ += n - 1;
  }

 private:
  std::string storage_;
  size_t size_ = 0;
};

// Perfetto's field numbers (protos/perfetto/trace/: trace_packet.proto, track_event/*.proto,
// interned_data/interned_data.proto); proto/perfetto/trace.proto declares the same subset.
namespace field {
constexpr uint32_t kTracePacket = 1;
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
// TrackDescriptor, ProcessDescriptor, ThreadDescriptor.
constexpr uint32_t kUuid = 1;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kThread = 4;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kPid = 1;
constexpr uint32_t kTid = 2;
constexpr uint32_t kProcessName = 6;
constexpr uint32_t kThreadName = 5;
// TrackEvent.
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kDebugAnnotation = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kFlowIds = 47;
constexpr uint32_t kTerminatingFlowIds = 48;
// DebugAnnotation.
constexpr uint32_t kAnnotationNameIid = 1;
constexpr uint32_t kIntValue = 4;
constexpr uint32_t kStringValueIid = 17;
// InternedData, and its entries (EventCategory, EventName, DebugAnnotationName, InternedString:
// iid 1, the text 2).
constexpr uint32_t kEventCategories = 1;
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kDebugAnnotationNames = 3;
constexpr uint32_t kDebugAnnotationStringValues = 29;
constexpr uint32_t kIid = 1;
constexpr uint32_t kText = 2;
}  // namespace field

constexpr uint32_t kSequence = 1;
constexpr uint32_t kIncrementalStateCleared = 1;
constexpr uint32_t kNeedsIncrementalState = 2;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;

// Interning ids of the fixed names, emitted with the first packet.
enum : uint64_t { kCategoryCollective = 1, kCategoryLog };
enum : uint64_t {
  kAnnotationGroup = 1,
  kAnnotationOp,
  kAnnotationState,
  kAnnotationSizes,
  kAnnotationSeq,
  kAnnotationLine
};

// Writes the trace. Event names and annotation values are interned (each distinct string written
// once, named by its iid after that: the timeline's string id plus one, since iid 0 means none),
// and all of them are defined before the first event. Events then depend on nothing written
// before them, so slices are encoded in chunks on every core and written out in order, a few
// chunks at a time.
class TraceWriter {
 public:
  TraceWriter(const Timeline& timeline, const TraceSink& sink, int jobs)
      : timeline_(timeline), sink_(sink), jobs_(jobs) {}

  void Write() {
    WireWriter wire;
    WriteTracks(wire);
    WriteInternedStrings(wire);
    Flush(wire);
    // Flows leaving and arriving at each slice, by slice.
    for (const Timeline::Flow& flow : timeline_.flows) {
      flows_out_.push_back({flow.from_slice, flow.id});
      flows_in_.push_back({flow.to_slice, flow.id});
    }
    std::sort(flows_out_.begin(), flows_out_.end());
    std::sort(flows_in_.begin(), flows_in_.end());
    // Chunks of slices, encoded a round at a time: memory stays a few chunks however long the
    // trace is.
    constexpr size_t kChunkSlices = 32768;
    const size_t slices = timeline_.slices.size();
    const size_t chunks = (slices + kChunkSlices - 1) / kChunkSlices;
    const size_t per_round = std::max<size_t>(
        1, 2 * static_cast<size_t>(jobs_ > 0 ? jobs_ : std::thread::hardware_concurrency()));
    std::vector<WireWriter> round(per_round);
    for (size_t first = 0; first < chunks; first += per_round) {
      const size_t count = std::min(per_round, chunks - first);
      ParallelFor(count, jobs_, [&](size_t c) {
        round[c].clear();
        const size_t begin = (first + c) * kChunkSlices;
        // Each chunk names its slices with iids of its own range, past the strings' iids.
        const uint64_t first_name_iid = timeline_.strings.size() + 1 + begin;
        WriteSlices(begin, std::min(slices, begin + kChunkSlices), first_name_iid, round[c]);
      });
      for (size_t c = 0; c < count; ++c) sink_(round[c].bytes());
    }
    for (const Timeline::Instant& instant : timeline_.instants) {
      size_t packet = BeginEventPacket(wire, instant.ns);
      size_t event = wire.Open(field::kTrackEvent);
      StringAnnotation(wire, kAnnotationLine, instant.text);
      wire.UInt(field::kType, kInstant);
      wire.UInt(field::kTrackUuid, instant.track >= 0
                                       ? RankUuid(timeline_, static_cast<uint32_t>(instant.track))
                                       : HostUuid(instant.host));
      wire.UInt(field::kCategoryIids, kCategoryLog);
      wire.UInt(field::kNameIid, uint64_t{instant.name} + 1);
      wire.Close(event);
      wire.Close(packet);
      FlushIfFull(wire);
    }
    Flush(wire);
  }

 private:
  // The first packet clears the sequence's incremental state and interns the fixed names; the
  // tracks follow.
  void WriteTracks(WireWriter& wire) {
    wire.Reserve(WireWriter::kPacketBytes);
    size_t first = wire.Open(field::kTracePacket);
    wire.UInt(field::kSequenceId, kSequence);
    wire.UInt(field::kSequenceFlags, kIncrementalStateCleared);
    size_t interned = wire.Open(field::kInternedData);
    InternedEntry(wire, field::kEventCategories, kCategoryCollective, "collective");
    InternedEntry(wire, field::kEventCategories, kCategoryLog, "log");
    uint64_t iid = kAnnotationGroup;
    for (std::string_view name : {"group", "op", "state", "sizes", "seq", "line"}) {
      InternedEntry(wire, field::kDebugAnnotationNames, iid++, name);
    }
    wire.Close(interned);
    wire.Close(first);
    auto begin_packet = [&] {
      wire.Reserve(WireWriter::kPacketBytes);
      size_t packet = wire.Open(field::kTracePacket);
      wire.UInt(field::kSequenceId, kSequence);
      return packet;
    };
    for (uint32_t h = 0; h < timeline_.hosts.size(); ++h) {
      size_t packet = begin_packet();
      size_t track = wire.Open(field::kTrackDescriptor);
      wire.UInt(field::kUuid, HostUuid(h));
      size_t process = wire.Open(field::kProcess);
      wire.UInt(field::kPid, h + 1);
      wire.Bytes(field::kProcessName, timeline_.String(timeline_.hosts[h]));
      wire.Close(process);
      wire.Close(track);
      wire.Close(packet);
      FlushIfFull(wire);
    }
    for (uint32_t t = 0; t < timeline_.ranks.size(); ++t) {
      const Timeline::RankTrack& rank = timeline_.ranks[t];
      size_t packet = begin_packet();
      size_t track = wire.Open(field::kTrackDescriptor);
      wire.UInt(field::kUuid, RankUuid(timeline_, t));
      wire.UInt(field::kParentUuid, HostUuid(rank.host));
      size_t thread = wire.Open(field::kThread);
      wire.UInt(field::kPid, rank.host + 1);
      // tids must not collide with the pids of the process tracks.
      wire.UInt(field::kTid, static_cast<uint64_t>(rank.rank + 1'000'000));
      wire.Bytes(field::kThreadName,
                 fmt::format("rank {}{}", rank.rank, rank.culprit ? " (culprit)" : ""));
      wire.Close(thread);
      wire.Close(track);
      wire.Close(packet);
      FlushIfFull(wire);
    }
  }

  // Every event name and annotation value the events use, in packets of at most about 64 KB.
  void WriteInternedStrings(WireWriter& wire) {
    const size_t count = timeline_.strings.size();
    std::vector<bool> name(count), value(count);
    for (const Timeline::Slice& slice : timeline_.slices) {
      for (uint32_t v : {slice.group, slice.op, slice.state, slice.sizes}) value[v] = true;
    }
    for (const Timeline::Instant& instant : timeline_.instants) {
      name[instant.name] = true;
      value[instant.text] = true;
    }
    value[0] = false;  // "": left out of the events
    constexpr size_t kPacketTarget = size_t{64} << 10;
    size_t packet = 0, interned = 0;
    bool open = false;
    auto entry = [&](uint32_t index, uint32_t id) {
      if (!open) {
        wire.Reserve(WireWriter::kPacketBytes);
        packet = wire.Open(field::kTracePacket);
        wire.UInt(field::kSequenceId, kSequence);
        wire.UInt(field::kSequenceFlags, kNeedsIncrementalState);
        interned = wire.Open(field::kInternedData);
        open = true;
      }
      InternedEntry(wire, index, uint64_t{id} + 1, timeline_.String(id));
      if (wire.bytes().size() - packet >= kPacketTarget) {
        wire.Close(interned);
        wire.Close(packet);
        FlushIfFull(wire);
        open = false;
      }
    };
    for (uint32_t id = 0; id < count; ++id) {
      if (name[id]) entry(field::kEventNames, id);
      if (value[id]) entry(field::kDebugAnnotationStringValues, id);
    }
    if (open) {
      wire.Close(interned);
      wire.Close(packet);
    }
  }

  // Slices [begin, end): a begin and an end event each. Slice names ("all_reduce #812", shared by
  // a group's members) are interned within the chunk, numbered from `first_name_iid` (a chunk
  // defines at most one per slice, so chunks' ranges never overlap).
  void WriteSlices(size_t begin, size_t end, uint64_t first_name_iid, WireWriter& wire) const {
    absl::flat_hash_map<std::pair<uint32_t, int64_t>, uint64_t> name_iids;  // (op, seq)
    uint64_t next_name_iid = first_name_iid;
    auto next_out = std::lower_bound(flows_out_.begin(), flows_out_.end(),
                                     std::pair<uint32_t, uint64_t>{begin, 0});
    auto next_in = std::lower_bound(flows_in_.begin(), flows_in_.end(),
                                    std::pair<uint32_t, uint64_t>{begin, 0});
    for (size_t i = begin; i < end; ++i) {
      const Timeline::Slice& slice = timeline_.slices[i];
      const uint64_t uuid = RankUuid(timeline_, slice.track);
      size_t packet = BeginEventPacket(wire, slice.begin_ns);
      auto [name, new_name] = name_iids.try_emplace({slice.op, slice.seq}, next_name_iid);
      if (new_name) {
        ++next_name_iid;
        size_t interned = wire.Open(field::kInternedData);
        InternedEntry(wire, field::kEventNames, name->second, timeline_.SliceName(slice));
        wire.Close(interned);
      }
      size_t event = wire.Open(field::kTrackEvent);
      StringAnnotation(wire, kAnnotationGroup, slice.group);
      StringAnnotation(wire, kAnnotationOp, slice.op);
      StringAnnotation(wire, kAnnotationState, slice.state);
      StringAnnotation(wire, kAnnotationSizes, slice.sizes);
      if (slice.seq >= 0) {
        size_t seq = wire.Open(field::kDebugAnnotation);
        wire.UInt(field::kAnnotationNameIid, kAnnotationSeq);
        wire.UInt(field::kIntValue, static_cast<uint64_t>(slice.seq));
        wire.Close(seq);
      }
      wire.UInt(field::kType, kSliceBegin);
      wire.UInt(field::kTrackUuid, uuid);
      wire.UInt(field::kCategoryIids, kCategoryCollective);
      wire.UInt(field::kNameIid, name->second);
      for (; next_out != flows_out_.end() && next_out->first == i; ++next_out) {
        wire.Fixed64(field::kFlowIds, next_out->second);
      }
      for (; next_in != flows_in_.end() && next_in->first == i; ++next_in) {
        wire.Fixed64(field::kTerminatingFlowIds, next_in->second);
      }
      wire.Close(event);
      wire.Close(packet);
      packet = BeginEventPacket(wire, slice.end_ns);
      event = wire.Open(field::kTrackEvent);
      wire.UInt(field::kType, kSliceEnd);
      wire.UInt(field::kTrackUuid, uuid);
      wire.Close(event);
      wire.Close(packet);
    }
  }

  static size_t BeginEventPacket(WireWriter& wire, int64_t ns) {
    wire.Reserve(WireWriter::kPacketBytes);
    size_t packet = wire.Open(field::kTracePacket);
    if (ns > 0) wire.UInt(field::kTimestamp, static_cast<uint64_t>(ns));
    wire.UInt(field::kSequenceId, kSequence);
    wire.UInt(field::kSequenceFlags, kNeedsIncrementalState);
    return packet;
  }

  static void InternedEntry(WireWriter& wire, uint32_t index, uint64_t iid, std::string_view text) {
    size_t entry = wire.Open(index);
    wire.UInt(field::kIid, iid);
    wire.Bytes(field::kText, text);
    wire.Close(entry);
  }

  // An annotation whose value is a timeline string; the empty string is left out.
  static void StringAnnotation(WireWriter& wire, uint64_t name_iid, uint32_t value) {
    if (value == 0) return;
    size_t annotation = wire.Open(field::kDebugAnnotation);
    wire.UInt(field::kAnnotationNameIid, name_iid);
    wire.UInt(field::kStringValueIid, uint64_t{value} + 1);
    wire.Close(annotation);
  }

  // Packets go out in batches: a sink call per packet would cost more than the packet.
  void FlushIfFull(WireWriter& wire) {
    if (wire.bytes().size() >= (size_t{1} << 20)) Flush(wire);
  }
  void Flush(WireWriter& wire) {
    if (!wire.bytes().empty()) sink_(wire.bytes());
    wire.clear();
  }

  const Timeline& timeline_;
  const TraceSink& sink_;
  const int jobs_;
  std::vector<std::pair<uint32_t, uint64_t>> flows_out_, flows_in_;  // (slice, flow id)
};

}  // namespace

std::string WritePerfettoTrace(const Timeline& timeline, int jobs) {
  std::string out;
  WritePerfettoTrace(
      timeline, [&](std::string_view bytes) { out.append(bytes); }, jobs);
  return out;
}

void WritePerfettoTrace(const Timeline& timeline, const TraceSink& sink, int jobs) {
  TraceWriter(timeline, sink, jobs).Write();
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
    AppendJsonString(timeline.SliceName(slice), &out);
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
