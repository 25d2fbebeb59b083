// fr-analyze: the command line. Each subcommand is a table of flags (tools/cli_flags.h) that both
// parses its arguments and writes its help; `fr-analyze COMMAND --help` shows it.
//
//   fr-analyze DIR                       the verdict (= fr-analyze analyze DIR)
//   fr-analyze analyze -                 one log pasted on standard input
//   fr-analyze load DIR                  what was loaded
//   fr-analyze entries DIR               ranks side by side by group and seq (= analyze -j DIR)
//   fr-analyze dump FILE                 one decoded dump, as Python's pickle.load sees it
//   fr-analyze timeline DIR -o F         a Perfetto trace of every rank's ops and log events
//   fr-analyze report DIR -o F.html      the self-contained HTML report
//   fr-analyze example DIR               write a small simulated job's dumps
//   fr-analyze simulate DIR              simulate a TP x PP x DP job with one fault
//   fr-analyze --help | help [COMMAND] | --version | version
//
// Exit status: 0 no failure found, 1 a failure verdict, 2 usage errors, nothing readable or output
// that could not be written. Output on stdout; errors on stderr.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli_flags.h"
#include "dask_load.h"
#include "fmt/format.h"
#include "fr/base/utf8.h"
#include "fr/fr_analyze.h"
// Test tooling, for `fr-analyze simulate` and `example` only.
#include "fr/simulate/example_job.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "fr/write/dump_writer.h"
#include "headline_color.h"
#include "python_helper.h"

#ifndef FR_ANALYZE_VERSION
#error "tools/CMakeLists.txt defines FR_ANALYZE_VERSION from python/fr_analyze/__init__.py"
#endif

namespace fr {
namespace {

using cli::Command;
using cli::ParseOutcome;
using cli::ParseResult;

constexpr int kExitOk = 0;
constexpr int kExitFailureFound = 1;
constexpr int kExitUsage = 2;

// Bounds on what the command line accepts, so that a typo cannot ask for unbounded threads or
// memory.
constexpr int64_t kMaxJobs = 1024;
constexpr int64_t kMaxSimulatedRanks = 131072;
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

// An earlier run's report (`-o DIR/report.txt` again): an input that may be replaced.
bool IsOwnReportFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return IsOwnReport(head);
}

// Writes `text` to `output` ("" for stdout). Write errors, stdout's included (a full disk, a
// closed pipe), are reported and give exit status 2: a report that silently went nowhere would
// read as success.
// Writes what `produce` hands its sink, piece by piece, to `output` ("" for stdout): an output
// too large to hold whole (a Perfetto trace of thousands of ranks) never is.
int WriteOutputStreamed(const std::function<void(const TraceSink&)>& produce,
                        const std::string& output, const std::vector<std::string>& inputs = {}) {
  std::FILE* file = stdout;
  if (!output.empty()) {
    if (std::string input = InputAt(output, inputs); !input.empty() && !IsOwnReportFile(output)) {
      std::fprintf(stderr,
                   "fr-analyze: refusing to write the output to %s: it is the input file %s\n",
                   output.c_str(), input.c_str());
      return kExitUsage;
    }
    file = std::fopen(output.c_str(), "wb");
    if (file == nullptr) return WriteError(output, errno);
  }
  bool written = true;
  int error = 0;
  produce([&](std::string_view bytes) {
    if (written && std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
      written = false;
      error = errno;
    }
  });
  if (std::fflush(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (file != stdout && std::fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) return WriteError(output.empty() ? "standard output" : output, error);
  return kExitOk;
}

int WriteOutput(const std::string& text, const std::string& output,
                const std::vector<std::string>& inputs = {}) {
  return WriteOutputStreamed([&](const TraceSink& sink) { sink(text); }, output, inputs);
}

// The overview: `fr-analyze --help`, and what a usage error outside any command shows.
std::string Overview(std::span<const Command* const> all) {
  return fmt::format(
      "usage: fr-analyze [COMMAND] DIR [options]\n"
      "\n"
      "Which rank broke a PyTorch job, and why, from its flight-recorder dumps and logs.\n"
      "With no COMMAND, DIR is analysed: fr-analyze DIR = fr-analyze analyze DIR.\n"
      "\n"
      "commands:\n"
      "{}{}{}"
      "\n"
      "`fr-analyze COMMAND --help` lists a command's options.\n"
      "Exit status: 0 no failure found, 1 a failure verdict, 2 usage errors, nothing readable\n"
      "or output that could not be written. Output on stdout; errors on stderr.\n",
      cli::FormatCommandList(all),
      cli::FormatHelpRow("help [COMMAND]", "this overview, or a command's options"),
      cli::FormatHelpRow("version", "the version (also --version)"));
}

// Says what is wrong, then the usage of `command` (the overview when null), on stderr.
int UsageError(const Command* command, std::string_view message,
               std::span<const Command* const> all = {}) {
  std::string usage = command != nullptr ? cli::FormatCommandHelp(*command) : Overview(all);
  std::fprintf(stderr, "fr-analyze: %.*s\n\n%s", static_cast<int>(message.size()), message.data(),
               usage.c_str());
  return kExitUsage;
}

enum class Mode { kAnalyze, kLoad, kEntries, kTimeline, kHtml };

// What `analyze`, `load` and `entries` are told; each command fills its own copy, through the
// flags its table has.
struct TraceArgs {
  std::string format = "text";
  std::string output;
  std::string prefix;
  std::string rank_pattern;
  int64_t jobs = 0;
  bool follow_links = false;
  std::string dask;  // the scheduler's address: read the dumps on that Dask cluster
  std::vector<std::string> pg_filter;
  // analyze
  int64_t dump_time_ns = kUnknown;
  int64_t stacks_stalled_ns = kStalledSpanNs;  // live --stall
  bool timings = false;
  std::string color = "auto";
  std::string post_url;  // record the folder into a console (`fr-analyze serve`) as well
  // entries
  std::vector<int64_t> ranks;
  int64_t last_seqs = EntriesViewOptions().last_seqs;
  // Accepted for torchfrtrace's sake; they change nothing (see their help).
  bool allow_incomplete_ranks = false;
  bool print_stack_trace = false;
  bool just_print_entries = false;
};

// The flags analyze, load and entries share, in the order help lists them.
cli::Flag FormatFlag(std::vector<std::string_view> formats, TraceArgs* args) {
  return cli::Choice({"--format"}, "format", std::move(formats), "output format (default text)",
                     &args->format);
}
cli::Flag OutputFlag(std::string* output) {
  return cli::String({"-o", "--output"}, "FILE", "write to FILE instead of stdout", output);
}
// `just_print_entries`: the command also has torchfrtrace's -j switch, which help then explains.
std::vector<cli::Flag> DiscoveryFlags(TraceArgs* args, bool just_print_entries = false) {
  return {
      cli::String({"-p", "--prefix"}, "PREFIX", "dump files are named PREFIX<rank>", &args->prefix),
      cli::String({"--rank-pattern"}, "REGEX",
                  "regex (RE2 syntax) with one group capturing the rank,\n"
                  "matched against the path relative to DIR",
                  &args->rank_pattern),
      cli::Int({"-j", "--jobs"}, "N", 0, kMaxJobs,
               just_print_entries ? "threads for reading, decoding and analysis (default 0: all\n"
                                    "cores); -j takes a number only: -j alone is\n"
                                    "--just_print_entries"
                                  : "threads for reading, decoding and analysis (default 0: all\n"
                                    "cores)",
               &args->jobs),
      cli::Switch({"--follow-links"}, "follow symlinks that lead out of DIR (default: skip them)",
                  &args->follow_links),
      cli::String({"--dask"}, "ADDR",
                  "read the dumps on the Dask cluster at ADDR (tcp://host:8786);\n"
                  "its workers must see DIR at the same path. Runs python3 -m\n"
                  "fr_analyze._dask (FR_ANALYZE_PYTHON: another python)",
                  &args->dask),
  };
}
cli::Flag PgFilterFlag(TraceArgs* args, std::string_view help) {
  return cli::StringList({"--pg-filter", "--pg-filters"}, "NAME[,NAME]", help, &args->pg_filter);
}
cli::Flag DumpTimeFlag(TraceArgs* args) {
  return cli::Int({"--dump-time"}, "NS", 0, std::numeric_limits<int64_t>::max(),
                  "when the dumps were taken (ns since the epoch);\n"
                  "default: the files' modification times",
                  &args->dump_time_ns);
}
cli::Flag AllowIncompleteFlag(TraceArgs* args) {
  return cli::Switch({"--allow-incomplete-ranks"},
                     "accepted for torchfrtrace compatibility: missing ranks are\n"
                     "always analysed, as evidence",
                     &args->allow_incomplete_ranks);
}

Command AnalyzeCommand(TraceArgs* args) {
  Command command{
      .name = "analyze",
      .positional = "DIR",
      .summary = "which rank broke the job, and why (the default command)",
      .details =
          "DIR (or one file) may hold flight-recorder dumps and the job's logs (torchrun, Slurm,\n"
          "glog, NCCL, kernel), recognized by content. DIR \"-\" reads one log pasted on standard\n"
          "input, alone. The text report's headline is coloured on a terminal (see --color).",
      .other_usages = {"fr-analyze DIR [options]", "fr-analyze analyze - < job.log"},
  };
  command.flags = {FormatFlag({"text", "json", "proto"}, args), OutputFlag(&args->output)};
  for (cli::Flag& flag : DiscoveryFlags(args, /*just_print_entries=*/true))
    command.flags.push_back(std::move(flag));
  command.flags.push_back(PgFilterFlag(args,
                                       "report only these process groups (name or desc);\n"
                                       "matching still uses every group"));
  command.flags.push_back(DumpTimeFlag(args));
  command.flags.push_back(cli::Switch({"--timings"},
                                      "print time per stage (read, decode, index, match, verdict, "
                                      "report, output) and peak memory on stderr",
                                      &args->timings));
  command.flags.push_back(cli::Choice({"--color"}, "colour choice", {"auto", "always", "never"},
                                      "colour the text report's headline: auto (default) on a\n"
                                      "terminal unless NO_COLOR is set or -o is given; always\n"
                                      "(even with NO_COLOR or -o); never",
                                      &args->color));
  command.flags.push_back(cli::String({"--post"}, "URL",
                                      "also upload DIR to the console at URL (fr-analyze serve),\n"
                                      "which analyses and keeps it (FR_ANALYZE_CONSOLE_TOKEN: its\n"
                                      "token). Runs python3 -m fr_analyze.console._post",
                                      &args->post_url));
  command.flags.push_back(AllowIncompleteFlag(args));
  command.flags.push_back(cli::Switch({"--print_stack_trace"},
                                      "accepted for torchfrtrace compatibility: the report always\n"
                                      "shows the culprit's stack (and the majority's)",
                                      &args->print_stack_trace));
  command.flags.push_back(cli::Switch({"-j", "--just_print_entries"},
                                      "torchfrtrace's -j: print the ranks' entries side by side\n"
                                      "instead of a verdict; the same as `fr-analyze entries`,\n"
                                      "whose options then apply",
                                      &args->just_print_entries));
  return command;
}

Command LoadCommand(TraceArgs* args) {
  Command command{
      .name = "load",
      .positional = "DIR",
      .summary = "what was loaded: ranks, versions, groups, bad files",
  };
  command.flags = {FormatFlag({"text", "json", "proto"}, args), OutputFlag(&args->output)};
  for (cli::Flag& flag : DiscoveryFlags(args)) command.flags.push_back(std::move(flag));
  return command;
}

Command EntriesCommand(TraceArgs* args) {
  Command command{
      .name = "entries",
      .positional = "DIR",
      .summary = "ranks side by side, aligned by group and seq (= analyze -j)",
      .details = "What torchfrtrace -j (--just_print_entries) shows, one table per process group.",
      .other_usages = {"fr-analyze DIR -j [options]"},
  };
  command.flags = {FormatFlag({"text"}, args), OutputFlag(&args->output)};
  for (cli::Flag& flag : DiscoveryFlags(args, /*just_print_entries=*/true))
    command.flags.push_back(std::move(flag));
  command.flags.push_back(cli::IntList({"--ranks", "--selected-ranks"}, "R[,R]", 0,
                                       std::numeric_limits<int32_t>::max(),
                                       "columns: these ranks (default: a group's first 8);\n"
                                       "also as torchfrtrace writes it: --selected-ranks 3 17",
                                       &args->ranks));
  command.flags.push_back(PgFilterFlag(args, "show only these process groups (name or desc)"));
  command.flags.push_back(cli::Int({"--last"}, "N", 1, std::numeric_limits<int32_t>::max(),
                                   "rows per group: the newest N seqs (default 20)",
                                   &args->last_seqs));
  command.flags.push_back(AllowIncompleteFlag(args));
  command.flags.push_back(cli::Switch({"--print_stack_trace"},
                                      "accepted for torchfrtrace compatibility; entries shows no\n"
                                      "stacks (`fr-analyze dump FILE` has every entry's frames)",
                                      &args->print_stack_trace));
  command.flags.push_back(cli::Switch({"-j", "--just_print_entries"},
                                      "accepted: entries is what it asks for",
                                      &args->just_print_entries));
  return command;
}

// The flags `timeline` and `report` share: they analyse as `analyze` does (dumps and the logs
// beside them), then draw.
void AddPictureFlags(TraceArgs* args, Command* command) {
  command->flags.push_back(OutputFlag(&args->output));
  for (cli::Flag& flag : DiscoveryFlags(args)) command->flags.push_back(std::move(flag));
  command->flags.push_back(DumpTimeFlag(args));
}

Command TimelineCommand(TraceArgs* args) {
  Command command{
      .name = "timeline",
      .positional = "DIR",
      .summary = "a Perfetto trace: every rank's ops and log events on one clock",
      .details =
          "One process track per host, one thread track per rank, a slice per recorded op, an\n"
          "instant per log event, flows from each victim to the rank it waits for. Opens in\n"
          "ui.perfetto.dev; --format chrome-json writes Chrome's trace-event JSON instead.",
      .other_usages = {"fr-analyze timeline DIR -o job.perfetto-trace"},
  };
  args->format = "perfetto";
  command.flags = {FormatFlag({"perfetto", "chrome-json"}, args)};
  command.flags.front().help = "perfetto (default: the protobuf trace) or chrome-json";
  AddPictureFlags(args, &command);
  return command;
}

Command HtmlReportCommand(TraceArgs* args) {
  Command command{
      .name = "report",
      .positional = "DIR",
      .summary = "the self-contained HTML report (verdict, wait graph, timeline, stacks)",
      .details =
          "One file that opens offline: no network, no scripts. The verdict and root cause first,\n"
          "the wait-for graph, a timeline of the window around the failure, the process groups\n"
          "with problems, the findings with their stacks on click.",
      .other_usages = {"fr-analyze report DIR -o report.html"},
  };
  AddPictureFlags(args, &command);
  return command;
}

struct LiveArgs {
  TraceArgs trace;
  std::string save;
  int64_t world_size = 0;
  int64_t timeout_s = 10;
  std::string host_map;
  int64_t watch_s = 0;
  int64_t stall_s = kStalledSpanNs / 1'000'000'000;
  std::string html;
};

Command LiveCommand(LiveArgs* args) {
  Command command{
      .name = "live",
      .positional = "HOST:PORT",
      .summary = "diagnose a job that still hangs, through PyTorch's debug server",
      .details =
          "HOST:PORT is the job's MASTER_ADDR:MASTER_PORT (its TCPStore). Every rank must have\n"
          "called torch.distributed.debug.start_debug_server(). Each rank's flight recorder and\n"
          "Python stacks are fetched (read-only handlers, bounded responses) and analysed as a\n"
          "dump directory: the verdict, and every rank's main thread grouped by identical stacks.\n"
          "Runs python3 -m fr_analyze._live (FR_ANALYZE_PYTHON: another python; it needs torch).\n"
          "The server has no authentication: use it on trusted networks only.",
      .other_usages = {"fr-analyze live node0:29500 --watch 10 --save live/"},
  };
  command.flags = {FormatFlag({"text", "json", "proto"}, &args->trace),
                   OutputFlag(&args->trace.output)};
  command.flags.push_back(cli::String({"--save"}, "DIR",
                                      "keep what was fetched in DIR (rank_<N>.json, stacks_<time>\n"
                                      ".txt): `fr-analyze DIR` gives the same answer offline",
                                      &args->save));
  command.flags.push_back(cli::Int({"--world-size"}, "N", 1, std::numeric_limits<int32_t>::max(),
                                   "ranks to fetch (default: every rank<N> key in the store)",
                                   &args->world_size));
  command.flags.push_back(cli::Int({"--timeout"}, "S", 1, 3600,
                                   "seconds to wait for each rank's answer (default 10)",
                                   &args->timeout_s));
  command.flags.push_back(cli::String({"--host-map"}, "NAME=ADDR[,...]",
                                      "reach the worker registered as http://NAME:port at ADDR;\n"
                                      "a name that does not resolve here is replaced by HOST",
                                      &args->host_map));
  command.flags.push_back(cli::Int({"--watch"}, "SECONDS", 1, 86400,
                                   "poll every SECONDS: one line per poll (per group: the newest\n"
                                   "seq every member reached, who is behind); print the verdict\n"
                                   "once the job is found stuck, then exit (Ctrl-C: stop)",
                                   &args->watch_s));
  command.flags.push_back(cli::Int({"--stall"}, "SECONDS", 1, 86400,
                                   "how long a rank's stack must stay outside communication while\n"
                                   "its peers wait before it is named from the stacks alone\n"
                                   "(default 10)",
                                   &args->stall_s));
  command.flags.push_back(cli::String(
      {"--report"}, "FILE", "also write the HTML report of what was fetched to FILE", &args->html));
  return command;
}

struct DumpArgs {
  std::string format = "json";
  std::string output;
};

Command ServeCommand() {
  return Command{
      .name = "serve",
      .positional = "",
      .summary = "the diagnosis console: a web page and API that keep every analysis",
      .details =
          "Paste a log or drop a job's folder or archive in a browser; every analysis is kept\n"
          "(SQLite under --data, or PostgreSQL with --db) with a history and a fleet view.\n"
          "Binds 127.0.0.1:8080 by default. Runs python3 -m fr_analyze.console\n"
          "(FR_ANALYZE_PYTHON: another python), which needs the console extra:\n"
          "pip install 'fr-analyze[console]'. Its options: fr-analyze serve --help.",
      .other_usages = {"fr-analyze serve --port 8080 --data /srv/fr-console",
                       "fr-analyze serve --db postgresql://fr@dbhost/fr --token SECRET"},
  };
}

// `fr-analyze serve ...`: the console is Python (an ASGI app); its own parser reads the words.
int RunServe(std::span<const std::string> words) {
  std::vector<std::string> argv = {HelperPython(), "-m", "fr_analyze.console"};
  argv.insert(argv.end(), words.begin(), words.end());
  absl::StatusOr<int> status = RunIsolatedPython(argv, "serve", "fr_analyze[console]");
  if (!status.ok()) {
    std::fprintf(stderr, "fr-analyze: %s\n", std::string(status.status().message()).c_str());
    return kExitUsage;
  }
  return *status;
}

// `analyze DIR --post URL`: after the report, the folder goes to the console, which keeps it.
int PostToConsole(const std::string& url, const std::string& path) {
  std::vector<std::string> argv = {HelperPython(), "-m", "fr_analyze.console._post", url,
                                   AbsoluteInputPath(path)};
  absl::StatusOr<int> status = RunIsolatedPython(argv, "--post", "fr_analyze");
  if (!status.ok()) {
    std::fprintf(stderr, "fr-analyze: %s\n", std::string(status.status().message()).c_str());
    return kExitUsage;
  }
  return *status == 0 ? kExitOk : kExitUsage;
}

Command DumpCommand(DumpArgs* args) {
  return Command{
      .name = "dump",
      .positional = "FILE",
      .summary = "print one decoded dump as JSON (what pickle.load gives)",
      .flags = {cli::Choice({"--format"}, "format", {"json"}, "output format (only json)",
                            &args->format),
                OutputFlag(&args->output)},
  };
}

Command ExampleCommand(ExampleJobOptions* options) {
  return Command{
      .name = "example",
      .positional = "DIR",
      .summary = "write the dumps of a small simulated job into DIR",
      .flags =
          {
              cli::Int({"--world-size"}, "N", 1, kMaxSimulatedRanks, "ranks (default 8)",
                       &options->world_size),
              cli::Int({"--entries"}, "N", 1, kMaxExampleEntries,
                       "ring-buffer entries per rank (default 64)", &options->entries_per_rank),
              cli::Int({"--stuck-rank"}, "R", -1, kMaxSimulatedRanks,
                       "a rank that never reaches the last all_reduce (default 5;\n"
                       "-1 for a healthy job)",
                       &options->stuck_rank),
              cli::String({"--dump-version"}, "V", "dump version to write (default 2.10)",
                          &options->version),
          },
  };
}

struct SimulateArgs {
  JobSimulatorOptions options;
  std::string fault;
  std::string fault_group = "dp";
  bool no_timing = false;
  bool json = false;
  bool zstd = false;
  std::vector<std::string_view> fault_names;
  std::string fault_help;
};

Command SimulateCommand(SimulateArgs* args) {
  JobSimulatorOptions& options = args->options;
  options.steps = 16;
  options.fault.kind = FaultKind::kStuckBeforeOp;
  options.fault.rank = 5;
  // -1 until --fault-step is given; then RunSimulate picks the default step.
  options.fault.step = -1;
  for (int k = 0; k <= static_cast<int>(FaultKind::kStraggler); ++k) {
    args->fault_names.push_back(FaultKindName(static_cast<FaultKind>(k)));
  }
  args->fault = FaultKindName(options.fault.kind);
  args->fault_help =
      fmt::format("the fault (default {}): {}", args->fault, fmt::join(args->fault_names, ", "));
  cli::Flag fault =
      cli::Choice({"--fault"}, "fault", args->fault_names, args->fault_help, &args->fault);
  fault.value_name = "KIND";
  return Command{
      .name = "simulate",
      .positional = "DIR",
      .summary = "simulate a TP x PP x DP job with one fault, write its dumps",
      .details = "Prints the fault injected and the verdict expected; at most 131072 ranks.",
      .flags =
          {
              cli::Int({"--tp"}, "N", 1, kMaxSimulatedRanks, "tensor-parallel size (default 2)",
                       &options.tensor_parallel),
              cli::Int({"--pp"}, "N", 1, kMaxSimulatedRanks, "pipeline-parallel size (default 2)",
                       &options.pipeline_parallel),
              cli::Int({"--dp"}, "N", 1, kMaxSimulatedRanks, "data-parallel size (default 2)",
                       &options.data_parallel),
              cli::Int({"--steps"}, "N", 1, kMaxSimulatedSteps, "training steps (default 16)",
                       &options.steps),
              std::move(fault),
              cli::Int({"--fault-rank"}, "R", 0, kMaxSimulatedRanks - 1,
                       "the rank the fault strikes (default 5)", &options.fault.rank),
              cli::Int({"--fault-step"}, "S", 0, kMaxSimulatedSteps - 1,
                       "the step it strikes at (default 12; on the world group the last\n"
                       "barrier step before it)",
                       &options.fault.step),
              cli::Choice({"--fault-group"}, "group kind", {"world", "tp", "pp", "dp"},
                          "the group of the faulty op (default dp)", &args->fault_group),
              cli::Switch({"--no-timing"}, "as without TORCH_NCCL_ENABLE_TIMING", &args->no_timing),
              cli::Int({"--buffer"}, "N", 1, kMaxRingBuffer, "ring-buffer entries (default 2000)",
                       &options.buffer_size),
              cli::Switch({"--json"}, "write the JSON variant instead of pickles", &args->json),
              cli::Switch({"--zstd"},
                          "compress each dump (<name>.zst), as users do when they copy them off\n"
                          "node-local disks; a 100k-rank job's dumps shrink about twentyfold",
                          &args->zstd),
          },
  };
}

int RunTrace(Mode mode, const TraceArgs& args, const std::string& given_path) {
  // On a Dask cluster the workers see the files at the same absolute paths, and the report names
  // them so.
  const std::string path = args.dask.empty() ? given_path : AbsoluteInputPath(given_path);
  LoadOptions options;
  options.discover.prefix = args.prefix;
  options.discover.rank_pattern = args.rank_pattern;
  options.discover.follow_links_out_of_root = args.follow_links;
  options.jobs = static_cast<int>(args.jobs);
  const std::string& output = args.output;
  const std::string& format = args.format;
  // "-": one log pasted on standard input, and nothing else.
  bool from_stdin = path == "-" && mode == Mode::kAnalyze;
  absl::StatusOr<LoadedTrace> trace = from_stdin ? absl::StatusOr<LoadedTrace>(LoadedTrace())
                                      : args.dask.empty()
                                          ? LoadTrace(path, options)
                                          : LoadTraceOnDask(path, options, args.dask);
  if (!trace.ok()) {
    std::fprintf(stderr, "fr-analyze: %s\n", std::string(trace.status().message()).c_str());
    return kExitUsage;
  }
  LogSet logs;
  auto logs_started = std::chrono::steady_clock::now();
  if (from_stdin) {
    // Read in bounded chunks: memory stays bounded by the events kept, however much is piped.
    if (absl::Status parsed = ParseLogStream(kPastedLogName, stdin, &logs); !parsed.ok()) {
      std::fprintf(stderr, "fr-analyze: standard input: %s\n",
                   std::string(parsed.message()).c_str());
      return kExitUsage;
    }
  } else if (mode == Mode::kAnalyze || mode == Mode::kTimeline || mode == Mode::kHtml) {
    logs = ReadLogsBeside(*trace);
  }
  auto logs_ended = std::chrono::steady_clock::now();
  // Live Python stacks beside the dumps (the debug server's snapshots, `live --save`).
  StackSnapshots stacks;
  if (!from_stdin && (mode == Mode::kAnalyze || mode == Mode::kTimeline || mode == Mode::kHtml)) {
    stacks = ReadStacksBeside(*trace);
  }
  std::vector<std::string> inputs = EvidencePaths(*trace);
  for (const LogFile& file : logs.files) inputs.push_back(file.path);
  for (const std::string& file : stacks.files) inputs.push_back(file);
  auto no_readable_dump = [&] {
    std::fprintf(stderr, "fr-analyze: no readable flight-recorder dump under %s\n", path.c_str());
    for (const RejectedFile& file : trace->rejected) {
      // Errors may quote a key from the file: never raw escapes on a terminal.
      std::fprintf(stderr, "  %s\n", TerminalSafe(file.error).c_str());
    }
    return kExitUsage;
  };
  if (trace->ranks.empty() &&
      (mode != Mode::kAnalyze || (logs.files.empty() && stacks.snapshots.empty()))) {
    if (mode == Mode::kLoad) WriteOutput(FormatLoadSummaryText(*trace, path), output, inputs);
    return no_readable_dump();
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
  if (mode == Mode::kTimeline || mode == Mode::kHtml) {
    if (output.empty() && mode == Mode::kTimeline && args.format == "perfetto" &&
        ::isatty(STDOUT_FILENO) == 1) {
      std::fprintf(stderr, "fr-analyze: a Perfetto trace is binary: give -o FILE\n");
      return kExitUsage;
    }
    AnalyzeOptions analyze;
    analyze.source = path;
    analyze.dump_time_ns = args.dump_time_ns;
    analyze.stacks_stalled_ns = args.stacks_stalled_ns;
    analyze.jobs = static_cast<int>(args.jobs);
    MonitorSnapshots monitor = ReadMonitorsBeside(*trace, path, &logs);
    analyze.monitors = &monitor;
    analyze.stacks = &stacks;
    Diagnosis diagnosis = Diagnose(*trace, &logs, analyze);
    const report::Report& report = diagnosis.report;
    Timeline timeline = BuildTimeline(*trace, logs, report, &monitor, analyze.jobs);
    int status =
        mode == Mode::kTimeline && args.format == "perfetto"
            ? WriteOutputStreamed(
                  [&](const TraceSink& sink) { WritePerfettoTrace(timeline, sink, analyze.jobs); },
                  output, inputs)
            : WriteOutput(mode == Mode::kHtml ? WriteHtmlReport(report, timeline)
                                              : WriteChromeTraceJson(timeline),
                          output, inputs);
    if (status != kExitOk) return status;
    return diagnosis.failed ? kExitFailureFound : kExitOk;
  }
  if (mode == Mode::kEntries) {
    EntriesViewOptions entries;
    entries.ranks = args.ranks;
    entries.pg_filter = args.pg_filter;
    entries.last_seqs = static_cast<int>(args.last_seqs);
    return WriteOutput(
        FormatEntriesView(*trace, BuildJobIndex(*trace, kUnknown, static_cast<int>(args.jobs)),
                          entries),
        output, inputs);
  }
  AnalyzeOptions analyze;
  analyze.source = path;
  analyze.dump_time_ns = args.dump_time_ns;
  analyze.pg_filter = args.pg_filter;
  analyze.stacks_stalled_ns = args.stacks_stalled_ns;
  analyze.jobs = static_cast<int>(args.jobs);
  MonitorSnapshots monitor = ReadMonitorsBeside(*trace, path, &logs);
  analyze.monitors = &monitor;
  analyze.stacks = &stacks;
  AnalyzeTimings stage_timings;
  if (args.timings) analyze.timings = &stage_timings;
  auto analysis_started = std::chrono::steady_clock::now();
  Diagnosis diagnosis = Diagnose(*trace, &logs, analyze);
  const report::Report& report = diagnosis.report;
  auto analysis_ended = std::chrono::steady_clock::now();
  // Dumps were there and none could be read: logs that show no failure do not make the job
  // healthy (the dumps may hold the failure), so this is the same error as without the logs.
  if (trace->ranks.empty() && !trace->rejected.empty() && !diagnosis.failed) {
    return no_readable_dump();
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
    if (cli::ShouldColor(args.color, output.empty() && ::isatty(STDOUT_FILENO) == 1)) {
      text = cli::ColorHeadline(text, diagnosis.failed);
    }
  }
  int status = WriteOutput(text, output, inputs);
  if (status != kExitOk) return status;
  if (args.timings) {
    // On stderr, so that the report stays byte-for-byte deterministic.
    auto ms = [](auto from, auto to) {
      return std::chrono::duration<double, std::milli>(to - from).count();
    };
    const AnalyzeTimings& a = stage_timings;
    double analysis_ms = ms(analysis_started, analysis_ended);
    double stages_ms = (a.index_ns + a.match_ns + a.verdict_ns + a.report_ns) / 1e6;
    const LoadTimings& t = trace->timings;
    // The most memory the process has held so far: the loaded dumps and the analysis together.
    struct rusage usage;
    double peak_mb = ::getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss / 1024.0 : -1;
    std::fprintf(
        stderr,
        "timings: discover %.1f ms; read %.1f ms, decode %.1f ms, normalize %.1f ms "
        "(summed over threads); load wall %.1f ms; logs %.1f ms; analysis %.1f ms "
        "(index %.1f, match "
        "%.1f, verdict %.1f, report %.1f, root cause and the rest %.1f); output %.1f ms; peak "
        "RSS %.0f MB\n",
        t.discover_ns / 1e6, t.read_ns / 1e6, t.decode_ns / 1e6, t.normalize_ns / 1e6,
        t.wall_ns / 1e6, ms(logs_started, logs_ended), analysis_ms, a.index_ns / 1e6,
        a.match_ns / 1e6, a.verdict_ns / 1e6, a.report_ns / 1e6,
        std::max(0.0, analysis_ms - stages_ms),
        ms(analysis_ended, std::chrono::steady_clock::now()), peak_mb);
  }
  if (!args.post_url.empty() && mode == Mode::kAnalyze) {
    if (path == "-") {
      std::fprintf(stderr, "fr-analyze: --post needs a folder or file, not a log on stdin\n");
      return kExitUsage;
    }
    if (int posted = PostToConsole(args.post_url, path); posted != kExitOk) return posted;
  }
  return diagnosis.failed ? kExitFailureFound : kExitOk;
}

volatile std::sig_atomic_t interrupted = 0;
void OnInterrupt(int) { interrupted = 1; }

// One line per --watch poll: per process group, the newest seq every member reached and who is
// behind it; then where the stacks say a rank has been.
std::string PollLine(int poll, const report::Report& report, const StackSnapshots& stacks) {
  std::vector<std::string> parts;
  int quiet_groups = 0;
  for (const report::ProcessGroupReport& group : report.process_groups()) {
    if (group.states_size() == 0) continue;
    int64_t reached = std::numeric_limits<int64_t>::max();
    for (const report::RankStateGroup& state : group.states()) {
      reached = std::min(reached, state.seq_id());
    }
    std::vector<std::string> behind;
    for (const report::RankStateGroup& state : group.states()) {
      if (state.seq_id() == reached && group.states_size() > 1)
        behind.push_back(state.ranks_text());
    }
    if (behind.empty()) {
      ++quiet_groups;
      continue;
    }
    std::string label = group.group().desc().empty() ? group.group().name() : group.group().desc();
    parts.push_back(fmt::format("{} {}: #{} reached, behind: {}", label, group.group().name(),
                                reached, fmt::join(behind, ",")));
  }
  if (parts.size() > 4) {
    size_t more = parts.size() - 4;
    parts.resize(4);
    parts.push_back(fmt::format("{} more groups with ranks behind", more));
  }
  if (quiet_groups > 0) parts.push_back(fmt::format("{} groups level", quiet_groups));
  StackJudgement judged = JudgeStacks(stacks);
  if (!judged.held_by.empty()) {
    parts.push_back(fmt::format(
        "rank(s) {} outside communication ({} snapshot(s), {:.0f} s)",
        fmt::join(judged.held_by, ","), judged.unchanged_snapshots,
        judged.unchanged_ns < 0 ? 0.0 : static_cast<double>(judged.unchanged_ns) / 1e9));
  }
  if (!judged.no_answer.empty()) {
    std::vector<int32_t> silent;
    for (const RankNoAnswer& rank : judged.no_answer) silent.push_back(rank.rank);
    parts.push_back(fmt::format("no answer: {}", fmt::join(silent, ",")));
  }
  return fmt::format(
      "poll {}: {}\n", poll,
      parts.empty() ? "nothing recorded yet" : fmt::format("{}", fmt::join(parts, "; ")));
}

// `fr-analyze live HOST:PORT`: fetch (the Python helper) into a folder, then analyse it as a dump
// directory; with --watch, poll until the job is found stuck.
int RunLive(LiveArgs& args, const std::string& master) {
  std::string dir = args.save;
  std::string temporary;
  std::error_code error;
  if (dir.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    temporary =
        fmt::format("{}/fr-analyze-live-XXXXXX", tmpdir != nullptr && *tmpdir ? tmpdir : "/tmp");
    if (::mkdtemp(temporary.data()) == nullptr) {
      std::fprintf(stderr, "fr-analyze: live: cannot create %s: %s\n", temporary.c_str(),
                   std::strerror(errno));
      return kExitUsage;
    }
    dir = temporary;
  } else if (std::filesystem::create_directories(dir, error); error) {
    std::fprintf(stderr, "fr-analyze: live: cannot create %s: %s\n", dir.c_str(),
                 error.message().c_str());
    return kExitUsage;
  }
  auto finish = [&](int status) {
    if (!temporary.empty()) std::filesystem::remove_all(temporary, error);
    return status;
  };
  args.trace.stacks_stalled_ns = args.stall_s * 1'000'000'000;
  std::vector<std::string> argv = {HelperPython(),
                                   "-m",
                                   "fr_analyze._live",
                                   "fetch",
                                   master,
                                   "--out",
                                   AbsoluteInputPath(dir),
                                   "--timeout",
                                   std::to_string(args.timeout_s)};
  if (args.world_size > 0) {
    argv.push_back("--world-size");
    argv.push_back(std::to_string(args.world_size));
  }
  if (!args.host_map.empty()) {
    argv.push_back("--host-map");
    argv.push_back(args.host_map);
  }
  if (args.watch_s > 0) {
    argv.push_back("--quiet");
    std::signal(SIGINT, OnInterrupt);
  }
  for (int poll = 1;; ++poll) {
    absl::StatusOr<int> fetched = RunIsolatedPython(argv, "live", "fr_analyze and torch");
    if (!fetched.ok()) {
      std::fprintf(stderr, "fr-analyze: %s\n", std::string(fetched.status().message()).c_str());
      return finish(kExitUsage);
    }
    if (interrupted) {
      // Ctrl-C reached the fetch too: the same word as between polls.
      std::fprintf(stderr, "fr-analyze: live: stopped; nothing stuck so far\n");
      return finish(130);
    }
    if (*fetched == 1) {
      // Python's own status when `-m` finds no fr_analyze (the helper itself exits 0, 2 or 3).
      std::fprintf(stderr,
                   "fr-analyze: live: %s cannot run fr_analyze._live: set FR_ANALYZE_PYTHON to a "
                   "python that has fr_analyze and torch (a source build: also "
                   "PYTHONPATH=<build>/python)\n",
                   argv[0].c_str());
    }
    if (*fetched != 0) return finish(kExitUsage);  // the helper said why
    bool stuck = args.watch_s == 0;
    if (!stuck) {
      absl::StatusOr<LoadedTrace> trace = LoadTrace(dir, LoadOptions());
      if (!trace.ok()) {
        std::fprintf(stderr, "fr-analyze: %s\n", std::string(trace.status().message()).c_str());
        return finish(kExitUsage);
      }
      StackSnapshots stacks = ReadStacksBeside(*trace);
      AnalyzeOptions analyze;
      analyze.source = dir;
      analyze.stacks = &stacks;
      analyze.stacks_stalled_ns = args.trace.stacks_stalled_ns;
      Diagnosis diagnosis = Diagnose(*trace, analyze);
      std::string line = PollLine(poll, diagnosis.report, stacks);
      std::fwrite(line.data(), 1, line.size(), stderr);
      stuck = diagnosis.failed;
    }
    if (stuck) {
      if (!args.html.empty()) {
        TraceArgs html = args.trace;
        html.output = args.html;
        int written = RunTrace(Mode::kHtml, html, dir);
        if (written == kExitUsage) return finish(written);
      }
      return finish(RunTrace(Mode::kAnalyze, args.trace, dir));
    }
    for (int64_t waited_ms = 0; waited_ms < args.watch_s * 1000 && !interrupted; waited_ms += 100) {
      ::usleep(100'000);
    }
    if (interrupted) {
      std::fprintf(stderr, "fr-analyze: live: stopped; nothing stuck so far\n");
      return finish(130);
    }
  }
}

int RunDump(const DumpArgs& args, const std::string& path) {
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
  return WriteOutput(text, args.output, {path});
}

int RunExample(const Command& command, ExampleJobOptions options, const std::string& directory) {
  if (directory.empty()) return UsageError(&command, "example needs an output directory");
  if (options.world_size * options.entries_per_rank > kMaxSimulatedRecords) {
    return UsageError(&command,
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

int RunSimulate(const Command& command, SimulateArgs& args, const std::string& directory) {
  if (directory.empty()) return UsageError(&command, "simulate needs an output directory");
  JobSimulatorOptions& options = args.options;
  for (int k = 0; k <= static_cast<int>(FaultKind::kStraggler); ++k) {
    if (FaultKindName(static_cast<FaultKind>(k)) == args.fault) {
      options.fault.kind = static_cast<FaultKind>(k);
    }
  }
  if (args.fault_group == "world") {
    options.fault.group = GroupKind::kWorld;
  } else if (args.fault_group == "tp") {
    options.fault.group = GroupKind::kTensor;
  } else if (args.fault_group == "pp") {
    options.fault.group = GroupKind::kPipeline;
  } else {
    options.fault.group = GroupKind::kData;
  }
  if (options.fault.step < 0) {
    // Step 12, or on a group without an op in every step (world: barriers only) the latest step
    // before it that has one.
    constexpr int64_t kDefaultFaultStep = 12;
    int64_t step = LatestStepWithOpOn(options, options.fault.group, kDefaultFaultStep);
    options.fault.step = step >= 0 ? step : kDefaultFaultStep;
  }
  if (args.no_timing) options.timing = false;
  JobWriteOptions write;
  if (args.json) write.encoding = DumpEncoding::kJson;
  if (args.zstd) write.compression = DumpCompression::kZstd;
  // Each factor is at most kMaxSimulatedRanks, so the products cannot overflow.
  int64_t world = options.tensor_parallel * options.pipeline_parallel * options.data_parallel;
  if (world > kMaxSimulatedRanks) {
    return UsageError(&command, fmt::format("--tp x --pp x --dp is {} ranks; at most {}", world,
                                            kMaxSimulatedRanks));
  }
  if (world * options.buffer_size > kMaxSimulatedRecords ||
      world * options.steps > kMaxSimulatedRecords) {
    return UsageError(
        &command,
        fmt::format("ranks times --buffer and ranks times --steps are at most {} (records held "
                    "in memory at once)",
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
  std::vector<std::string> args(argv + 1, argv + argc);
  // Every command's table is built up front, each over its own arguments, so that an error can
  // say which command a stray flag belongs to and the overview can list them all.
  TraceArgs analyze_args, load_args, entries_args, timeline_args, html_args;
  DumpArgs dump_args;
  ExampleJobOptions example_options;
  example_options.stuck_rank = 5;
  SimulateArgs simulate_args;
  const Command analyze = AnalyzeCommand(&analyze_args);
  const Command load = LoadCommand(&load_args);
  const Command entries = EntriesCommand(&entries_args);
  const Command dump = DumpCommand(&dump_args);
  const Command example = ExampleCommand(&example_options);
  const Command simulate = SimulateCommand(&simulate_args);
  const Command timeline = TimelineCommand(&timeline_args);
  const Command html = HtmlReportCommand(&html_args);
  LiveArgs live_args;
  const Command live = LiveCommand(&live_args);
  const Command serve = ServeCommand();
  const Command* const all[] = {&analyze, &load,  &entries, &timeline, &html,
                                &live,    &serve, &dump,    &example,  &simulate};
  auto find = [&all](std::string_view name) -> const Command* {
    for (const Command* command : all) {
      if (command->name == name) return command;
    }
    return nullptr;
  };

  if (args.empty()) return UsageError(nullptr, "no directory given", all);
  const std::string& first = args.front();
  if (first == "-h" || first == "--help" || first == "help") {
    if (first == "help" && args.size() > 1) {
      const Command* command = find(args[1]);
      if (command == nullptr || args.size() > 2) {
        return UsageError(nullptr, fmt::format("no command {}", args[1]), all);
      }
      std::string help = cli::FormatCommandHelp(*command);
      std::fwrite(help.data(), 1, help.size(), stdout);
      return kExitOk;
    }
    std::string overview = Overview(all);
    std::fwrite(overview.data(), 1, overview.size(), stdout);
    return kExitOk;
  }
  if (first == "--version" || first == "version") {
    std::printf("fr-analyze %s\n", FR_ANALYZE_VERSION);
    return kExitOk;
  }
  // Without a command word, the words are analyze's: `fr-analyze DIR [options]`.
  const Command* command = find(first);
  std::span<const std::string> rest(args);
  if (command != nullptr) {
    rest = rest.subspan(1);
  } else {
    command = &analyze;
  }
  if (command == &serve) return RunServe(rest);
  // torchfrtrace's -j (--just_print_entries) turns the analysis into the entries view; its words
  // are then entries', so that --selected-ranks and --last mean what they mean there.
  if (command == &analyze && cli::HasSwitch(analyze, "--just_print_entries", rest)) {
    command = &entries;
  }
  ParseResult parsed = cli::ParseFlags(*command, all, rest);
  if (parsed.outcome == ParseOutcome::kHelp) {
    std::string help = cli::FormatCommandHelp(*command);
    std::fwrite(help.data(), 1, help.size(), stdout);
    return kExitOk;
  }
  if (parsed.outcome == ParseOutcome::kError) return UsageError(command, parsed.error);
  const std::string& positional = parsed.positional;
  if (command == &dump) {
    if (positional.empty()) return UsageError(command, "dump needs a file");
    return RunDump(dump_args, positional);
  }
  if (command == &example) return RunExample(*command, example_options, positional);
  if (command == &simulate) return RunSimulate(*command, simulate_args, positional);
  if (command == &live) {
    if (positional.empty()) return UsageError(command, "live needs the job's HOST:PORT");
    return RunLive(live_args, positional);
  }
  if (positional.empty()) return UsageError(command, "a directory of dumps is needed");
  if (command == &load) return RunTrace(Mode::kLoad, load_args, positional);
  if (command == &entries) return RunTrace(Mode::kEntries, entries_args, positional);
  if (command == &timeline) return RunTrace(Mode::kTimeline, timeline_args, positional);
  if (command == &html) return RunTrace(Mode::kHtml, html_args, positional);
  return RunTrace(Mode::kAnalyze, analyze_args, positional);
}

}  // namespace
}  // namespace fr

int main(int argc, char** argv) {
  int status = 2;
  try {
    status = fr::Main(argc, argv);
  } catch (const std::bad_alloc&) {
    // Every file's load catches its own allocation failures (that file is rejected); this is
    // the rest of the run (the analysis of what was loaded) with no memory left.
    std::fprintf(stderr,
                 "fr-analyze: out of memory (the dumps loaded, the analysis did not fit)\n");
    return 2;
  }
  // Whatever a subcommand printed must have reached stdout (`fr-analyze example DIR > /dev/full`).
  // Status 2 has already said what went wrong.
  if (status != 2 && (std::fflush(stdout) != 0 || std::ferror(stdout))) {
    std::fprintf(stderr, "fr-analyze: cannot write to standard output: %s\n", std::strerror(errno));
    return 2;
  }
  return status;
}
