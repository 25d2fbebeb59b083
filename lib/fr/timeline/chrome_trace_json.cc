// The timeline as Chrome's trace-event JSON (chrome://tracing, Perfetto's legacy importer).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fmt/format.h"
#include "fr/base/json_string.h"
#include "fr/timeline/timeline.h"

namespace fr {

namespace {

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
