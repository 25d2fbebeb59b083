// fr-analyze: the command line.
//
//   fr-analyze DIR                      the verdict (= fr-analyze analyze DIR)
//   fr-analyze analyze DIR [--format text|json|proto] [-o FILE] [-p PREFIX | --rank-pattern RE]
//                          [--pg-filter NAME] [-j N] [--dump-time NS] [--follow-links]
//   fr-analyze load DIR [--format text|json|proto]   what was loaded
//   fr-analyze entries DIR [--ranks 0,5] [--pg-filter NAME]   ranks side by side by group and seq
//   fr-analyze dump FILE [--format json]   one decoded dump, as Python's pickle.load sees it
//   fr-analyze example DIR [--world-size N] [--entries N] [--stuck-rank R] [--dump-version V]
//
// Exit status: 0 no failure found, 1 a failure verdict, 2 usage errors, nothing readable or output
// that could not be written. Output on stdout; errors on stderr.
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/index/job_index.h"
#include "fr/load/load.h"
#include "fr/logs/log_parser.h"
#include "fr/read/input_file.h"
#include "fr/report/dump_print.h"
#include "fr/report/entries_view.h"
#include "fr/report/load_summary.h"
#include "fr/report/report_format.h"
#include "fr/simulate/example_job.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "fr/verdict/analyze.h"
#include "fr/write/dump_writer.h"

namespace fr {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailureFound = 1;
constexpr int kExitUsage = 2;

constexpr std::string_view kUsage = R"(usage:
  fr-analyze DIR                       which rank broke the job, and why: DIR (or a file) may
                                       hold dumps and the job's logs (torchrun, Slurm, glog,
                                       NCCL, kernel), recognized by content
  fr-analyze analyze -                 one log pasted on standard input, alone
  fr-analyze analyze DIR [options]     the same, with options:
      --format text|json|proto         output format (default text)
      -o, --output FILE                write the report to FILE instead of stdout
      -p, --prefix PREFIX              dump files are named PREFIX<rank>
      --rank-pattern REGEX             regex (RE2 syntax) with one group capturing the rank,
                                       matched against the path relative to DIR
      --pg-filter NAME[,NAME]          report only these process groups (name or desc)
      --dump-time NS                   when the dumps were taken (ns since the epoch);
                                       default: the files' modification times
      --allow-incomplete-ranks         accepted for torchfrtrace compatibility (always on)
      --timings                        print time per stage (read, decode, analysis) on stderr
      -j, --jobs N                     threads for reading and decoding (default: all cores;
                                       at most 1024)
      --follow-links                   follow symlinks that lead out of DIR (default: skip them)
  fr-analyze load DIR [--format text|json|proto]
                                       what was loaded: ranks, versions, groups, bad files
  fr-analyze entries DIR [--ranks R[,R]] [--pg-filter NAME] [--last N]
                                       ranks side by side, aligned by group and seq
  fr-analyze dump FILE [--format json] print one decoded dump as JSON (what pickle.load gives)
  fr-analyze example DIR [options]     write the dumps of a small simulated job into DIR
      --world-size N                   ranks (default 8; at most 16384)
      --entries N                      ring-buffer entries per rank (default 64; at most 100000)
      --stuck-rank R                   a rank that never reaches the last all_reduce (default 5;
                                       -1 for a healthy job)
      --dump-version V                 dump version to write (default 2.10)
  fr-analyze simulate DIR [options]    simulate a TP x PP x DP job with one fault, write its dumps
      --tp N --pp N --dp N             parallel sizes (default 2 2 2; at most 16384 ranks)
      --steps N                        training steps (default 16; at most 10000)
      --fault KIND                     none, stuck_before_op, crashed_rank, op_mismatch,
                                       size_mismatch, dtype_mismatch, missing_send, missing_recv,
                                       gpu_stall, transport_stall, straggler (default
                                       stuck_before_op)
      --fault-rank R --fault-step S    where the fault strikes (default 5, 12)
      --fault-group world|tp|pp|dp     the group of the faulty op (default dp)
      --no-timing                      as without TORCH_NCCL_ENABLE_TIMING
      --buffer N                       ring-buffer entries (default 2000; at most 1000000)
      --json                           write the JSON variant instead of pickles
)";

int UsageError(std::string_view message) {
  std::fprintf(stderr, "fr-analyze: %.*s\n\n%.*s", static_cast<int>(message.size()), message.data(),
               static_cast<int>(kUsage.size()), kUsage.data());
  return kExitUsage;
}

// Flags of the form "--name value" or "--name=value".
class Args {
 public:
  Args(int argc, char** argv) : args_(argv + 1, argv + argc) {}

  bool empty() const { return at_ >= args_.size(); }
  std::string_view Peek() const { return args_[at_]; }
  std::string Next() { return args_[at_++]; }

  // If the next argument is one of `names`, consumes it and its value.
  std::optional<std::string> Flag(std::initializer_list<std::string_view> names, bool* missing) {
    std::string_view arg = Peek();
    for (std::string_view name : names) {
      if (arg == name) {
        if (at_ + 1 == args_.size()) {
          *missing = true;  // left as the next argument, so that the error can name it
          return std::nullopt;
        }
        ++at_;
        return Next();
      }
      if (arg.size() > name.size() + 1 && arg.substr(0, name.size()) == name &&
          arg[name.size()] == '=') {
        ++at_;
        return std::string(arg.substr(name.size() + 1));
      }
    }
    return std::nullopt;
  }

  // The end of every subcommand's flag loop, when no flag of its own matched the next argument:
  // a flag whose value is `missing`, an unknown option, or the one positional argument, taken into
  // `positional` while it is still empty. Returns what is wrong, or "" once the argument is taken.
  std::string TakePositional(bool missing, std::string* positional) {
    if (missing) return fmt::format("{} needs a value", Peek());
    if (Peek().starts_with("-") && Peek() != "-") return fmt::format("unknown option {}", Peek());
    if (!positional->empty()) return fmt::format("unexpected argument {}", Peek());
    *positional = Next();
    return "";
  }

 private:
  std::vector<std::string> args_;
  size_t at_ = 0;
};

// Parses the whole of `text` as a decimal integer in [min, max]. Out-of-range numbers fail
// rather than saturate: "-j 99999999999999999999" is a mistake, not a request for the maximum.
bool ParseInt(const std::string& text, int64_t* value,
              int64_t min = std::numeric_limits<int64_t>::min(),
              int64_t max = std::numeric_limits<int64_t>::max()) {
  int64_t parsed = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return false;
  if (parsed < min || parsed > max) return false;
  *value = parsed;
  return true;
}

// Bounds on what the command line accepts, so that a typo cannot ask for unbounded threads or
// memory.
constexpr int64_t kMaxJobs = 1024;
constexpr int64_t kMaxSimulatedRanks = 16384;
constexpr int64_t kMaxSimulatedSteps = 10'000;
constexpr int64_t kMaxRingBuffer = 1'000'000;
constexpr int64_t kMaxExampleEntries = 100'000;
// Ranks times ring-buffer entries: what a simulated job holds in memory at once.
constexpr int64_t kMaxSimulatedRecords = int64_t{1} << 25;

int WriteError(std::string_view where, int error) {
  std::fprintf(stderr, "fr-analyze: cannot write the output to %.*s: %s\n",
               static_cast<int>(where.size()), where.data(), std::strerror(error));
  return kExitUsage;
}

// The input among `inputs` that `output` is, or resolves to (a link, a hard link, "./x"), or
// "" when none: writing there would destroy the evidence being analysed.
std::string InputAt(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out;
  if (output.empty() || ::stat(output.c_str(), &out) != 0) return "";
  for (const std::string& input : inputs) {
    struct stat in;
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      return input;
    }
  }
  return "";
}

// Every file read as a dump: the loaded ones, the damaged ones and those set aside.
std::vector<std::string> FilesRead(const LoadedTrace& trace) {
  std::vector<std::string> files;
  for (const RankDump& dump : trace.ranks) files.push_back(dump.path);
  for (const RejectedFile& file : trace.rejected) files.push_back(file.path);
  for (const SkippedFile& file : trace.skipped) {
    if (file.rank >= 0) files.push_back(file.path);
  }
  return files;
}

// Writes `text` to `output` ("" for stdout). Write errors, stdout's included (a full disk, a
// closed pipe), are reported and give exit status 2: a report that silently went nowhere would
// read as success.
int WriteOutput(const std::string& text, const std::string& output,
                const std::vector<std::string>& inputs = {}) {
  if (output.empty()) {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
        std::fflush(stdout) != 0) {
      return WriteError("standard output", errno);
    }
    return kExitOk;
  }
  if (std::string input = InputAt(output, inputs); !input.empty()) {
    std::fprintf(stderr,
                 "fr-analyze: refusing to write the output to %s: it is the input file %s\n",
                 output.c_str(), input.c_str());
    return kExitUsage;
  }
  std::FILE* file = std::fopen(output.c_str(), "wb");
  if (file == nullptr) return WriteError(output, errno);
  bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int error = errno;
  if (std::fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) return WriteError(output, error);
  return kExitOk;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

enum class Mode { kAnalyze, kLoad, kEntries };


int RunAnalyze(Args& args, Mode mode) {
  std::string path;
  std::string format = "text";
  std::string output;
  LoadOptions options;
  AnalyzeOptions analyze;
  EntriesViewOptions entries;
  bool timings = false;
  bool follow_links = false;
  while (!args.empty()) {
    bool missing = false;
    int64_t number = 0;
    if (args.Peek() == "--allow-incomplete-ranks") {
      args.Next();  // incomplete jobs are always analysed; missing ranks become evidence
    } else if (auto v = args.Flag({"--format"}, &missing)) {
      format = *v;
    } else if (auto v = args.Flag({"--pg-filter", "--pg-filters"}, &missing)) {
      for (const std::string& name : SplitList(*v)) {
        analyze.pg_filter.push_back(name);
        entries.pg_filter.push_back(name);
      }
    } else if (auto v = args.Flag({"--ranks", "--selected-ranks"}, &missing)) {
      for (const std::string& item : SplitList(*v)) {
        if (!ParseInt(item, &number, 0, std::numeric_limits<int32_t>::max())) {
          return UsageError("--ranks needs rank numbers");
        }
        entries.ranks.push_back(number);
      }
    } else if (auto v = args.Flag({"--last"}, &missing)) {
      if (!ParseInt(*v, &number, 1, std::numeric_limits<int32_t>::max())) {
        return UsageError("--last needs a number from 1");
      }
      entries.last_seqs = static_cast<int>(number);
    } else if (args.Peek() == "--timings") {
      args.Next();
      timings = true;
    } else if (args.Peek() == "--follow-links") {
      args.Next();
      follow_links = true;
    } else if (auto v = args.Flag({"--dump-time"}, &missing)) {
      if (!ParseInt(*v, &number, 0)) {
        return UsageError(fmt::format("--dump-time needs nanoseconds since the epoch, 0 to {}",
                                      std::numeric_limits<int64_t>::max()));
      }
      analyze.dump_time_ns = number;
    } else if (auto v = args.Flag({"-o", "--output"}, &missing)) {
      output = *v;
    } else if (auto v = args.Flag({"-p", "--prefix"}, &missing)) {
      options.discover.prefix = *v;
    } else if (auto v = args.Flag({"--rank-pattern"}, &missing)) {
      options.discover.rank_pattern = *v;
    } else if (auto v = args.Flag({"-j", "--jobs"}, &missing)) {
      int64_t jobs;
      if (!ParseInt(*v, &jobs, 0, kMaxJobs)) {
        return UsageError(fmt::format("--jobs needs a number from 0 (all cores) to {}", kMaxJobs));
      }
      options.jobs = static_cast<int>(jobs);
    } else if (std::string error = args.TakePositional(missing, &path); !error.empty()) {
      return UsageError(error);
    }
  }
  if (path.empty()) return UsageError("a directory of dumps is needed");
  bool proto_ok = mode == Mode::kAnalyze || mode == Mode::kLoad;
  if (format != "text" && format != "json" && !(proto_ok && format == "proto")) {
    return UsageError(fmt::format("unknown format {}", format));
  }
  options.discover.follow_links_out_of_root = follow_links;
  // "-": one log pasted on standard input, and nothing else.
  bool from_stdin = path == "-" && mode == Mode::kAnalyze;
  absl::StatusOr<LoadedTrace> trace =
      from_stdin ? absl::StatusOr<LoadedTrace>(LoadedTrace()) : LoadTrace(path, options);
  if (!trace.ok()) {
    std::fprintf(stderr, "fr-analyze: %s\n", std::string(trace.status().message()).c_str());
    return kExitUsage;
  }
  LogSet logs;
  if (from_stdin) {
    // Read in bounded chunks: memory stays bounded by the events kept, however much is piped.
    if (absl::Status parsed = ParseLogStream("-", stdin, &logs); !parsed.ok()) {
      std::fprintf(stderr, "fr-analyze: standard input: %s\n",
                   std::string(parsed.message()).c_str());
      return kExitUsage;
    }
  } else if (mode == Mode::kAnalyze) {
    logs = ReadLogsBeside(*trace);
  }
  std::vector<std::string> inputs = FilesRead(*trace);
  for (const LogFile& file : logs.files) inputs.push_back(file.path);
  if (trace->ranks.empty() && (mode != Mode::kAnalyze || logs.files.empty())) {
    if (mode == Mode::kLoad) WriteOutput(FormatLoadSummaryText(*trace, path), output, inputs);
    std::fprintf(stderr, "fr-analyze: no readable flight-recorder dump under %s\n", path.c_str());
    for (const RejectedFile& file : trace->rejected) {
      std::fprintf(stderr, "  %s\n", file.error.c_str());
    }
    return kExitUsage;
  }
  if (mode == Mode::kLoad) {
    if (format == "text") return WriteOutput(FormatLoadSummaryText(*trace, path), output, inputs);
    if (format == "proto") {
      return WriteOutput(BuildLoadSummary(*trace, path).SerializeAsString(), output, inputs);
    }
    absl::StatusOr<std::string> json = FormatLoadSummaryJson(*trace, path);
    if (!json.ok()) {
      std::fprintf(stderr, "fr-analyze: %s\n", std::string(json.status().message()).c_str());
      return kExitUsage;
    }
    return WriteOutput(*json, output, inputs);
  }
  if (mode == Mode::kEntries) {
    return WriteOutput(FormatEntriesView(*trace, BuildJobIndex(*trace), entries), output, inputs);
  }
  analyze.source = path;
  auto analysis_started = std::chrono::steady_clock::now();
  report::Report report = Analyze(*trace, &logs, analyze);
  if (timings) {
    // On stderr, so that the report stays byte-for-byte deterministic.
    double analysis_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - analysis_started)
                             .count();
    const LoadTimings& t = trace->timings;
    std::fprintf(stderr,
                 "timings: discover %.1f ms; read %.1f ms, decode %.1f ms, normalize %.1f ms "
                 "(summed over threads); load wall %.1f ms; analysis %.1f ms\n",
                 t.discover_ns / 1e6, t.read_ns / 1e6, t.decode_ns / 1e6, t.normalize_ns / 1e6,
                 t.wall_ns / 1e6, analysis_ms);
  }
  std::string text;
  if (format == "json") {
    absl::StatusOr<std::string> json = FormatReportJson(report);
    if (!json.ok()) {
      std::fprintf(stderr, "fr-analyze: %s\n", std::string(json.status().message()).c_str());
      return kExitUsage;
    }
    text = *json + "\n";
  } else if (format == "proto") {
    text = FormatReportProto(report);
  } else {
    text = FormatReportText(report);
  }
  int status = WriteOutput(text, output, inputs);
  if (status != kExitOk) return status;
  return IsFailure(report) ? kExitFailureFound : kExitOk;
}

int RunDump(Args& args) {
  std::string path;
  std::string format = "json";
  std::string output;
  while (!args.empty()) {
    bool missing = false;
    if (auto v = args.Flag({"--format"}, &missing)) {
      format = *v;
    } else if (auto v = args.Flag({"-o", "--output"}, &missing)) {
      output = *v;
    } else if (std::string error = args.TakePositional(missing, &path); !error.empty()) {
      return UsageError(error);
    }
  }
  if (path.empty()) return UsageError("dump needs a file");
  if (format != "json") return UsageError(fmt::format("unknown format {} (json)", format));
  absl::StatusOr<InputFile> input = ReadInputFile(path);
  absl::StatusOr<Document> document = absl::UnknownError("");
  if (input.ok()) {
    document = DecodeForPrinting(*input);
  }
  const absl::Status& status = !input.ok() ? input.status() : document.status();
  if (!status.ok()) {
    std::fprintf(stderr, "fr-analyze: %s: %s\n", path.c_str(),
                 std::string(status.message()).c_str());
    return kExitUsage;
  }
  std::string text = WriteLogicalJson(*document);
  text += '\n';
  return WriteOutput(text, output, {path});
}

int RunExample(Args& args) {
  std::string directory;
  ExampleJobOptions options;
  options.stuck_rank = 5;
  while (!args.empty()) {
    bool missing = false;
    int64_t number = 0;
    if (auto v = args.Flag({"--world-size"}, &missing)) {
      if (!ParseInt(*v, &number, 1, kMaxSimulatedRanks)) {
        return UsageError(
            fmt::format("--world-size needs a number from 1 to {}", kMaxSimulatedRanks));
      }
      options.world_size = number;
    } else if (auto v = args.Flag({"--entries"}, &missing)) {
      if (!ParseInt(*v, &number, 1, kMaxExampleEntries)) {
        return UsageError(fmt::format("--entries needs a number from 1 to {}", kMaxExampleEntries));
      }
      options.entries_per_rank = number;
    } else if (auto v = args.Flag({"--stuck-rank"}, &missing)) {
      if (!ParseInt(*v, &number, -1, kMaxSimulatedRanks)) {
        return UsageError("--stuck-rank needs a rank, or -1 for none");
      }
      options.stuck_rank = number;
    } else if (auto v = args.Flag({"--dump-version"}, &missing)) {
      options.version = *v;
    } else if (std::string error = args.TakePositional(missing, &directory); !error.empty()) {
      return UsageError(error);
    }
  }
  if (directory.empty()) return UsageError("example needs an output directory");
  if (options.world_size * options.entries_per_rank > kMaxSimulatedRecords) {
    return UsageError(
        fmt::format("--world-size times --entries is at most {} (entries held in "
                    "memory at once)",
                    kMaxSimulatedRecords));
  }
  if (options.world_size % options.tensor_parallel != 0) options.tensor_parallel = 1;
  absl::StatusOr<uint64_t> written = WriteExampleJob(options, directory);
  if (!written.ok()) {
    std::fprintf(stderr, "fr-analyze: %s\n", std::string(written.status().message()).c_str());
    return kExitUsage;
  }
  std::printf("wrote %lld ranks' dumps (%llu bytes) to %s\n",
              static_cast<long long>(options.world_size), static_cast<unsigned long long>(*written),
              directory.c_str());
  return kExitOk;
}

int RunSimulate(Args& args) {
  std::string directory;
  JobSimulatorOptions options;
  options.steps = 16;
  options.fault.kind = FaultKind::kStuckBeforeOp;
  options.fault.rank = 5;
  options.fault.step = 12;
  JobWriteOptions write;
  while (!args.empty()) {
    bool missing = false;
    int64_t number = 0;
    struct NumberFlag {
      std::string_view name;
      int64_t* target;
      int64_t min;
      int64_t max;
    };
    const NumberFlag number_flags[] = {
        {"--tp", &options.tensor_parallel, 1, kMaxSimulatedRanks},
        {"--pp", &options.pipeline_parallel, 1, kMaxSimulatedRanks},
        {"--dp", &options.data_parallel, 1, kMaxSimulatedRanks},
        {"--steps", &options.steps, 1, kMaxSimulatedSteps},
        {"--fault-rank", &options.fault.rank, 0, kMaxSimulatedRanks - 1},
        {"--fault-step", &options.fault.step, 0, kMaxSimulatedSteps - 1},
        {"--buffer", &options.buffer_size, 1, kMaxRingBuffer}};
    const NumberFlag* matched = nullptr;
    std::optional<std::string> value;
    for (const NumberFlag& flag : number_flags) {
      if ((value = args.Flag({flag.name}, &missing))) {
        matched = &flag;
        break;
      }
    }
    if (matched != nullptr) {
      if (!ParseInt(*value, &number, matched->min, matched->max)) {
        return UsageError(fmt::format("{} needs a number from {} to {}", matched->name,
                                      matched->min, matched->max));
      }
      *matched->target = number;
      continue;
    }
    if (args.Peek() == "--no-timing") {
      args.Next();
      options.timing = false;
    } else if (args.Peek() == "--json") {
      args.Next();
      write.encoding = DumpEncoding::kJson;
    } else if (auto v = args.Flag({"--fault"}, &missing)) {
      bool known = false;
      for (int k = 0; k <= static_cast<int>(FaultKind::kStraggler); ++k) {
        if (FaultKindName(static_cast<FaultKind>(k)) == *v) {
          options.fault.kind = static_cast<FaultKind>(k);
          known = true;
        }
      }
      if (!known) return UsageError(fmt::format("unknown fault {}", *v));
    } else if (auto v = args.Flag({"--fault-group"}, &missing)) {
      if (*v == "world") {
        options.fault.group = GroupKind::kWorld;
      } else if (*v == "tp") {
        options.fault.group = GroupKind::kTensor;
      } else if (*v == "pp") {
        options.fault.group = GroupKind::kPipeline;
      } else if (*v == "dp") {
        options.fault.group = GroupKind::kData;
      } else {
        return UsageError(fmt::format("unknown group kind {}", *v));
      }
    } else if (std::string error = args.TakePositional(missing, &directory); !error.empty()) {
      return UsageError(error);
    }
  }
  if (directory.empty()) return UsageError("simulate needs an output directory");
  // Each factor is at most kMaxSimulatedRanks, so the products cannot overflow.
  int64_t world = options.tensor_parallel * options.pipeline_parallel * options.data_parallel;
  if (world > kMaxSimulatedRanks) {
    return UsageError(
        fmt::format("--tp x --pp x --dp is {} ranks; at most {}", world, kMaxSimulatedRanks));
  }
  if (world * options.buffer_size > kMaxSimulatedRecords ||
      world * options.steps > kMaxSimulatedRecords) {
    return UsageError(fmt::format(
        "ranks times --buffer and ranks times --steps are at most {} (records held in memory at "
        "once)",
        kMaxSimulatedRecords));
  }
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  if (!job.ok()) {
    std::fprintf(stderr, "fr-analyze: %s\n", std::string(job.status().message()).c_str());
    return kExitUsage;
  }
  absl::StatusOr<JobWriteStats> written = WriteSimulatedJob(*job, directory, write);
  if (!written.ok()) {
    std::fprintf(stderr, "fr-analyze: %s\n", std::string(written.status().message()).c_str());
    return kExitUsage;
  }
  const GroundTruth& truth = job->ground_truth();
  std::printf(
      "wrote %lld dumps (%llu bytes) to %s\ninjected: %s\nexpected verdict: %s, culprits [%s]\n",
      static_cast<long long>(written->files),
      static_cast<unsigned long long>(written->bytes_written), directory.c_str(),
      truth.description.c_str(), truth.failure_class.c_str(),
      fmt::format("{}", fmt::join(truth.culprit_ranks, ",")).c_str());
  return kExitOk;
}

int Main(int argc, char** argv) {
  Args args(argc, argv);
  if (args.empty()) return UsageError("no directory given");
  std::string_view first = args.Peek();
  if (first == "-h" || first == "--help" || first == "help") {
    std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
    return kExitOk;
  }
  if (first == "dump") {
    args.Next();
    return RunDump(args);
  }
  if (first == "example") {
    args.Next();
    return RunExample(args);
  }
  if (first == "simulate") {
    args.Next();
    return RunSimulate(args);
  }
  if (first == "load") {
    args.Next();
    return RunAnalyze(args, Mode::kLoad);
  }
  if (first == "entries") {
    args.Next();
    return RunAnalyze(args, Mode::kEntries);
  }
  if (first == "analyze") args.Next();
  return RunAnalyze(args, Mode::kAnalyze);
}

}  // namespace
}  // namespace fr

int main(int argc, char** argv) {
  int status = fr::Main(argc, argv);
  // Whatever a subcommand printed must have reached stdout (`fr-analyze example DIR > /dev/full`).
  // Status 2 has already said what went wrong.
  if (status != 2 && (std::fflush(stdout) != 0 || std::ferror(stdout))) {
    std::fprintf(stderr, "fr-analyze: cannot write to standard output: %s\n", std::strerror(errno));
    return 2;
  }
  return status;
}
