// Builds the job's timeline: every rank's recorded ops as slices on its track, and the logs'
// events, on the corrected clock.
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

}  // namespace fr
