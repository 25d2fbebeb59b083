#include "fr/verdict/unrecorded_p2p.h"

#include <algorithm>
#include <map>
#include <utility>

#include "fr/waitfor/wait_for_graph.h"

namespace fr {

bool PointToPointUnrecorded(const LoadedTrace& trace) {
  bool gloo = false;
  for (const RankDump& dump : trace.ranks) {
    // The backend's string id, found once per dump rather than compared per entry.
    StringId gloo_id = kNoString;
    for (StringId id = 0; id < dump.strings.size() && gloo_id == kNoString; ++id) {
      if (dump.strings.view(id) == "gloo") gloo_id = id;
    }
    for (const Entry& entry : dump.entries) {
      if (IsPointToPoint(entry.op) || entry.is_p2p) return false;
      gloo |= entry.backend == gloo_id;
    }
  }
  return gloo;
}

void LinkSinksWaitingInUnrecordedOps(const LoadedTrace& trace, const ProgramOrder& order,
                                     std::vector<Block>* blocks) {
  if (!PointToPointUnrecorded(trace)) return;
  WaitForGraph first(*blocks);
  // Copied: appending to `blocks` below invalidates what the graph refers to.
  const std::vector<int64_t> sinks = first.culprits();
  if (sinks.size() < 2) return;
  auto first_wait_on = [&](int64_t rank) {
    int64_t earliest = kUnknown;
    for (uint32_t b : first.BlocksOn(rank)) {
      int64_t t = (*blocks)[b].time_created_ns;
      if (t != kUnknown && (earliest == kUnknown || t < earliest)) earliest = t;
    }
    return earliest;
  };
  auto last_activity = [&](int64_t rank) {
    const RankDump* dump = order.DumpOf(rank);
    int64_t last = kUnknown;
    if (dump == nullptr) return last;
    for (const Entry& entry : dump->entries) last = std::max(last, entry.time_created_ns);
    return last;
  };
  bool all_dumped = std::all_of(sinks.begin(), sinks.end(), [&](int64_t rank) {
    const RankDump* dump = order.DumpOf(rank);
    return dump != nullptr && !dump->entries.empty();
  });
  // Each sink's position: (ops recorded since the shared collective, or 0 when unknown; the time
  // it stopped). The origin is the least advanced; a sink strictly beyond it is linked.
  std::map<int64_t, std::pair<int64_t, int64_t>> position;
  std::map<int64_t, int64_t> progress;
  if (all_dumped) progress = order.ProgressSinceLastSharedCollective(sinks);
  for (int64_t sink : sinks) {
    // Without every dump, every sink is placed by the first wait on it, as the dumpless ones
    // must be: the two kinds of time are not comparable.
    int64_t stopped = all_dumped ? last_activity(sink) : first_wait_on(sink);
    position[sink] = {progress.empty() ? 0 : progress.at(sink), stopped};
  }
  int64_t origin = kUnknown;
  for (int64_t sink : sinks) {
    if (position[sink].second == kUnknown) continue;
    if (origin == kUnknown || position[sink] < position[origin]) origin = sink;
  }
  if (origin == kUnknown) return;
  const auto [origin_progress, origin_stopped] = position[origin];
  std::vector<Block> links;
  for (int64_t sink : sinks) {
    if (sink == origin) continue;
    int64_t sink_last = last_activity(sink);
    if (sink_last == kUnknown) continue;
    bool beyond =
        progress.empty() ? sink_last > origin_stopped : progress.at(sink) > origin_progress;
    if (!beyond) continue;
    Block link;
    link.group = kNoGroupIndex;
    link.is_p2p = true;
    link.op = "send/recv";
    link.waiters = {sink};
    link.blockers = {origin};
    link.reason = BlockReason::kUnrecordedP2p;
    link.time_created_ns = sink_last;
    links.push_back(std::move(link));
  }
  blocks->insert(blocks->end(), std::make_move_iterator(links.begin()),
                 std::make_move_iterator(links.end()));
}

}  // namespace fr
