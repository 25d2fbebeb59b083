// The timeline as a Perfetto trace: protobuf written by hand, names interned, slices encoded on
// every core and written in order.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "fr/base/parallel_for.h"
#include "fr/timeline/timeline.h"

namespace fr {

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

}  // namespace fr
