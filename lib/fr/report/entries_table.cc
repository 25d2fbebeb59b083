#include "fr/report/entries_table.h"

#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/model/op_kind.h"

namespace fr {
namespace {

// Interns values of one column across all dumps.
class Categories {
 public:
  explicit Categories(CategoryColumn* column) : column_(*column) {}

  int32_t Code(std::string_view value) {
    auto [it, inserted] =
        index_.try_emplace(std::string(value), static_cast<int32_t>(column_.categories.size()));
    if (inserted) column_.categories.emplace_back(value);
    return it->second;
  }
  void Add(int32_t code) { column_.codes.push_back(code); }

 private:
  CategoryColumn& column_;
  absl::flat_hash_map<std::string, int32_t> index_;
};

// Per dump, the code of each of its ids (string, shape list, dtype list, stack), made once.
class PerDumpCodes {
 public:
  template <typename MakeValue>
  int32_t Get(uint32_t id, Categories& categories, const MakeValue& make) {
    if (id >= codes_.size()) codes_.resize(id + 1, -1);
    int32_t& code = codes_[id];
    if (code < 0) code = categories.Code(make());
    return code;
  }
  void Reset() { codes_.clear(); }

 private:
  std::vector<int32_t> codes_;
};

std::string ShapesText(const RankDump& dump, ShapeListId id) {
  return fmt::format("{}", dump.Shapes(id));
}

std::string DtypesText(const RankDump& dump, DtypeListId id) {
  std::vector<std::string_view> names;
  for (StringId name : dump.DtypeList(id)) names.push_back(dump.strings.view(name));
  return fmt::format("[{}]", fmt::join(names, ", "));
}

std::string FramesText(const RankDump& dump, StackId id) {
  if (id == kNoStack) return "";
  std::string text;
  for (uint32_t f : dump.Stack(id)) {
    const Frame& frame = dump.frames[f];
    if (!text.empty()) text += '\n';
    text += fmt::format("{} ({}:{})", dump.strings.view(frame.name),
                        dump.strings.view(frame.filename), frame.line);
  }
  return text;
}

}  // namespace

EntriesTable BuildEntriesTable(const LoadedTrace& trace) {
  EntriesTable t;
  for (const RankDump& dump : trace.ranks) t.rows += dump.entries.size();
  for (auto* column : {&t.record_id, &t.pg_id, &t.collective_seq_id, &t.p2p_seq_id, &t.op_id,
                       &t.peer_rank, &t.time_created_ns, &t.time_discovered_started_ns,
                       &t.time_discovered_completed_ns, &t.timeout_ms}) {
    column->reserve(t.rows);
  }
  t.rank.reserve(t.rows);
  Categories group(&t.process_group), desc(&t.pg_desc), op(&t.op), op_kind(&t.op_kind),
      profiling(&t.profiling_name), state(&t.state), thread(&t.thread_name),
      in_sizes(&t.input_sizes), in_dtypes(&t.input_dtypes), out_sizes(&t.output_sizes),
      out_dtypes(&t.output_dtypes), frames(&t.frames);
  // The state column always knows every state, so that its categories do not depend on the data.
  for (EntryState s : {EntryState::kScheduled, EntryState::kStarted, EntryState::kCompleted,
                       EntryState::kUnknown}) {
    state.Code(EntryStateName(s));
  }
  PerDumpCodes strings_as_op, strings_as_profiling, strings_as_thread, shapes_in, shapes_out,
      dtypes_in, dtypes_out, stacks;
  for (const RankDump& dump : trace.ranks) {
    for (PerDumpCodes* codes : {&strings_as_op, &strings_as_profiling, &strings_as_thread,
                                &shapes_in, &shapes_out, &dtypes_in, &dtypes_out, &stacks}) {
      codes->Reset();
    }
    std::vector<int32_t> group_code, desc_code;
    for (const ProcessGroup& g : dump.groups) {
      group_code.push_back(group.Code(dump.strings.view(g.name)));
      desc_code.push_back(desc.Code(dump.strings.view(g.desc)));
    }
    for (const Entry& e : dump.entries) {
      t.rank.push_back(static_cast<int32_t>(dump.rank));
      t.record_id.push_back(e.record_id);
      t.pg_id.push_back(e.pg_id);
      t.collective_seq_id.push_back(e.collective_seq_id);
      t.p2p_seq_id.push_back(e.p2p_seq_id);
      t.op_id.push_back(e.op_id);
      t.peer_rank.push_back(e.peer_rank);
      t.time_created_ns.push_back(e.time_created_ns);
      t.time_discovered_started_ns.push_back(e.time_discovered_started_ns);
      t.time_discovered_completed_ns.push_back(e.time_discovered_completed_ns);
      t.timeout_ms.push_back(e.timeout_ms);
      t.duration_ms.push_back(e.duration_ms);
      t.is_p2p.push_back(e.is_p2p);
      t.retired.push_back(e.retired);
      t.state_from_batch.push_back(e.state_from_batch);
      group.Add(e.group < group_code.size() ? group_code[e.group] : group.Code(""));
      desc.Add(e.group < desc_code.size() ? desc_code[e.group] : desc.Code(""));
      op.Add(strings_as_op.Get(e.op_name, op, [&] { return dump.strings.view(e.op_name); }));
      op_kind.Add(op_kind.Code(OpKindName(e.op)));
      profiling.Add(strings_as_profiling.Get(e.profiling_name, profiling,
                                             [&] { return dump.strings.view(e.profiling_name); }));
      state.Add(state.Code(EntryStateName(e.state)));
      thread.Add(strings_as_thread.Get(e.thread_name, thread,
                                       [&] { return dump.strings.view(e.thread_name); }));
      in_sizes.Add(
          shapes_in.Get(e.input_sizes, in_sizes, [&] { return ShapesText(dump, e.input_sizes); }));
      out_sizes.Add(shapes_out.Get(e.output_sizes, out_sizes,
                                   [&] { return ShapesText(dump, e.output_sizes); }));
      in_dtypes.Add(dtypes_in.Get(e.input_dtypes, in_dtypes,
                                  [&] { return DtypesText(dump, e.input_dtypes); }));
      out_dtypes.Add(dtypes_out.Get(e.output_dtypes, out_dtypes,
                                    [&] { return DtypesText(dump, e.output_dtypes); }));
      // kNoStack is the largest id: keep it out of the per-dump vector.
      frames.Add(e.stack == kNoStack ? frames.Code("") : stacks.Get(e.stack, frames, [&] {
        return FramesText(dump, e.stack);
      }));
    }
  }
  return t;
}

}  // namespace fr
