// fr_analyze._core: bindings only. Conveniences (dict views, pandas, HTML) live in the .py files
// of the package; absl::Status becomes a Python exception in exactly one place (ThrowIfError).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "fr/fr_analyze.h"

namespace py = pybind11;

namespace fr {
namespace {

// The one place where absl::Status turns into a Python exception: the exception classes are
// defined in fr_analyze/errors.py and looked up by name, so Python code can catch them.
[[noreturn]] void ThrowStatus(const absl::Status& status) {
  py::module_ errors = py::module_::import("fr_analyze.errors");
  const char* name = "Error";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kResourceExhausted:
      name = "DumpFormatError";
      break;
    case absl::StatusCode::kNotFound:
      name = "DumpNotFoundError";
      break;
    case absl::StatusCode::kCancelled:
      if (PyErr_Occurred() == nullptr) PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
    default:
      break;
  }
  PyErr_SetString(errors.attr(name).ptr(), std::string(status.message()).c_str());
  throw py::error_already_set();
}

// A path (or a message quoting one) as Python spells file names, os.fsdecode: bytes that are not
// UTF-8 become surrogate escapes, which os.fsencode turns back, instead of a UnicodeDecodeError.
py::str FsStr(const std::string& bytes) {
  PyObject* text =
      PyUnicode_DecodeFSDefaultAndSize(bytes.data(), static_cast<py::ssize_t>(bytes.size()));
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return *std::move(result);
}

// Runs `load` (which honours `cancel`) on a helper thread while this thread, the one Python
// delivers signals to, waits without the GIL and checks for Ctrl-C every 50 ms. `progress` is
// called with the GIL held from the loader's threads; an exception it raises cancels the load and
// is re-raised here.
LoadedTrace RunInterruptibly(const std::function<absl::StatusOr<LoadedTrace>(LoadOptions&)>& load,
                             LoadOptions options, std::function<void(size_t, size_t)> progress) {
  std::atomic<bool> cancel{false};
  options.cancel = &cancel;
  std::optional<py::error_already_set> callback_error;
  if (progress) {
    options.progress = [&](size_t done, size_t total) {
      py::gil_scoped_acquire gil;
      if (cancel) return;
      try {
        progress(done, total);
      } catch (py::error_already_set& error) {
        cancel = true;
        callback_error.emplace(std::move(error));
      }
    };
  }
  std::optional<absl::StatusOr<LoadedTrace>> result;
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    std::mutex mutex;
    std::condition_variable finished;
    std::thread worker([&] {
      absl::StatusOr<LoadedTrace> loaded = load(options);
      std::lock_guard<std::mutex> lock(mutex);
      result.emplace(std::move(loaded));
      finished.notify_one();
    });
    std::unique_lock<std::mutex> lock(mutex);
    while (!result.has_value()) {
      if (finished.wait_for(lock, std::chrono::milliseconds(50)) == std::cv_status::timeout &&
          !result.has_value() && !interrupted) {
        lock.unlock();
        {
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt is now set on this thread
            interrupted = true;
            cancel = true;
          }
        }
        lock.lock();
      }
    }
    lock.unlock();
    worker.join();
  }
  // A Ctrl-C that arrived after the last check (a load can finish within one 50 ms wait) still
  // interrupts this call, rather than surfacing later outside it.
  if (!interrupted && PyErr_CheckSignals() != 0) interrupted = true;
  if (interrupted) throw py::error_already_set();
  if (callback_error.has_value()) throw std::move(*callback_error);
  return ValueOrThrow(std::move(*result));
}

LoadedTrace Load(const std::string& path, const std::string& prefix,
                 const std::string& rank_pattern, int jobs,
                 std::function<void(size_t, size_t)> progress,
                 const std::vector<std::string>& files, bool follow_links, EarlyReads* early) {
  LoadOptions options;
  options.discover.prefix = prefix;
  options.discover.rank_pattern = rank_pattern;
  options.discover.files = files;
  options.discover.follow_links_out_of_root = follow_links;
  options.jobs = jobs;
  options.early = early;
  return RunInterruptibly([&](LoadOptions& o) { return LoadTrace(path, o); }, std::move(options),
                          std::move(progress));
}

// Spreading the reading over a cluster (fr_analyze/_dask.py): discovery here, one summary per
// file on any worker (plain arguments and bytes, so that Dask can ship them), and the trace
// assembled here from the summaries.
Discovery Discover(const std::string& path, const std::string& prefix,
                   const std::string& rank_pattern, const std::vector<std::string>& files,
                   bool follow_links) {
  DiscoverOptions options;
  options.prefix = prefix;
  options.rank_pattern = rank_pattern;
  options.files = files;
  options.follow_links_out_of_root = follow_links;
  py::gil_scoped_release release;
  absl::StatusOr<Discovery> discovery = DiscoverDumps(path, options);
  py::gil_scoped_acquire gil;
  return ValueOrThrow(std::move(discovery));
}

py::bytes SummarizeFile(const std::string& path, const std::string& open_path, int64_t rank,
                        bool hash_content) {
  std::string bytes;
  {
    py::gil_scoped_release release;
    SummaryTask task;
    task.file.path = path;
    task.file.open_path = open_path;
    task.file.rank = rank;
    task.hash_content = hash_content;
    bytes = SummarizeDumpFile(task);
  }
  return py::bytes(bytes);
}

LoadedTrace Assemble(const std::string& root, const Discovery& discovery,
                     const std::vector<py::bytes>& summaries) {
  std::vector<std::string> bytes(summaries.begin(), summaries.end());
  py::gil_scoped_release release;
  absl::StatusOr<LoadedTrace> trace = AssembleTrace(root, discovery, bytes);
  py::gil_scoped_acquire gil;
  return ValueOrThrow(std::move(trace));
}

LoadedTrace LoadBytes(const std::map<int64_t, py::bytes>& dumps, int jobs) {
  std::map<int64_t, std::shared_ptr<const Buffer>> buffers;
  for (const auto& [rank, bytes] : dumps) {
    buffers.emplace(rank, Buffer::FromString(std::string(bytes)));
  }
  LoadOptions options;
  options.jobs = jobs;
  return RunInterruptibly([&](LoadOptions& o) { return LoadTraceFromBytes(buffers, o); },
                          std::move(options), nullptr);
}

report::Report RunAnalyze(const LoadedTrace& trace, const std::string& source,
                          const std::vector<std::string>& pg_filter, int64_t dump_time_ns) {
  AnalyzeOptions options;
  options.source = source;
  options.pg_filter = pg_filter;
  options.dump_time_ns = dump_time_ns;
  py::gil_scoped_release release;
  return Analyze(trace, options);
}

// The dumps with the logs beside them (or `pasted`, one log's text, with no dumps): the report,
// whether it shows a failure, and the parsed events as columns for events_df (one list per
// column, rows in file order).
std::tuple<report::Report, bool, py::dict> RunAnalyzeWithLogs(
    const LoadedTrace& trace, const std::string& source, const std::vector<std::string>& pg_filter,
    int64_t dump_time_ns, std::optional<std::string> pasted) {
  AnalyzeOptions options;
  options.source = source;
  options.pg_filter = pg_filter;
  options.dump_time_ns = dump_time_ns;
  LogSet logs;
  Diagnosis diagnosis;
  if (pasted.has_value()) {
    absl::Status text = CheckPastedLog(kPastedLogName, *pasted, HasVisibleText(*pasted));
    if (!text.ok()) ThrowStatus(text);
  }
  {
    py::gil_scoped_release release;
    if (pasted.has_value()) {
      absl::Status parsed = ParseLogText(kPastedLogName, *pasted, &logs);
      if (!parsed.ok()) logs.errors.push_back(std::string(parsed.message()));
    } else {
      logs = ReadLogsBeside(trace);
    }
    MonitorSnapshots monitor = ReadMonitorsBeside(trace, source, &logs);
    options.monitors = &monitor;
    StackSnapshots stacks;
    if (!pasted.has_value()) stacks = ReadStacksBeside(trace);
    options.stacks = &stacks;
    diagnosis = Diagnose(trace, &logs, options);
  }
  py::list time_ns, raw_time, rank, host, kind, file, line, text;
  for (const LogEvent& event : logs.events) {
    time_ns.append(event.time_ns == kNoTime ? py::object(py::none()) : py::int_(event.time_ns));
    raw_time.append(FormatRawTime(event.raw_time));
    rank.append(event.rank);
    host.append(event.host);
    kind.append(LogEventKindName(event.kind));
    bool known = event.file >= 0 && event.file < static_cast<int32_t>(logs.files.size());
    file.append(known ? logs.files[event.file].path : std::string());
    line.append(event.line);
    text.append(py::bytes(event.text).attr("decode")("utf-8", "replace"));
  }
  py::dict columns;
  columns["time_ns"] = time_ns;
  columns["raw_time"] = raw_time;
  columns["rank"] = rank;
  columns["host"] = host;
  columns["kind"] = kind;
  columns["file"] = file;
  columns["line"] = line;
  columns["text"] = text;
  return {std::move(diagnosis.report), diagnosis.failed, std::move(columns)};
}

// The job's timeline (dumps, the logs beside them, the verdict's waits) as a Perfetto trace or
// Chrome JSON.
py::bytes WriteTimeline(const LoadedTrace& trace, const std::string& source,
                        const std::string& format) {
  std::string bytes;
  {
    py::gil_scoped_release release;
    LogSet logs = ReadLogsBeside(trace);
    MonitorSnapshots monitor = ReadMonitorsBeside(trace, source, &logs);
    StackSnapshots stacks = ReadStacksBeside(trace);
    AnalyzeOptions options;
    options.source = source;
    options.monitors = &monitor;
    options.stacks = &stacks;
    report::Report report = Analyze(trace, &logs, options);
    fr::Timeline timeline = BuildTimeline(trace, logs, report, &monitor);
    bytes = format == "chrome-json" ? WriteChromeTraceJson(timeline) : WritePerfettoTrace(timeline);
  }
  return py::bytes(bytes);
}

// The HTML report of `report` (made from `trace`): a whole page, or a fragment for a notebook.
// The logs and monitor snapshots beside the dumps are read again for the timeline's events.
// `trace`: the dumps the report was made from, or None for a report of a pasted log (the page
// then shows the verdict and the log evidence; no timeline or graph of dumps to draw).
std::string HtmlReport(const LoadedTrace* trace_or_none, const report::Report& report,
                       bool fragment) {
  py::gil_scoped_release release;
  static const LoadedTrace kNoDumps;
  const LoadedTrace& trace = trace_or_none == nullptr ? kNoDumps : *trace_or_none;
  LogSet logs = ReadLogsBeside(trace);
  MonitorSnapshots monitor = ReadMonitorsBeside(trace, report.inputs().source(), &logs);
  fr::Timeline timeline = BuildTimeline(trace, logs, report, &monitor);
  HtmlReportOptions options;
  options.fragment = fragment;
  return WriteHtmlReport(report, timeline, options);
}

// (groups as (name, desc, ranks), rows whose `group` indexes them).
using GroupKey = std::tuple<std::string, std::string, std::vector<int64_t>>;
std::pair<std::vector<GroupKey>, std::vector<CollectiveRow>> CollectiveTable(
    const LoadedTrace& trace) {
  py::gil_scoped_release release;
  JobIndex index = BuildJobIndex(trace);
  std::vector<GroupKey> groups;
  for (const JobGroup& group : index.groups)
    groups.emplace_back(group.name, group.desc, group.ranks);
  return {std::move(groups), BuildCollectiveTable(trace, index)};
}

// A dump's entries as a read-only sequence that refers to them: reading `dump.entries` copies
// nothing, and len() is O(1) (a 2000-entry dump was copied whole on every access). Items are
// copies, decoded from the dump's packed rows one at a time.
struct EntriesView {
  const RankDump* dump;
  size_t size() const { return dump->entries.size(); }
  Entry at(py::ssize_t i) const {
    py::ssize_t n = static_cast<py::ssize_t>(size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw py::index_error("entry index out of range");
    return dump->entries[static_cast<size_t>(i)];
  }
};

// A column as raw native-endian bytes, which Python reads with numpy.frombuffer: no dependency
// on numpy's C API, whose layout changed in NumPy 2 under older pybind11 releases.
template <typename T>
py::bytes Column(const std::vector<T>& values) {
  return py::bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

py::tuple Categorical(const CategoryColumn& column) {
  return py::make_tuple(Column(column.codes), column.categories);
}

// Trace.entries_df()'s columns: numbers as bytes of int32/int64/float64/uint8 values (see
// _frames.py), strings as (int32 codes, categories).
py::dict EntriesColumns(const LoadedTrace& trace) {
  EntriesTable t;
  {
    py::gil_scoped_release release;
    t = BuildEntriesTable(trace);
  }
  py::dict d;
  d["rank"] = Column(t.rank);
  d["record_id"] = Column(t.record_id);
  d["pg_id"] = Column(t.pg_id);
  d["collective_seq_id"] = Column(t.collective_seq_id);
  d["p2p_seq_id"] = Column(t.p2p_seq_id);
  d["op_id"] = Column(t.op_id);
  d["peer_rank"] = Column(t.peer_rank);
  d["time_created_ns"] = Column(t.time_created_ns);
  d["time_discovered_started_ns"] = Column(t.time_discovered_started_ns);
  d["time_discovered_completed_ns"] = Column(t.time_discovered_completed_ns);
  d["timeout_ms"] = Column(t.timeout_ms);
  d["duration_ms"] = Column(t.duration_ms);
  d["is_p2p"] = Column(t.is_p2p);
  d["retired"] = Column(t.retired);
  d["state_from_batch"] = Column(t.state_from_batch);
  d["process_group"] = Categorical(t.process_group);
  d["pg_desc"] = Categorical(t.pg_desc);
  d["op"] = Categorical(t.op);
  d["op_kind"] = Categorical(t.op_kind);
  d["profiling_name"] = Categorical(t.profiling_name);
  d["state"] = Categorical(t.state);
  d["thread_name"] = Categorical(t.thread_name);
  d["input_sizes"] = Categorical(t.input_sizes);
  d["input_dtypes"] = Categorical(t.input_dtypes);
  d["output_sizes"] = Categorical(t.output_sizes);
  d["output_dtypes"] = Categorical(t.output_dtypes);
  d["frames"] = Categorical(t.frames);
  return d;
}

}  // namespace
}  // namespace fr

PYBIND11_MODULE(_core, m) {
  using namespace fr;
  m.doc() = "fr-analyze C++ core (use the fr_analyze package, not this module)";

  py::class_<Entry>(m, "Entry")
      .def_readonly("record_id", &Entry::record_id)
      .def_readonly("pg_id", &Entry::pg_id)
      .def_readonly("collective_seq_id", &Entry::collective_seq_id)
      .def_readonly("p2p_seq_id", &Entry::p2p_seq_id)
      .def_readonly("op_id", &Entry::op_id)
      .def_readonly("time_created_ns", &Entry::time_created_ns)
      .def_readonly("time_discovered_started_ns", &Entry::time_discovered_started_ns)
      .def_readonly("time_discovered_completed_ns", &Entry::time_discovered_completed_ns)
      .def_readonly("timeout_ms", &Entry::timeout_ms)
      .def_readonly("duration_ms", &Entry::duration_ms)
      .def_readonly("peer_rank", &Entry::peer_rank)
      .def_readonly("group", &Entry::group)
      .def_readonly("profiling_name_id", &Entry::profiling_name)
      .def_readonly("backend_id", &Entry::backend)
      .def_readonly("op_name_id", &Entry::op_name)
      .def_readonly("thread_name_id", &Entry::thread_name)
      .def_readonly("thread_id_id", &Entry::thread_id)
      .def_readonly("input_sizes_id", &Entry::input_sizes)
      .def_readonly("output_sizes_id", &Entry::output_sizes)
      .def_readonly("input_dtypes_id", &Entry::input_dtypes)
      .def_readonly("output_dtypes_id", &Entry::output_dtypes)
      .def_readonly("stack_id", &Entry::stack)
      .def_property_readonly("op_kind",
                             [](const Entry& e) { return std::string(OpKindName(e.op)); })
      .def_property_readonly("state",
                             [](const Entry& e) { return std::string(EntryStateName(e.state)); })
      .def_readonly("retired", &Entry::retired)
      .def_readonly("is_p2p", &Entry::is_p2p);

  py::class_<EntriesView>(m, "Entries")
      .def("__len__", &EntriesView::size)
      .def("__getitem__", &EntriesView::at)
      .def(
          "__iter__",
          [](const EntriesView& v) {
            return py::make_iterator(v.dump->entries.begin(), v.dump->entries.end());
          },
          py::keep_alive<0, 1>());

  py::class_<PgStatus>(m, "PgStatus")
      .def_readonly("last_enqueued_collective", &PgStatus::last_enqueued_collective)
      .def_readonly("last_started_collective", &PgStatus::last_started_collective)
      .def_readonly("last_completed_collective", &PgStatus::last_completed_collective);

  py::class_<ProcessGroup>(m, "ProcessGroup")
      .def_readonly("name_id", &ProcessGroup::name)
      .def_readonly("desc_id", &ProcessGroup::desc)
      .def_readonly("ranks", &ProcessGroup::ranks)
      .def_readonly("ranks_known", &ProcessGroup::ranks_known)
      .def_readonly("pg_id", &ProcessGroup::pg_id)
      .def_readonly("entry_count", &ProcessGroup::entry_count)
      .def_property_readonly("status", [](const ProcessGroup& g) -> std::optional<PgStatus> {
        if (!g.has_status) return std::nullopt;
        return g.status;
      });

  py::class_<RankDump>(m, "RankDump")
      .def_readonly("rank", &RankDump::rank)
      .def_property_readonly("path", [](const RankDump& d) { return FsStr(d.path); })
      .def_readonly("version", &RankDump::version)
      .def_readonly("comm_lib_version", &RankDump::comm_lib_version)
      .def_readonly("has_entries_key", &RankDump::has_entries_key)
      .def_readonly("has_stacks", &RankDump::has_stacks)
      // A cpp_function of its own: keep_alive given to def_property_readonly directly is not
      // applied to the getter, and the view must keep its dump alive.
      .def_property_readonly("entries",
                             py::cpp_function([](const RankDump& d) { return EntriesView{&d}; },
                                              py::keep_alive<0, 1>()))
      .def_readonly("groups", &RankDump::groups)
      .def_readonly("oddities", &RankDump::oddities)
      .def_readonly("comm_state", &RankDump::comm_state)
      .def("string", [](const RankDump& d, StringId id) { return std::string(d.strings.view(id)); })
      .def("shapes", &RankDump::Shapes)
      .def("dtypes",
           [](const RankDump& d, DtypeListId id) {
             std::vector<std::string> names;
             for (StringId s : d.DtypeList(id)) names.emplace_back(d.strings.view(s));
             return names;
           })
      .def("stack", [](const RankDump& d, StackId id) {
        std::vector<std::tuple<std::string, std::string, int64_t>> frames;
        if (id == kNoStack) return frames;
        for (uint32_t f : d.Stack(id)) {
          const Frame& frame = d.frames[f];
          frames.emplace_back(d.strings.view(frame.name), d.strings.view(frame.filename),
                              frame.line);
        }
        return frames;
      });

  py::class_<RejectedFile>(m, "RejectedFile")
      .def_property_readonly("path", [](const RejectedFile& f) { return FsStr(f.path); })
      .def_readonly("rank", &RejectedFile::rank)
      .def_property_readonly("error", [](const RejectedFile& f) { return FsStr(f.error); });
  py::class_<SkippedFile>(m, "SkippedFile")
      .def_property_readonly("path", [](const SkippedFile& f) { return FsStr(f.path); })
      .def_property_readonly("reason", [](const SkippedFile& f) { return FsStr(f.reason); });
  py::class_<RankConflict>(m, "RankConflict")
      .def_readonly("rank", &RankConflict::rank)
      .def_property_readonly("paths", [](const RankConflict& c) {
        py::list paths;
        for (const std::string& path : c.paths) paths.append(FsStr(path));
        return paths;
      });

  py::class_<LoadedTrace>(m, "LoadedTrace")
      .def(py::init<>())  // no dumps: a pasted log analysed alone
      // RankDumps are not copyable (interned strings point into their own storage): hand out
      // references that keep the trace alive.
      .def_property_readonly(
          "ranks",
          [](py::object self) {
            auto& trace = self.cast<LoadedTrace&>();
            py::list ranks;
            for (RankDump& dump : trace.ranks) {
              ranks.append(py::cast(&dump, py::return_value_policy::reference_internal, self));
            }
            return ranks;
          })
      .def_readonly("rejected", &LoadedTrace::rejected)
      .def_readonly("skipped", &LoadedTrace::skipped)
      .def_readonly("conflicts", &LoadedTrace::conflicts)
      .def_readonly("missing_ranks", &LoadedTrace::missing_ranks)
      .def_property_readonly("evidence_paths",
                             [](const LoadedTrace& trace) {
                               py::list paths;
                               for (const std::string& path : EvidencePaths(trace)) {
                                 paths.append(FsStr(path));
                               }
                               return paths;
                             })
      .def_readonly("versions", &LoadedTrace::versions)
      .def_readonly("bytes_on_disk", &LoadedTrace::bytes_on_disk)
      .def_readonly("bytes_decoded", &LoadedTrace::bytes_decoded)
      .def("summary_text", &FormatLoadSummaryText, py::arg("source"))
      .def(
          "summary_json",
          [](const LoadedTrace& trace, const std::string& source) {
            return ValueOrThrow(FormatLoadSummaryJson(trace, source));
          },
          py::arg("source"));

  py::class_<report::Report>(m, "Report")
      .def("text", &FormatReportText)
      .def("json", [](const report::Report& r) { return ValueOrThrow(FormatReportJson(r)); })
      .def("proto_bytes", [](const report::Report& r) { return py::bytes(FormatReportProto(r)); });

  py::class_<CollectiveRow>(m, "CollectiveRow")
      .def_readonly("group", &CollectiveRow::group)
      .def_readonly("seq", &CollectiveRow::seq)
      .def_readonly("op", &CollectiveRow::op)
      .def_readonly("issued", &CollectiveRow::issued)
      .def_readonly("started", &CollectiveRow::started)
      .def_readonly("completed", &CollectiveRow::completed)
      .def_readonly("not_issued", &CollectiveRow::not_issued)
      .def_readonly("dump_missing", &CollectiveRow::dump_missing);

  m.def("analyze", &RunAnalyze, py::arg("trace"), py::arg("source") = "",
        py::arg("pg_filter") = std::vector<std::string>{}, py::arg("dump_time_ns") = kUnknown);
  m.def("analyze_with_logs", &RunAnalyzeWithLogs, py::arg("trace"), py::arg("source") = "",
        py::arg("pg_filter") = std::vector<std::string>{}, py::arg("dump_time_ns") = kUnknown,
        py::arg("pasted") = std::nullopt);
  m.def(
      "is_own_report", [](py::bytes head) { return IsOwnReport(std::string(head)); },
      py::arg("head"), "Whether a file's first bytes are a report fr-analyze wrote.");
  m.def("timeline", &WriteTimeline, py::arg("trace"), py::arg("source") = "",
        py::arg("format") = "perfetto");
  m.def("html_report", &HtmlReport, py::arg("trace").none(true), py::arg("report"),
        py::arg("fragment") = false);
  m.def("collective_table", &CollectiveTable, py::arg("trace"));
  m.def("entries_columns", &EntriesColumns, py::arg("trace"));
  m.def("load", &Load, py::arg("path"), py::arg("prefix") = "", py::arg("rank_pattern") = "",
        py::arg("jobs") = 0, py::arg("progress") = nullptr,
        py::arg("files") = std::vector<std::string>{}, py::arg("follow_links") = false,
        py::arg("early") = nullptr);
  // Files read while an upload is still being unpacked (the console's worker), handed to
  // load(..., early=...) of the finished folder.
  py::class_<EarlyReads>(m, "EarlyReads")
      .def(py::init([](int jobs, bool background) {
             return std::make_unique<EarlyReads>(jobs, background);
           }),
           py::arg("jobs") = 0, py::arg("background") = false)
      .def("file_complete", &EarlyReads::FileComplete, py::arg("path"))
      // Takes the descriptor (a pipe's read end): closed once its frames are read.
      .def("read_held", &EarlyReads::ReadHeld, py::arg("fd"))
      .def_property_readonly("files_read", &EarlyReads::files_read)
      .def_property_readonly("files_used", &EarlyReads::files_used);
  m.def("load_bytes", &LoadBytes, py::arg("dumps"), py::arg("jobs") = 0);
  // Whether discovery takes a file of this relative path for a dump by its name alone (the
  // console holds such archive members in memory until it has answered).
  m.def(
      "is_dump_by_name",
      [](const std::string& relative_path) { return IsDumpByName(relative_path, {}); },
      py::arg("relative_path"));
  py::class_<Discovery>(m, "Discovery")
      .def_property_readonly("tasks", [](const Discovery& discovery) {
        // (path, open_path, rank, hash_content) per file, in the order Assemble expects.
        py::list tasks;
        for (const SummaryTask& task : PlanSummaries(discovery)) {
          tasks.append(py::make_tuple(FsStr(task.file.path), FsStr(task.file.open_path),
                                      task.file.rank, task.hash_content));
        }
        return tasks;
      });
  m.def("discover", &Discover, py::arg("path"), py::arg("prefix") = "",
        py::arg("rank_pattern") = "", py::arg("files") = std::vector<std::string>{},
        py::arg("follow_links") = false);
  m.def("summarize_file", &SummarizeFile, py::arg("path"), py::arg("open_path"), py::arg("rank"),
        py::arg("hash_content"));
  m.def("assemble", &Assemble, py::arg("root"), py::arg("discovery"), py::arg("summaries"));
}
