#include "fr/summary/rank_summary.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "fr/base/utf8.h"

namespace fr {
namespace {

void ToProto(const PgStatus& status, summary::Status* out) {
  out->set_last_enqueued_collective(status.last_enqueued_collective);
  out->set_last_started_collective(status.last_started_collective);
  out->set_last_completed_collective(status.last_completed_collective);
}

PgStatus FromProto(const summary::Status& status) {
  PgStatus out;
  out.last_enqueued_collective = status.last_enqueued_collective();
  out.last_started_collective = status.last_started_collective();
  out.last_completed_collective = status.last_completed_collective();
  return out;
}

constexpr uint32_t kRetired = 1, kIsP2p = 2, kStateFromBatch = 4;

// Ranks all of one summary's groups may list together once their runs are expanded: 64 MiB of
// ranks, the normalizer's smallest budget for what one dump keeps.
constexpr uint64_t kMaxSummaryRanks = uint64_t{8} << 20;

// `ranks` as (first, step, count) runs when that is shorter than writing them out, which it is for
// every group a TP x PP x DP job makes (the world, and each group's evenly strided ranks).
void WriteRanks(const SharedRanks& ranks, summary::Group* group) {
  constexpr int64_t kRankMax = std::numeric_limits<int32_t>::max();
  // Out-of-range ranks (a dump built in memory) are written out as they are, and the reader
  // refuses them; in range, no difference between two ranks can overflow.
  bool in_range = std::all_of(ranks.begin(), ranks.end(),
                              [](int64_t rank) { return rank >= 0 && rank <= kRankMax; });
  std::vector<int64_t> runs;
  for (size_t i = 0; in_range && i < ranks.size() && runs.size() < ranks.size();) {
    int64_t step = i + 1 < ranks.size() ? ranks[i + 1] - ranks[i] : 1;
    size_t j = i + 1;
    while (j < ranks.size() && ranks[j] - ranks[j - 1] == step) ++j;
    runs.insert(runs.end(), {ranks[i], step, static_cast<int64_t>(j - i)});
    i = j;
  }
  if (in_range && runs.size() < ranks.size()) {
    group->mutable_rank_runs()->Add(runs.begin(), runs.end());
  } else {
    group->mutable_ranks()->Add(ranks.begin(), ranks.end());
  }
}

// Expands (first, step, count) runs, taking their ranks from `budget`; an error for runs that are
// not whole triples, have no ranks, overflow, or go beyond the budget.
absl::StatusOr<std::vector<int64_t>> ExpandRankRuns(
    const google::protobuf::RepeatedField<int64_t>& runs, uint64_t* budget) {
  if (runs.size() % 3 != 0) return absl::DataLossError("not (first, step, count) triples");
  std::vector<int64_t> ranks;
  for (int i = 0; i < runs.size(); i += 3) {
    int64_t first = runs[i], step = runs[i + 1], count = runs[i + 2];
    if (count <= 0 || static_cast<uint64_t>(count) > *budget) {
      return absl::DataLossError("a run of no ranks, or of more than a summary may hold");
    }
    // With first and step within +-2^31 and count within the budget (2^23), the last rank below
    // cannot overflow.
    constexpr int64_t kRankMax = std::numeric_limits<int32_t>::max();
    if (first < 0 || first > kRankMax || step < -kRankMax || step > kRankMax) {
      return absl::DataLossError("a run outside the range of ranks");
    }
    int64_t last = first + step * (count - 1);
    if (last < 0 || last > kRankMax) return absl::DataLossError("a run outside the range of ranks");
    *budget -= static_cast<uint64_t>(count);
    for (int64_t k = 0; k < count; ++k) ranks.push_back(first + step * k);
  }
  return ranks;
}

// Checks that bytes read back describe a dump the analysis can walk without leaving its tables:
// a worker's summary crosses a network and a disk, and a damaged one must be an error, never an
// out-of-bounds read.
class Checker {
 public:
  explicit Checker(const std::string& name) : name_(name) {}

  bool Fails(bool bad, std::string_view field) {
    if (bad && status_.ok()) {
      status_ = absl::DataLossError(fmt::format(
          "{}: its summary is damaged at field '{}' (not what fr-analyze wrote)", name_, field));
    }
    return bad;
  }
  // Offsets into a table of `size` values: start at 0, never decrease, end within it.
  void Offsets(const google::protobuf::RepeatedField<uint32_t>& offsets, size_t size,
               std::string_view field) {
    uint32_t previous = 0;
    for (uint32_t offset : offsets) {
      if (Fails(offset < previous || offset > size, field)) return;
      previous = offset;
    }
  }
  absl::Status status() const { return status_; }

 private:
  const std::string& name_;
  absl::Status status_;
};

}  // namespace

std::string SerializeRankDump(const RankDump& dump) {
  summary::RankSummary out;
  ToRankSummary(dump, &out);
  return out.SerializeAsString();
}

void ToRankSummary(const RankDump& dump, summary::RankSummary* summary) {
  summary::RankSummary& out = *summary;
  out.Clear();
  out.set_schema_version(kRankSummarySchema);
  out.set_rank(dump.rank);
  out.set_path(dump.path);
  out.set_host(dump.host);
  out.set_file_mtime_ns(dump.file_mtime_ns);
  out.set_version(dump.version);
  out.set_version_major(dump.version_major);
  out.set_version_minor(dump.version_minor);
  out.set_comm_lib_version(dump.comm_lib_version);
  out.set_has_entries_key(dump.has_entries_key);
  out.set_has_stacks(dump.has_stacks);
  for (size_t id = 0; id < dump.strings.size(); ++id) {
    out.add_strings(std::string(dump.strings.view(static_cast<StringId>(id))));
  }
  for (const ProcessGroup& group : dump.groups) {
    summary::Group* g = out.add_groups();
    g->set_name(group.name);
    g->set_desc(group.desc);
    WriteRanks(group.ranks, g);
    g->set_ranks_known(group.ranks_known);
    g->set_pg_id(group.pg_id);
    g->set_status_recorded(group.has_status);
    ToProto(group.status, g->mutable_status());
    g->set_entry_count(group.entry_count);
  }
  summary::Entries* e = out.mutable_entries();
  for (const Entry& entry : dump.entries) {
    e->add_record_id(entry.record_id);
    e->add_pg_id(entry.pg_id);
    e->add_collective_seq_id(entry.collective_seq_id);
    e->add_p2p_seq_id(entry.p2p_seq_id);
    e->add_op_id(entry.op_id);
    e->add_time_created_ns(entry.time_created_ns);
    e->add_time_discovered_started_ns(entry.time_discovered_started_ns);
    e->add_time_discovered_completed_ns(entry.time_discovered_completed_ns);
    e->add_timeout_ms(entry.timeout_ms);
    e->add_duration_ms(entry.duration_ms);
    e->add_peer_rank(entry.peer_rank);
    e->add_group(entry.group);
    e->add_profiling_name(entry.profiling_name);
    e->add_backend(entry.backend);
    e->add_op_name(entry.op_name);
    e->add_thread_name(entry.thread_name);
    e->add_thread_id(entry.thread_id);
    e->add_input_sizes(entry.input_sizes);
    e->add_output_sizes(entry.output_sizes);
    e->add_input_dtypes(entry.input_dtypes);
    e->add_output_dtypes(entry.output_dtypes);
    e->add_stack(entry.stack);
    e->add_op(static_cast<uint32_t>(entry.op));
    e->add_state(static_cast<uint32_t>(entry.state));
    e->add_flags((entry.retired ? kRetired : 0) | (entry.is_p2p ? kIsP2p : 0) |
                 (entry.state_from_batch ? kStateFromBatch : 0));
  }
  out.mutable_shape_dims()->Add(dump.shape_dims.begin(), dump.shape_dims.end());
  out.mutable_shape_list_offsets()->Add(dump.shape_list_offsets.begin(),
                                        dump.shape_list_offsets.end());
  out.mutable_dtype_names()->Add(dump.dtype_names.begin(), dump.dtype_names.end());
  out.mutable_dtype_list_offsets()->Add(dump.dtype_list_offsets.begin(),
                                        dump.dtype_list_offsets.end());
  for (const Frame& frame : dump.frames) {
    out.add_frame_names(frame.name);
    out.add_frame_filenames(frame.filename);
    out.add_frame_lines(frame.line);
  }
  out.mutable_stack_frames()->Add(dump.stack_frames.begin(), dump.stack_frames.end());
  out.mutable_stack_offsets()->Add(dump.stack_offsets.begin(), dump.stack_offsets.end());
  for (const auto& [pg_id, status] : dump.unmatched_pg_status) {
    summary::KeyedStatus* keyed = out.add_unmatched_pg_status();
    keyed->set_pg_id(pg_id);
    ToProto(status, keyed->mutable_status());
  }
  for (const auto& [key, value] : dump.comm_state) {
    out.add_comm_state_keys(key);
    out.add_comm_state_values(value);
  }
  for (const auto& [name, count] : dump.oddities) {
    out.add_oddity_names(name);
    out.add_oddity_counts(count);
  }
}

absl::StatusOr<RankDump> ParseRankDump(std::string_view bytes, const std::string& name) {
  summary::RankSummary in;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(fmt::format("{}: its summary is not a RankSummary message", name));
  }
  return FromRankSummary(in, name);
}

absl::StatusOr<RankDump> FromRankSummary(const summary::RankSummary& in, const std::string& name) {
  if (in.schema_version() != kRankSummarySchema) {
    return absl::FailedPreconditionError(
        fmt::format("{}: its summary has schema {}, this fr-analyze reads {}: run the same "
                    "version on the workers",
                    name, in.schema_version(), kRankSummarySchema));
  }
  Checker check(name);
  // Ranks as the normalizer admits them (0..2^31-1): the analysis adds to and compares them.
  auto is_rank = [](int64_t rank) {
    return rank >= 0 && rank <= std::numeric_limits<int32_t>::max();
  };
  RankDump dump;
  check.Fails(!is_rank(in.rank()), "rank");
  dump.rank = in.rank();
  dump.path = in.path();
  dump.host = in.host();
  dump.file_mtime_ns = in.file_mtime_ns();
  dump.version = in.version();
  dump.version_major = in.version_major();
  dump.version_minor = in.version_minor();
  dump.comm_lib_version = in.comm_lib_version();
  dump.has_entries_key = in.has_entries_key();
  dump.has_stacks = in.has_stacks();
  // Strings come from the dump's decoder, which accepts only UTF-8 (paths and hosts are the file
  // system's bytes and are not checked): anything else was damaged on the way, and would reach
  // the report and every reader of it.
  check.Fails(!IsValidUtf8(in.version()), "version");
  check.Fails(!IsValidUtf8(in.comm_lib_version()), "comm_lib_version");
  // Id 0 is the empty string in every table, so the first one read must be it.
  check.Fails(in.strings_size() == 0 || !in.strings(0).empty(), "strings");
  for (int i = 1; i < in.strings_size(); ++i) {
    check.Fails(!IsValidUtf8(in.strings(i)), "strings");
    check.Fails(dump.strings.Intern(in.strings(i)) != static_cast<StringId>(i), "strings");
  }
  const size_t strings = dump.strings.size();
  auto string_id = [&](uint32_t id, std::string_view field) {
    check.Fails(id >= strings, field);
    return id;
  };
  // What the groups' rank lists may expand to: runs are a few bytes for any number of ranks.
  uint64_t ranks_budget = kMaxSummaryRanks;
  for (const summary::Group& g : in.groups()) {
    ProcessGroup& group = dump.groups.emplace_back();
    group.name = string_id(g.name(), "groups.name");
    group.desc = string_id(g.desc(), "groups.desc");
    if (check.Fails(!g.ranks().empty() && !g.rank_runs().empty(), "groups.rank_runs")) break;
    if (!g.rank_runs().empty()) {
      absl::StatusOr<std::vector<int64_t>> ranks = ExpandRankRuns(g.rank_runs(), &ranks_budget);
      if (check.Fails(!ranks.ok(), "groups.rank_runs")) break;
      group.ranks = *std::move(ranks);
    } else {
      check.Fails(static_cast<uint64_t>(g.ranks_size()) > ranks_budget, "groups.ranks");
      ranks_budget -= std::min<uint64_t>(ranks_budget, g.ranks_size());
      group.ranks = std::vector<int64_t>(g.ranks().begin(), g.ranks().end());
    }
    for (int64_t rank : group.ranks) check.Fails(!is_rank(rank), "groups.ranks");
    group.ranks_known = g.ranks_known();
    group.pg_id = g.pg_id();
    group.has_status = g.status_recorded();
    group.status = FromProto(g.status());
    group.entry_count = g.entry_count();
  }
  dump.shape_dims.assign(in.shape_dims().begin(), in.shape_dims().end());
  dump.shape_list_offsets.assign(in.shape_list_offsets().begin(), in.shape_list_offsets().end());
  check.Offsets(in.shape_list_offsets(), dump.shape_dims.size(), "shape_list_offsets");
  // Each shape list is [n, rank_0, dims_0..., ...]: its counts must stay inside the list.
  for (size_t id = 0; id + 1 < dump.shape_list_offsets.size() && check.status().ok(); ++id) {
    std::span<const int64_t> flat = dump.ShapeList(static_cast<ShapeListId>(id));
    if (flat.empty()) continue;
    size_t at = 1;
    for (int64_t shape = 0; shape < flat[0] && !check.Fails(at >= flat.size(), "shape_dims");
         ++shape) {
      int64_t rank = flat[at++];
      if (check.Fails(rank < 0 || static_cast<size_t>(rank) > flat.size() - at, "shape_dims")) {
        break;
      }
      at += static_cast<size_t>(rank);
    }
    check.Fails(flat[0] < 0, "shape_dims");
  }
  dump.dtype_names.assign(in.dtype_names().begin(), in.dtype_names().end());
  for (uint32_t id : dump.dtype_names) string_id(id, "dtype_names");
  dump.dtype_list_offsets.assign(in.dtype_list_offsets().begin(), in.dtype_list_offsets().end());
  check.Offsets(in.dtype_list_offsets(), dump.dtype_names.size(), "dtype_list_offsets");
  check.Fails(in.frame_names_size() != in.frame_filenames_size() ||
                  in.frame_names_size() != in.frame_lines_size(),
              "frames");
  for (int i = 0; i < in.frame_names_size() && check.status().ok(); ++i) {
    dump.frames.push_back({.name = string_id(in.frame_names(i), "frame_names"),
                           .filename = string_id(in.frame_filenames(i), "frame_filenames"),
                           .line = in.frame_lines(i)});
  }
  dump.stack_frames.assign(in.stack_frames().begin(), in.stack_frames().end());
  for (uint32_t frame : dump.stack_frames) check.Fails(frame >= dump.frames.size(), "stack_frames");
  dump.stack_offsets.assign(in.stack_offsets().begin(), in.stack_offsets().end());
  check.Offsets(in.stack_offsets(), dump.stack_frames.size(), "stack_offsets");

  const summary::Entries& e = in.entries();
  const int n = e.record_id_size();
  for (int size : {e.pg_id_size(),
                   e.collective_seq_id_size(),
                   e.p2p_seq_id_size(),
                   e.op_id_size(),
                   e.time_created_ns_size(),
                   e.time_discovered_started_ns_size(),
                   e.time_discovered_completed_ns_size(),
                   e.timeout_ms_size(),
                   e.duration_ms_size(),
                   e.peer_rank_size(),
                   e.group_size(),
                   e.profiling_name_size(),
                   e.backend_size(),
                   e.op_name_size(),
                   e.thread_name_size(),
                   e.thread_id_size(),
                   e.input_sizes_size(),
                   e.output_sizes_size(),
                   e.input_dtypes_size(),
                   e.output_dtypes_size(),
                   e.stack_size(),
                   e.op_size(),
                   e.state_size(),
                   e.flags_size()}) {
    check.Fails(size != n, "entries");
  }
  if (!check.status().ok()) return check.status();
  const size_t shape_lists =
      dump.shape_list_offsets.empty() ? 0 : dump.shape_list_offsets.size() - 1;
  const size_t dtype_lists =
      dump.dtype_list_offsets.empty() ? 0 : dump.dtype_list_offsets.size() - 1;
  const size_t stacks = dump.stack_offsets.empty() ? 0 : dump.stack_offsets.size() - 1;
  dump.entries.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n && check.status().ok(); ++i) {
    Entry& entry = dump.entries.emplace_back();
    entry.record_id = e.record_id(i);
    entry.pg_id = e.pg_id(i);
    entry.collective_seq_id = e.collective_seq_id(i);
    entry.p2p_seq_id = e.p2p_seq_id(i);
    entry.op_id = e.op_id(i);
    entry.time_created_ns = e.time_created_ns(i);
    entry.time_discovered_started_ns = e.time_discovered_started_ns(i);
    entry.time_discovered_completed_ns = e.time_discovered_completed_ns(i);
    entry.timeout_ms = e.timeout_ms(i);
    entry.duration_ms = e.duration_ms(i);
    entry.peer_rank = e.peer_rank(i);
    check.Fails(entry.peer_rank != kUnknown && !is_rank(entry.peer_rank), "entries.peer_rank");
    entry.group = e.group(i);
    check.Fails(entry.group >= dump.groups.size(), "entries.group");
    entry.profiling_name = string_id(e.profiling_name(i), "entries.profiling_name");
    entry.backend = string_id(e.backend(i), "entries.backend");
    entry.op_name = string_id(e.op_name(i), "entries.op_name");
    entry.thread_name = string_id(e.thread_name(i), "entries.thread_name");
    entry.thread_id = string_id(e.thread_id(i), "entries.thread_id");
    // Id 0 stands for "not recorded" and reads as an empty list even in an empty table.
    entry.input_sizes = e.input_sizes(i);
    entry.output_sizes = e.output_sizes(i);
    check.Fails((entry.input_sizes != 0 && entry.input_sizes >= shape_lists) ||
                    (entry.output_sizes != 0 && entry.output_sizes >= shape_lists),
                "entries.sizes");
    entry.input_dtypes = e.input_dtypes(i);
    entry.output_dtypes = e.output_dtypes(i);
    check.Fails((entry.input_dtypes != 0 && entry.input_dtypes >= dtype_lists) ||
                    (entry.output_dtypes != 0 && entry.output_dtypes >= dtype_lists),
                "entries.dtypes");
    entry.stack = e.stack(i);
    check.Fails(entry.stack != kNoStack && entry.stack >= stacks, "entries.stack");
    check.Fails(e.op(i) > static_cast<uint32_t>(OpKind::kCoalesced), "entries.op");
    entry.op = static_cast<OpKind>(e.op(i));
    check.Fails(e.state(i) > static_cast<uint32_t>(EntryState::kUnknown), "entries.state");
    entry.state = static_cast<EntryState>(e.state(i));
    entry.retired = (e.flags(i) & kRetired) != 0;
    entry.is_p2p = (e.flags(i) & kIsP2p) != 0;
    entry.state_from_batch = (e.flags(i) & kStateFromBatch) != 0;
  }
  for (const summary::KeyedStatus& keyed : in.unmatched_pg_status()) {
    dump.unmatched_pg_status.emplace_back(keyed.pg_id(), FromProto(keyed.status()));
  }
  check.Fails(in.comm_state_keys_size() != in.comm_state_values_size(), "comm_state");
  for (int i = 0; i < in.comm_state_keys_size() && i < in.comm_state_values_size(); ++i) {
    check.Fails(!IsValidUtf8(in.comm_state_keys(i)) || !IsValidUtf8(in.comm_state_values(i)),
                "comm_state");
    dump.comm_state.emplace_back(in.comm_state_keys(i), in.comm_state_values(i));
  }
  check.Fails(in.oddity_names_size() != in.oddity_counts_size(), "oddities");
  for (int i = 0; i < in.oddity_names_size() && i < in.oddity_counts_size(); ++i) {
    check.Fails(!IsValidUtf8(in.oddity_names(i)), "oddity_names");
    dump.oddities.emplace_back(in.oddity_names(i), in.oddity_counts(i));
  }
  if (!check.status().ok()) return check.status();
  return dump;
}

}  // namespace fr
