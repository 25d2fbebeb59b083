#include "fr/write/dump_document.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "fmt/format.h"

namespace fr {
namespace {

// Builds one dict at a time; for the JSON flavor the pairs are sorted by key before they are
// appended, as nlohmann::json's std::map-backed objects print them.
class DictBuilder {
 public:
  DictBuilder(DocumentBuilder& builder, bool sorted) : builder_(builder), sorted_(sorted) {}

  void Add(std::string_view key, ValueId value) { pairs_.emplace_back(key, value); }

  ValueId Finish() {
    if (sorted_) {
      std::stable_sort(pairs_.begin(), pairs_.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    ValueId dict = builder_.AddContainer(ValueKind::kDict, 0);
    children_.clear();
    children_.reserve(pairs_.size() * 2);
    for (const auto& [key, value] : pairs_) {
      children_.push_back(builder_.AddOwnedString(key, 0));
      children_.push_back(value);
    }
    builder_.Append(dict, children_);
    return dict;
  }

 private:
  DocumentBuilder& builder_;
  bool sorted_;
  std::vector<std::pair<std::string_view, ValueId>> pairs_;
  std::vector<ValueId> children_;
};

class DumpDocumentBuilder {
 public:
  DumpDocumentBuilder(const DumpSpec& spec, DumpFlavor flavor, std::vector<ValueId>* held)
      : spec_(spec),
        json_(flavor == DumpFlavor::kJson),
        version_(ParseDumpVersion(spec.version)),
        held_(held) {
    builder_.Reset(nullptr);
  }

  Document Build() {
    ValueId root = version_.bare ? BuildEntries() : BuildTopLevel();
    if (TorchMemoizesTopLevel(version_)) Hold(root);
    return builder_.Finish(root);
  }

 private:
  bool AtLeast(int major, int minor) const { return version_ >= DumpVersion{major, minor}; }
  // Versions whose dump() built everything in one function and so still held the entries list,
  // pg_config, nccl_comm_state and the frame cache in locals while pickling.
  bool SingleFunctionDump() const { return !AtLeast(2, 2); }

  void Hold(ValueId id) {
    if (held_ != nullptr) held_->push_back(id);
  }

  ValueId Str(std::string_view s) { return builder_.AddOwnedString(s, 0); }
  ValueId Int(int64_t v) { return builder_.AddInt(v, 0); }
  ValueId List(std::span<const ValueId> items) {
    ValueId list = builder_.AddContainer(ValueKind::kList, 0);
    builder_.Append(list, items);
    return list;
  }

  ValueId IntList(const std::vector<int64_t>& values) {
    scratch_.clear();
    for (int64_t v : values) scratch_.push_back(Int(v));
    return List(scratch_);
  }

  ValueId Sizes(const std::vector<std::vector<int64_t>>& sizes) {
    std::vector<ValueId> items;
    items.reserve(sizes.size());
    for (const auto& shape : sizes) items.push_back(IntList(shape));
    return List(items);
  }

  ValueId Dtypes(const std::vector<std::string>& dtypes) {
    std::vector<ValueId> items;
    items.reserve(dtypes.size());
    bool cpp_names = !AtLeast(2, 1) && AtLeast(2, 0);
    for (const auto& d : dtypes) items.push_back(Str(cpp_names ? CppDtypeName(d) : d));
    return List(items);
  }

  // torch::symbolize deduplicates frames; the dump builds one dict per distinct frame and every
  // entry's list references those dicts.
  ValueId Frame(uint32_t index) {
    if (frame_values_.empty()) frame_values_.assign(spec_.frames.size(), kNoValue);
    if (index >= spec_.frames.size()) return builder_.AddNone(0);  // a bad spec, not a crash
    ValueId& value = frame_values_[index];
    if (value == kNoValue) {
      const FrameSpec& f = spec_.frames[index];
      DictBuilder d(builder_, false);
      d.Add("name", Str(f.name));
      d.Add("filename", Str(f.filename));
      d.Add("line", Int(f.line));
      value = d.Finish();
      // The frame cache (a local vector) is alive while pickling in single-function dumps, so
      // every frame dict has refcount >= 2 there.
      if (SingleFunctionDump()) Hold(value);
    }
    return value;
  }

  ValueId Frames(const EntrySpec& e) {
    std::vector<ValueId> items;
    items.reserve(e.frames.size());
    for (uint32_t index : e.frames) items.push_back(Frame(index));
    return List(items);
  }

  ValueId OptionalTime(const std::optional<int64_t>& t) {
    if (t.has_value()) return Int(*t);
    return json_ ? Int(0) : builder_.AddNone(0);
  }

  ValueId Entry(const EntrySpec& e) {
    DictBuilder d(builder_, json_);
    bool with_frames = spec_.include_stacks && !json_;
    if (!AtLeast(2, 0)) {
      // The 1.x and bare-list layouts.
      bool v14 = AtLeast(1, 2);
      bool ns = AtLeast(1, 1);
      if (v14) d.Add("record_id", Int(e.record_id));
      d.Add("pg_id", Int(e.pg_id));
      d.Add("seq_id", Int(e.collective_seq_id));
      if (v14) d.Add("op_id", Int(e.op_id));
      d.Add("profiling_name", Str(e.profiling_name));
      if (ns) {
        d.Add("time_created_ns", Int(e.time_created_ns));
        if (e.duration_ms) d.Add("duration_ms", Duration(*e.duration_ms));
      } else {
        d.Add("time_created_us", Int(e.time_created_ns / 1000));
      }
      d.Add("input_sizes", Sizes(e.input_sizes));
      d.Add("output_sizes", Sizes(e.output_sizes));
      d.Add("state", Str(e.state));
      if (ns) {
        d.Add("time_discovered_started_ns", OptionalTime(e.time_discovered_started_ns));
        d.Add("time_discovered_completed_ns", OptionalTime(e.time_discovered_completed_ns));
      }
      d.Add("retired", builder_.AddBool(e.retired, 0));
      if (with_frames) d.Add("frames", Frames(e));
      return d.Finish();
    }
    bool frames_last = !AtLeast(2, 2);
    if (with_frames && !frames_last) d.Add("frames", Frames(e));
    d.Add("record_id", Int(e.record_id));
    d.Add("pg_id", Int(e.pg_id));
    ValueId group[2] = {Str(e.pg_name), Str(e.pg_desc)};
    ValueId process_group = builder_.AddContainer(json_ ? ValueKind::kList : ValueKind::kTuple, 0);
    builder_.Append(process_group, group);
    d.Add("process_group", process_group);
    if (version_ >= kFirstVersionWithThreads) {
      d.Add("thread_name", Str(e.thread_name));
      d.Add("thread_id", Str(e.thread_id));
    }
    d.Add("collective_seq_id", Int(e.collective_seq_id));
    d.Add("p2p_seq_id", Int(e.p2p_seq_id));
    d.Add("op_id", Int(e.op_id));
    d.Add("profiling_name", Str(e.profiling_name));
    d.Add("time_created_ns", Int(e.time_created_ns));
    if (e.duration_ms) d.Add("duration_ms", Duration(*e.duration_ms));
    d.Add("input_sizes", Sizes(e.input_sizes));
    d.Add("input_dtypes", Dtypes(e.input_dtypes));
    d.Add("output_sizes", Sizes(e.output_sizes));
    d.Add("output_dtypes", Dtypes(e.output_dtypes));
    d.Add("state", Str(e.state));
    d.Add("time_discovered_started_ns", OptionalTime(e.time_discovered_started_ns));
    d.Add("time_discovered_completed_ns", OptionalTime(e.time_discovered_completed_ns));
    d.Add("retired", builder_.AddBool(e.retired, 0));
    if (AtLeast(2, 1)) d.Add("timeout_ms", Int(e.timeout_ms));
    d.Add("is_p2p", builder_.AddBool(e.is_p2p, 0));
    if (with_frames && frames_last) d.Add("frames", Frames(e));
    return d.Finish();
  }

  // The recorder keeps durations as float (std::optional<float> duration_) and widens them to
  // double for the pickle and for nlohmann::json, so real files only hold float32 values.
  ValueId Duration(double ms) {
    return builder_.AddFloat(static_cast<double>(static_cast<float>(ms)), 0);
  }

  ValueId BuildEntries() {
    std::vector<ValueId> items;
    items.reserve(spec_.entries.size());
    for (const EntrySpec& e : spec_.entries) items.push_back(Entry(e));
    ValueId list = List(items);
    if (SingleFunctionDump() && !version_.bare) Hold(list);
    return list;
  }

  static std::string RanksString(const std::vector<int64_t>& ranks) {
    std::string out = "[";
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (i > 0) out += ", ";
      out += std::to_string(ranks[i]);
    }
    out += "]";
    return out;
  }

  ValueId PgConfig() {
    if (!AtLeast(2, 0)) {
      // 1.x: std::map<pg_id, ranks>, later record_pg_ranks calls overwrite earlier ones.
      std::map<int64_t, const std::vector<int64_t>*> by_id;
      for (const auto& g : spec_.process_groups) by_id[g.pg_id] = &g.ranks;
      ValueId dict = builder_.AddContainer(ValueKind::kDict, 0);
      std::vector<ValueId> children;
      for (const auto& [id, ranks] : by_id) {
        children.push_back(Int(id));
        children.push_back(IntList(*ranks));
      }
      builder_.Append(dict, children);
      return dict;
    }
    // std::map<(name, desc), ranks>: sorted by name then desc, the last registration of a (name,
    // desc) pair wins; c10::Dict::insert and std::map::emplace keep the FIRST of several groups
    // sharing a name.
    std::map<std::tuple<std::string_view, std::string_view>, const std::vector<int64_t>*> groups;
    for (const auto& g : spec_.process_groups) groups[{g.name, g.desc}] = &g.ranks;
    DictBuilder config(builder_, json_);
    std::string_view last_name;
    bool first = true;
    for (const auto& [key, ranks] : groups) {
      auto [name, desc] = key;
      if (!first && name == last_name) continue;
      first = false;
      last_name = name;
      DictBuilder info(builder_, json_);
      info.Add("name", Str(name));
      info.Add("desc", Str(desc));
      info.Add("ranks", Str(RanksString(*ranks)));
      config.Add(name, info.Finish());
    }
    return config.Finish();
  }

  ValueId PgStatus() {
    DictBuilder all(builder_, json_);
    std::vector<std::string> keys;
    keys.reserve(spec_.pg_status.size());
    for (const auto& [pg_id, status] : spec_.pg_status) keys.push_back(std::to_string(pg_id));
    size_t i = 0;
    for (const auto& [pg_id, status] : spec_.pg_status) {
      DictBuilder d(builder_, json_);
      auto value = [&](int64_t v) { return json_ ? Str(std::to_string(v)) : Int(v); };
      d.Add("last_enqueued_collective", value(status.last_enqueued_collective));
      d.Add("last_started_collective", value(status.last_started_collective));
      d.Add("last_completed_collective", value(status.last_completed_collective));
      all.Add(keys[i++], d.Finish());
    }
    return all.Finish();
  }

  // kNoValue when torch would not write the key.
  ValueId CommState() {
    bool present = spec_.nccl_comm_state.has_value() && !spec_.nccl_comm_state->empty();
    if (!json_ && !present) return kNoValue;
    DictBuilder outer(builder_, json_);
    if (spec_.nccl_comm_state) {
      for (const auto& [comm, state] : *spec_.nccl_comm_state) {
        DictBuilder inner(builder_, json_);
        for (const auto& [k, v] : state) inner.Add(k, Str(v));
        outer.Add(comm, inner.Finish());
      }
    }
    ValueId dict = outer.Finish();
    if (!json_ && !AtLeast(2, 10)) Hold(dict);  // a local per_comm_dict inserted by copy
    return dict;
  }

  ValueId BuildTopLevel() {
    DictBuilder top(builder_, json_);
    if (!AtLeast(2, 2)) {
      top.Add("entries", BuildEntries());
      top.Add("version", Str(spec_.version));
      if (AtLeast(1, 2)) {
        if (ValueId state = CommState(); state != kNoValue) top.Add("nccl_comm_state", state);
        ValueId config = PgConfig();
        Hold(config);
        top.Add("pg_config", config);
      }
      return top.Finish();
    }
    top.Add("version", Str(spec_.version));
    top.Add("pg_config", PgConfig());
    if (AtLeast(2, 10)) {
      top.Add("comm_lib_version", Str(spec_.comm_lib_version));
    } else if (AtLeast(2, 6)) {
      top.Add("nccl_version", Str(spec_.comm_lib_version));
    }
    if (AtLeast(2, 3)) top.Add("pg_status", PgStatus());
    if (spec_.has_entries && !(json_ && spec_.entries.empty())) {
      top.Add("entries", BuildEntries());
    }
    if (ValueId state = CommState(); state != kNoValue) top.Add("nccl_comm_state", state);
    return top.Finish();
  }

  const DumpSpec& spec_;
  bool json_;
  DumpVersion version_;
  std::vector<ValueId>* held_;
  DocumentBuilder builder_;
  std::vector<ValueId> frame_values_;
  std::vector<ValueId> scratch_;
};

}  // namespace

DumpVersion ParseDumpVersion(std::string_view version) {
  if (version.empty()) return DumpVersion{0, 0, true};
  DumpVersion v;
  const char* begin = version.data();
  const char* end = begin + version.size();
  auto [dot, ec] = std::from_chars(begin, end, v.major);
  if (ec != std::errc() || dot == end || *dot != '.' ||
      std::from_chars(dot + 1, end, v.minor).ec != std::errc()) {
    return DumpVersion{99, 0, false};
  }
  return v;
}

bool TorchMemoizesTopLevel(const DumpVersion& version) {
  // Up to 2.9 ProcessGroupNCCL's dump ends with `pickle_str(result)` on a local dict (or list for
  // the bare format): the IValue made for the call is a second reference. From 2.10 the dict comes
  // from dump_dict() as a temporary and is moved into the IValue.
  return version < DumpVersion{2, 10};
}

std::string_view CppDtypeName(std::string_view name) {
  // caffe2::TypeMeta::name() of the scalar types, as demangled by GCC on Linux.
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"Byte", "unsigned char"},
      {"Char", "signed char"},
      {"Short", "short int"},
      {"Int", "int"},
      {"Long", "long int"},
      {"Half", "c10::Half"},
      {"Float", "float"},
      {"Double", "double"},
      {"Bool", "bool"},
      {"BFloat16", "c10::BFloat16"},
      {"ComplexFloat", "c10::complex<float>"},
      {"ComplexDouble", "c10::complex<double>"}};
  for (const auto& [scalar, cpp] : kNames) {
    if (scalar == name) return cpp;
  }
  return name;
}

Document BuildDumpDocument(const DumpSpec& spec, DumpFlavor flavor,
                           std::vector<ValueId>* held_by_torch) {
  if (held_by_torch != nullptr) held_by_torch->clear();
  return DumpDocumentBuilder(spec, flavor, flavor == DumpFlavor::kPickle ? held_by_torch : nullptr)
      .Build();
}

}  // namespace fr
