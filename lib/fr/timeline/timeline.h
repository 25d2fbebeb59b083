// One timeline of the job, and two pictures of it: every rank's collectives (from the dumps) and
// events (from the logs) on the corrected clock, written as a Perfetto trace (Perfetto's native
// protobuf format: opens in ui.perfetto.dev and trace_processor) or as Chrome trace-event JSON for
// older viewers.
//
//   report::Report report = Analyze(trace, &logs, options);
//   Timeline timeline = BuildTimeline(trace, logs, report);
//   std::string bytes = WritePerfettoTrace(timeline);   // fr-analyze timeline DIR -o job.pftrace
//
// Tracks: one process track per host, one thread track per rank under its host. Slices: each
// collective or p2p op a rank recorded, from its enqueue to its completion (the recorded duration,
// or the rank's next enqueue when the backend records none; a pending op runs to the dump time),
// with its group, seq, op, state and sizes. Instants: each log event, and each moment a monitor
// finding points at. Flows: from each victim's
// pending op to the op of the rank it waits for (the verdict's wait chains, else the culprit).
//
// Times: each rank's records are on its host's clock; the report's per-host offsets (from the
// logs, timeline.hosts) put them on the job's clock. Strings are interned: a slice is a few
// integers, so 4096 ranks x 2000 entries take less memory than the dumps.
#ifndef FR_TIMELINE_TIMELINE_H_
#define FR_TIMELINE_TIMELINE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fr/logs/log_event.h"
#include "fr/model/loaded_trace.h"
#include "fr/monitor/monitor_snapshots.h"
#include "fr/report.pb.h"

namespace fr {

struct Timeline {
  // Interned strings; index 0 is "".
  std::vector<std::string> strings;
  std::vector<uint32_t> hosts;  // string ids, one process track each, ascending name
  struct RankTrack {
    int64_t rank = -1;
    uint32_t host = 0;  // index into `hosts`
    bool culprit = false;
  };
  std::vector<RankTrack> ranks;  // ascending rank
  struct Slice {
    uint32_t track = 0;  // index into `ranks`
    int64_t begin_ns = 0;
    int64_t end_ns = 0;
    uint32_t group = 0;  // "3 (DP)"
    uint32_t op = 0;
    uint32_t state = 0;  // "completed", "scheduled" ...
    uint32_t sizes = 0;  // "in [[4096]] out [[4096]]"
    int64_t seq = -1;
  };
  std::vector<Slice> slices;  // by track, then begin
  struct Instant {
    int32_t track = -1;  // index into `ranks`, or -1: on the host's process track
    uint32_t host = 0;   // index into `hosts`
    int64_t ns = 0;
    uint32_t name = 0;  // the event kind, "xid"
    uint32_t text = 0;  // the line
  };
  std::vector<Instant> instants;
  struct Flow {
    uint64_t id = 0;
    uint32_t from_slice = 0;  // the waiter's pending op
    uint32_t to_slice = 0;    // the op of the rank it waits for
  };
  std::vector<Flow> flows;

  uint32_t Intern(const std::string& text);
  const std::string& String(uint32_t id) const { return strings[id]; }
  // What a slice is called: its op and seq, "all_reduce #812" (the op alone without a seq).
  std::string SliceName(const Slice& slice) const;

 private:
  absl::flat_hash_map<std::string, uint32_t> index_;
};

// `logs` may be empty (dumps only: hosts come from the dumps' paths, offsets are zero). With
// `monitors`, the moments its findings point at (a host's GPUs starting to spin at idle power, an
// idle GPU) are instants too.
// The dumps are read on `jobs` threads (0: all cores); the timeline does not depend on it.
Timeline BuildTimeline(const LoadedTrace& trace, const LogSet& logs, const report::Report& report,
                       const MonitorSnapshots* monitors = nullptr, int jobs = 0);

// Takes the output piece by piece: a file, a string, a socket.
using TraceSink = std::function<void(std::string_view bytes)>;

// Perfetto's protobuf trace (a perfetto.protos.Trace message) with interned names and values,
// written in pieces: memory stays a few chunks of packets, however many ops the job recorded (a
// Trace message built whole took several times the dumps' size). Slices are encoded on `jobs`
// threads (0: all cores); the bytes do not depend on it.
void WritePerfettoTrace(const Timeline& timeline, const TraceSink& sink, int jobs = 0);
// The same, as one string.
std::string WritePerfettoTrace(const Timeline& timeline, int jobs = 0);
// Chrome's trace-event JSON ({"traceEvents": [...]}, times in microseconds).
std::string WriteChromeTraceJson(const Timeline& timeline);

}  // namespace fr

#endif  // FR_TIMELINE_TIMELINE_H_
