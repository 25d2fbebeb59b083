#include "fr/model/rank_dump_equal.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "fmt/format.h"

namespace fr {
namespace {

// Collects the first difference; later comparisons are skipped once one is found.
class Differ {
 public:
  template <typename T>
  void Same(std::string_view field, const T& a, const T& b) {
    if (!diff_.empty() || a == b) return;
    diff_ = fmt::format("{}: {} vs {}", field, a, b);
  }

  void SameDouble(std::string_view field, double a, double b) {
    if (!diff_.empty() || std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b)) return;
    diff_ = fmt::format("{}: {} vs {}", field, a, b);
  }

  template <typename T, typename A, typename B, typename Equal = std::equal_to<T>>
  void SameVector(std::string_view field, const std::vector<T, A>& a, const std::vector<T, B>& b,
                  Equal equal = {}) {
    if (!diff_.empty()) return;
    if (a.size() != b.size()) {
      diff_ = fmt::format("{}.size(): {} vs {}", field, a.size(), b.size());
      return;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (!equal(a[i], b[i])) {
        diff_ = fmt::format("{}[{}] differs", field, i);
        return;
      }
    }
  }

  // Any two ranges of the same element type (rank lists may be shared rather than vectors).
  template <typename A, typename B>
  void SameRange(std::string_view field, const A& a, const B& b) {
    if (!diff_.empty()) return;
    if (a.size() != b.size()) {
      diff_ = fmt::format("{}.size(): {} vs {}", field, a.size(), b.size());
    } else if (!std::equal(a.begin(), a.end(), b.begin())) {
      diff_ = fmt::format("{} differs", field);
    }
  }

  bool found() const { return !diff_.empty(); }
  std::string take() { return std::move(diff_); }

 private:
  std::string diff_;
};

bool SameFrame(const Frame& a, const Frame& b) {
  return a.name == b.name && a.filename == b.filename && a.line == b.line;
}

bool SameStatus(const std::pair<int64_t, PgStatus>& a, const std::pair<int64_t, PgStatus>& b) {
  return a.first == b.first &&
         a.second.last_enqueued_collective == b.second.last_enqueued_collective &&
         a.second.last_started_collective == b.second.last_started_collective &&
         a.second.last_completed_collective == b.second.last_completed_collective;
}

void CompareEntry(Differ& d, size_t i, const Entry& a, const Entry& b) {
  auto f = [i](std::string_view name) { return fmt::format("entries[{}].{}", i, name); };
  d.Same(f("record_id"), a.record_id, b.record_id);
  d.Same(f("pg_id"), a.pg_id, b.pg_id);
  d.Same(f("collective_seq_id"), a.collective_seq_id, b.collective_seq_id);
  d.Same(f("p2p_seq_id"), a.p2p_seq_id, b.p2p_seq_id);
  d.Same(f("op_id"), a.op_id, b.op_id);
  d.Same(f("time_created_ns"), a.time_created_ns, b.time_created_ns);
  d.Same(f("time_discovered_started_ns"), a.time_discovered_started_ns,
         b.time_discovered_started_ns);
  d.Same(f("time_discovered_completed_ns"), a.time_discovered_completed_ns,
         b.time_discovered_completed_ns);
  d.Same(f("timeout_ms"), a.timeout_ms, b.timeout_ms);
  d.SameDouble(f("duration_ms"), a.duration_ms, b.duration_ms);
  d.Same(f("peer_rank"), a.peer_rank, b.peer_rank);
  d.Same(f("group"), a.group, b.group);
  d.Same(f("profiling_name"), a.profiling_name, b.profiling_name);
  d.Same(f("backend"), a.backend, b.backend);
  d.Same(f("op_name"), a.op_name, b.op_name);
  d.Same(f("thread_name"), a.thread_name, b.thread_name);
  d.Same(f("thread_id"), a.thread_id, b.thread_id);
  d.Same(f("input_sizes"), a.input_sizes, b.input_sizes);
  d.Same(f("output_sizes"), a.output_sizes, b.output_sizes);
  d.Same(f("input_dtypes"), a.input_dtypes, b.input_dtypes);
  d.Same(f("output_dtypes"), a.output_dtypes, b.output_dtypes);
  d.Same(f("stack"), a.stack, b.stack);
  d.Same(f("op"), static_cast<int>(a.op), static_cast<int>(b.op));
  d.Same(f("state"), static_cast<int>(a.state), static_cast<int>(b.state));
  d.Same(f("retired"), a.retired, b.retired);
  d.Same(f("is_p2p"), a.is_p2p, b.is_p2p);
  d.Same(f("state_from_batch"), a.state_from_batch, b.state_from_batch);
}

void CompareGroup(Differ& d, size_t i, const ProcessGroup& a, const ProcessGroup& b) {
  auto f = [i](std::string_view name) { return fmt::format("groups[{}].{}", i, name); };
  d.Same(f("name"), a.name, b.name);
  d.Same(f("desc"), a.desc, b.desc);
  d.SameVector(f("ranks"), a.ranks.ToVector(), b.ranks.ToVector());
  d.Same(f("ranks_known"), a.ranks_known, b.ranks_known);
  d.Same(f("pg_id"), a.pg_id, b.pg_id);
  d.Same(f("has_status"), a.has_status, b.has_status);
  d.Same(f("status.last_enqueued_collective"), a.status.last_enqueued_collective,
         b.status.last_enqueued_collective);
  d.Same(f("status.last_started_collective"), a.status.last_started_collective,
         b.status.last_started_collective);
  d.Same(f("status.last_completed_collective"), a.status.last_completed_collective,
         b.status.last_completed_collective);
  d.Same(f("entry_count"), a.entry_count, b.entry_count);
}

}  // namespace

std::string DescribeRankDumpDifference(const RankDump& a, const RankDump& b) {
  Differ d;
  d.Same("rank", a.rank, b.rank);
  d.Same("path", a.path, b.path);
  d.Same("host", a.host, b.host);
  d.Same("file_mtime_ns", a.file_mtime_ns, b.file_mtime_ns);
  d.Same("version", a.version, b.version);
  d.Same("version_major", a.version_major, b.version_major);
  d.Same("version_minor", a.version_minor, b.version_minor);
  d.Same("comm_lib_version", a.comm_lib_version, b.comm_lib_version);
  d.Same("has_entries_key", a.has_entries_key, b.has_entries_key);
  d.Same("has_stacks", a.has_stacks, b.has_stacks);
  d.Same("strings.size()", a.strings.size(), b.strings.size());
  for (StringId id = 0; !d.found() && id < a.strings.size(); ++id) {
    d.Same(fmt::format("strings[{}]", id), a.strings.view(id), b.strings.view(id));
  }
  d.Same("groups.size()", a.groups.size(), b.groups.size());
  for (size_t i = 0; !d.found() && i < a.groups.size(); ++i) {
    CompareGroup(d, i, a.groups[i], b.groups[i]);
  }
  d.Same("entries.size()", a.entries.size(), b.entries.size());
  for (size_t i = 0; !d.found() && i < a.entries.size(); ++i) {
    CompareEntry(d, i, a.entries[i], b.entries[i]);
  }
  d.SameVector("shape_dims", a.shape_dims, b.shape_dims);
  d.SameVector("shape_list_offsets", a.shape_list_offsets, b.shape_list_offsets);
  d.SameVector("dtype_names", a.dtype_names, b.dtype_names);
  d.SameVector("dtype_list_offsets", a.dtype_list_offsets, b.dtype_list_offsets);
  d.SameVector("frames", a.frames, b.frames, SameFrame);
  d.SameVector("stack_frames", a.stack_frames, b.stack_frames);
  d.SameVector("stack_offsets", a.stack_offsets, b.stack_offsets);
  d.SameVector("unmatched_pg_status", a.unmatched_pg_status, b.unmatched_pg_status, SameStatus);
  d.SameVector("comm_state", a.comm_state, b.comm_state);
  d.Same("oddities.size()", a.oddities.size(), b.oddities.size());
  for (size_t i = 0; !d.found() && i < a.oddities.size(); ++i) {
    d.Same(fmt::format("oddities[{}].name", i), a.oddities[i].first, b.oddities[i].first);
    d.Same(fmt::format("oddities[{}].count", i), a.oddities[i].second, b.oddities[i].second);
  }
  return d.take();
}

}  // namespace fr
