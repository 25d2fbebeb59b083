#include "fr/logs/log_parser.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "fr/base/buffer.h"
#include "fr/base/utf8.h"
#include "fr/logs/line_prefix.h"
#include "fr/logs/log_text.h"
#include "fr/logs/text_scan.h"
#include "fr/read/input_file.h"

namespace fr {
namespace {

using logs_internal::CivilToNs;
using logs_internal::ConsumeInt;
using logs_internal::ConsumeIsoTime;
using logs_internal::ConsumeLiteral;
using logs_internal::Contains;
using logs_internal::EndsWith;
using logs_internal::IntAfter;
using logs_internal::IsDigit;
using logs_internal::IsHex;
using logs_internal::IsIdentChar;
using logs_internal::kFormatCount;
using logs_internal::kFormatRay;
using logs_internal::kFormatText;
using logs_internal::LineFormat;
using logs_internal::LineFormatName;
using logs_internal::LinePrefix;
using logs_internal::MpiTagLength;
using logs_internal::ParseLinePrefix;
using logs_internal::SkipSpaces;
using logs_internal::SplitTeeCopies;
using logs_internal::StartsWith;
using logs_internal::Trim;
using logs_internal::TrimLeft;
using logs_internal::WithoutAnsiAndRepeats;
using logs_internal::WithoutRepeatedMpiTags;
using logs_internal::WordAfter;

constexpr size_t kMaxTextBytes = 512;
// Distinct writers (ranks) whose Python tracebacks are followed at once; a hostile file that
// names a new rank on every line cannot grow the map past this.
constexpr size_t kMaxTracebackWriters = 4096;
// Lines between the kernel's "oom-kill:" summary and its "Killed process" line that still count
// as the same kill.
constexpr int64_t kOomMergeLines = 64;

// Concatenation of string_views (Debian's Abseil StrCat takes absl::string_view, which is not
// std::string_view there).
std::string Cat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (std::string_view part : parts) out.append(part.data(), part.size());
  return out;
}

int32_t ToInt32(int64_t v) { return v < INT32_MIN || v > INT32_MAX ? -1 : static_cast<int32_t>(v); }

// At most kMaxTextBytes of `line`, as valid UTF-8, cut on a character boundary.
std::string EventText(std::string_view line) {
  std::string text = ValidUtf8(line.substr(0, kMaxTextBytes));
  if (text.size() > kMaxTextBytes) {
    size_t cut = kMaxTextBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
  }
  return text;
}

std::string LowerHex(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

int SignalFromName(std::string_view name) {
  static constexpr std::pair<std::string_view, int> kSignals[] = {
      {"SIGHUP", 1},   {"SIGINT", 2},   {"SIGQUIT", 3},  {"SIGILL", 4},   {"SIGTRAP", 5},
      {"SIGABRT", 6},  {"SIGBUS", 7},   {"SIGFPE", 8},   {"SIGKILL", 9},  {"SIGUSR1", 10},
      {"SIGSEGV", 11}, {"SIGUSR2", 12}, {"SIGPIPE", 13}, {"SIGALRM", 14}, {"SIGTERM", 15}};
  for (const auto& [signal_name, number] : kSignals) {
    if (StartsWith(name, signal_name)) return number;
  }
  return -1;
}

// "2.00 GiB" / "512.00 MiB" / "20 B" -> bytes, or -1.
int64_t ParseSize(std::string_view s) {
  SkipSpaces(&s);
  int64_t whole;
  if (!ConsumeInt(&s, &whole) || whole < 0) return -1;
  double value = static_cast<double>(whole);
  if (ConsumeLiteral(&s, ".")) {
    double scale = 0.1;
    while (!s.empty() && IsDigit(s[0])) {
      value += (s[0] - '0') * scale;
      scale /= 10;
      s.remove_prefix(1);
    }
  }
  SkipSpaces(&s);
  double unit = 1;
  if (StartsWith(s, "KiB") || StartsWith(s, "kB") || StartsWith(s, "KB")) {
    unit = 1024.0;
  } else if (StartsWith(s, "MiB") || StartsWith(s, "MB")) {
    unit = 1024.0 * 1024;
  } else if (StartsWith(s, "GiB") || StartsWith(s, "GB")) {
    unit = 1024.0 * 1024 * 1024;
  } else if (StartsWith(s, "TiB") || StartsWith(s, "TB")) {
    unit = 1024.0 * 1024 * 1024 * 1024;
  } else if (!StartsWith(s, "B") && !StartsWith(s, "bytes")) {
    return -1;
  }
  double bytes = value * unit;
  return bytes > 9e18 ? -1 : static_cast<int64_t>(bytes + 0.5);
}

// The group tag ProcessGroupNCCL puts before its messages: "[PG ID 2 PG GUID 9 Rank 4]",
// "[PG 0 (default_pg) Rank 12]", "[PG 1 Rank 0]". The group's name is the GUID (the id in the
// older form); `rank` is the rank within that group.
struct PgTag {
  std::string_view name;
  bool is_default = false;
  int64_t rank = -1;
};
bool ParsePgTag(std::string_view body, PgTag* tag) {
  size_t at = body.find("[PG ");
  if (at == std::string_view::npos) return false;
  std::string_view t = body.substr(at + 4);
  size_t close = t.find(']');
  if (close == std::string_view::npos) return false;
  t = t.substr(0, close);
  std::string_view id = WordAfter(t, "ID ", " ");
  std::string_view name = WordAfter(t, "GUID ", " ");
  if (name.empty()) {
    size_t end = t.find_first_of(" (");
    name = t.substr(0, end);
    if (id.empty()) id = name;
  }
  size_t paren = name.find('(');
  if (paren != std::string_view::npos) name = name.substr(0, paren);
  tag->name = name;
  tag->is_default = id == "0" || Contains(t, "default_pg");
  tag->rank = IntAfter(t, "Rank ");
  return !name.empty();
}

bool IsExceptionType(std::string_view type) {
  if (type.empty() || IsDigit(type[0]) || type[0] == '.') return false;
  for (char c : type) {
    if (!IsIdentChar(c) && c != '.') return false;
  }
  return true;
}

// Torchrun's --log-dir layout ".../attempt_0/3/stderr.log" names the local rank.
int32_t LocalRankFromPath(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return -1;
  std::string_view name = path.substr(slash + 1);
  if (name != "stderr.log" && name != "stdout.log") return -1;
  std::string_view dir = path.substr(0, slash);
  size_t parent_slash = dir.rfind('/');
  std::string_view rank_text =
      parent_slash == std::string_view::npos ? dir : dir.substr(parent_slash + 1);
  if (parent_slash == std::string_view::npos) return -1;
  std::string_view grand = dir.substr(0, parent_slash);
  size_t grand_slash = grand.rfind('/');
  std::string_view attempt =
      grand_slash == std::string_view::npos ? grand : grand.substr(grand_slash + 1);
  if (!StartsWith(attempt, "attempt_")) return -1;
  int64_t rank;
  std::string_view digits = rank_text;
  if (!ConsumeInt(&digits, &rank) || !digits.empty() || rank < 0) return -1;
  return ToInt32(rank);
}

// Parses one log, pushed in chunks: Feed() any number of times, then Finish().
class FileParser {
 public:
  FileParser(std::string_view path, LogSet* out, const LogParseOptions& options)
      : out_(out), options_(options) {
    file_index_ = static_cast<int32_t>(out_->files.size());
    first_event_ = out_->events.size();
    LogFile& file = out_->files.emplace_back();
    file.path = std::string(path);
    file.local_rank = LocalRankFromPath(path);
  }

  void Feed(std::string_view bytes) {
    file().bytes += static_cast<int64_t>(bytes.size());
    FeedText(decoder_.Decode(bytes, &decoded_));
  }

  void Finish() {
    FeedText(decoder_.Finish(&decoded_));
    FinishLines();
  }

 private:
  // Splits decoded text into lines. A line longer than max_line_bytes is read in pieces of at
  // most that many bytes, which keep its line number (see AppendToCarry).
  void FeedText(std::string_view bytes) {
    while (!bytes.empty()) {
      const void* newline = std::memchr(bytes.data(), '\n', bytes.size());
      size_t length = newline == nullptr
                          ? bytes.size()
                          : static_cast<size_t>(static_cast<const char*>(newline) - bytes.data());
      std::string_view piece = bytes.substr(0, length);
      if (newline == nullptr) {
        AppendToCarry(piece);
        return;
      }
      if (!carry_.empty() || carry_long_ || piece.size() > options_.max_line_bytes) {
        AppendToCarry(piece);
        std::string line = std::move(carry_);
        carry_.clear();
        bool was_long = carry_long_;
        carry_long_ = false;
        Line(line, was_long);
        continuing_line_ = false;
      } else {
        Line(piece, false);
      }
      bytes.remove_prefix(length + 1);
    }
  }

  void FinishLines() {
    // The last line stays alive until the end: prefix_ points into it, and the table and
    // tracebacks flushed below are emitted with it.
    std::string last_line;
    if (!carry_.empty() || carry_long_) {
      last_line = std::move(carry_);
      carry_.clear();
      Line(last_line, carry_long_);
      carry_long_ = false;
      continuing_line_ = false;
    }
    FlushTable();
    for (auto& [writer, traceback] : tracebacks_) {
      if (traceback.state == Traceback::kAfterException) EmitTraceback(traceback);
    }
    tracebacks_.clear();
    prefix_ = LinePrefix();
    // Tracebacks and error tables are emitted when they end but dated by their first line.
    std::stable_sort(out_->events.begin() + static_cast<std::ptrdiff_t>(first_event_),
                     out_->events.end(),
                     [](const LogEvent& a, const LogEvent& b) { return a.line < b.line; });
    LogFile& f = file();
    int best = kFormatText;
    for (int format = 1; format < kFormatCount; ++format) {
      if (format_lines_[format] > format_lines_[best]) best = format;
    }
    f.format = LineFormatName(static_cast<LineFormat>(best));
  }

  struct Traceback {
    enum State { kFrames, kAfterException } state = kFrames;
    int64_t first_line = 0;
    LinePrefix prefix;  // of the first line; its views are not kept (see Start)
    std::string host;
    // The last time printed before the traceback began: it is emitted only when it ends, maybe
    // many interleaved lines later.
    LogTime time_before;
    std::string exception_line;
    int blank_lines = 0;
    bool outermost_frame_seen = false;
    bool in_launcher = false;  // the outermost frame is torchrun's or the elastic agent's
  };

  // One entry of torchrun's ChildFailedError table.
  struct TableEntry {
    bool open = false;
    int64_t first_line = 0;
    std::string host, text;
    int64_t rank = -1, local_rank = -1, exit_code = INT32_MIN, pid = -1, signal = -1;
    LogTime time;
  };
  enum class TableSection { kNone, kFailures, kRootCause };

  LogFile& file() { return out_->files[file_index_]; }

  // Adds `piece` to the line being carried. Whenever the line outgrows max_line_bytes, what it
  // holds so far is read as a piece of its own, cut after its last '\r' when it has one
  // (progress bars redraw a line with '\r', and what a dying process prints comes after the
  // last redraw), so that no part of a long line goes unread and memory stays bounded.
  void AppendToCarry(std::string_view piece) {
    const size_t max_bytes = std::max<size_t>(options_.max_line_bytes, 1);
    while (true) {
      size_t room = max_bytes > carry_.size() ? max_bytes - carry_.size() : 0;
      if (piece.size() <= room) break;
      carry_.append(piece.data(), room);
      piece.remove_prefix(room);
      size_t cut = carry_.rfind('\r');
      cut = cut == std::string::npos || cut == 0 ? carry_.size() : cut + 1;
      std::string head = carry_.substr(0, cut);
      carry_.erase(0, cut);
      carry_long_ = true;
      Line(head, /*long_line=*/true);
      continuing_line_ = true;
    }
    carry_.append(piece.data(), piece.size());
  }

  void Line(std::string_view line, bool long_line) {
    if (!continuing_line_) {
      ++line_no_;
      ++file().lines;
    }
    if (line.size() > options_.max_line_bytes) {
      line = line.substr(0, options_.max_line_bytes);
      long_line = true;
    }
    if (long_line && !continuing_line_) ++file().long_lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() && tracebacks_.empty()) return;
    line = WithoutAnsiAndRepeats(line, &ansi_line_);
    line = WithoutRepeatedMpiTags(line, &mpi_line_);
    if (!SplitTeeCopies(line, &tee_pieces_)) {
      LogicalLine(line);
      return;
    }
    for (const std::string& piece : tee_pieces_) LogicalLine(piece);
  }

  // One line as its writer printed it (a physical line may hold several: SplitTeeCopies).
  void LogicalLine(std::string_view line) {
    ParseLinePrefix(line, &prefix_);
    file().launchers |= prefix_.launchers;
    RayIdentity();
    if (prefix_.time.kind != LogTime::Kind::kNone) {
      last_time_ = prefix_.time;
      for (size_t index : awaiting_next_time_) out_->events[index].next_time = prefix_.time;
      awaiting_next_time_.clear();
    }
    if (prefix_.format != kFormatText) ++format_lines_[prefix_.format];
    HandleLine(line);
  }

  // Ray Train names a worker's lines by pid only. Its controller prints each attempt's rank map
  // ("- (ip=10.0.0.2, pid=15904) world_rank=2, local_rank=2, node_rank=0"; pids change per
  // attempt), and quotes a failed rank's traceback after "[Rank 2 Error Snippet]:".
  void RayIdentity() {
    std::string_view body = prefix_.body;
    if (StartsWith(body, "- (ip=") && Contains(body, ") world_rank=")) {
      int64_t pid = IntAfter(body, "pid=");
      int64_t rank = IntAfter(body, "world_rank=");
      if (pid >= 0 && pid <= INT32_MAX && rank >= 0 && rank <= INT32_MAX) {
        ray_ranks_[static_cast<int32_t>(pid)] = {static_cast<int32_t>(rank),
                                                 std::string(WordAfter(body, "(ip=", ",) "))};
      }
      return;
    }
    if (prefix_.format == kFormatRay && prefix_.rank < 0 && prefix_.pid >= 0) {
      if (auto it = ray_ranks_.find(prefix_.pid); it != ray_ranks_.end()) {
        prefix_.rank = it->second.first;
        if (prefix_.host.empty()) prefix_.host = it->second.second;
      }
    }
    if (StartsWith(body, "[Rank ") && EndsWith(body, " Error Snippet]:")) {
      std::string_view ranks = body.substr(6, body.size() - 6 - 16);
      int64_t rank = -1;
      // "[Rank 0,2 Error Snippet]:" quotes one traceback for several ranks: no single owner.
      ray_snippet_rank_ = ConsumeInt(&ranks, &rank) && ranks.empty() && rank <= INT32_MAX
                              ? static_cast<int32_t>(rank)
                              : -1;
      return;
    }
    if (body.empty()) ray_snippet_rank_ = -1;
    if (prefix_.rank < 0 && ray_snippet_rank_ >= 0) prefix_.rank = ray_snippet_rank_;
  }

  // A Ray Train worker's process, by its pid: Ray starts a new process for each rank on every
  // attempt (FailureConfig retries), so the rank alone would take a retried rank's lines as the
  // failed process going on (its exception "handled"). -1 for other lines; the controller's
  // quote of a rank's error ("[Rank 2 Error Snippet]:") keeps that rank.
  int64_t RayWorkerKey(const LinePrefix& prefix) const {
    if (prefix.format != kFormatRay || prefix.pid < 0 || !ray_ranks_.contains(prefix.pid)) {
      return -1;
    }
    return (int64_t{1} << 41) + prefix.pid;
  }

  // Who a line belongs to for following a traceback: the rank its prefix names, else the file.
  int64_t WriterKey() const {
    if (int64_t ray = RayWorkerKey(prefix_); ray >= 0) return ray;
    if (prefix_.rank >= 0) return prefix_.rank;
    if (prefix_.local_rank >= 0) return (int64_t{1} << 40) + prefix_.local_rank;
    return -1;
  }

  void HandleLine(std::string_view line) {
    std::string_view body = prefix_.body;
    if (table_section_ != TableSection::kNone && TableLine(body)) return;
    if (!tracebacks_.empty() || StartsWith(body, "Traceback (most recent call last)")) {
      if (TracebackLine(line, body)) return;
    }
    CloseTracebacksOfProcess();
    CountLineAfterException(body);
    if (prefix_.nccl_level == 'I') {
      if (EndsWith(Trim(body), "Init COMPLETE")) {
        OnNcclInit(line, body);
      } else if (Contains(body, ": Using ")) {
        OnNcclInterface(line, body);
      } else if (StartsWith(TrimLeft(body), "NCCL version ")) {
        OnNcclVersion(line, body);
      }
      return;
    }
    if (prefix_.nccl_level == 'W') {
      OnNcclWarn(line, body);
      return;
    }
    Dispatch(line, body);
  }

  // The pattern table: the first entry whose needle occurs in the body and whose recognizer
  // accepts the line makes the line's one event. Order matters where needles overlap.
  using Recognizer = bool (FileParser::*)(std::string_view line, std::string_view body);
  struct Pattern {
    std::string_view needle;
    Recognizer recognize;
  };
  void Dispatch(std::string_view line, std::string_view body) {
    static constexpr Pattern kPatterns[] = {
        // Torch's cascade, in the order ProcessGroupNCCL prints it.
        {"Watchdog caught collective operation timeout", &FileParser::OnWatchdogTimeout},
        {"Some NCCL operations have failed or timed out", &FileParser::OnWatchdogTimeout},
        {"Heartbeat monitor timed out", &FileParser::OnWatchdogStuck},
        {"watchdog got stuck", &FileParser::OnWatchdogStuck},
        {" signal ", &FileParser::OnDumpSignal},
        {" work: ", &FileParser::OnWorkTimeoutSeqs},
        {"taking the entire process down", &FileParser::OnProcessTakenDown},
        // Hosts and schedulers.
        {"NVRM: Xid", &FileParser::OnXid},
        {"Killed process ", &FileParser::OnHostOom},
        {"oom-kill:", &FileParser::OnHostOom},
        {"srun: error: ", &FileParser::OnSrunTask},
        {"oom_kill event", &FileParser::OnSlurmOom},
        {"oom-kill event", &FileParser::OnSlurmOom},
        {"CANCELLED AT ", &FileParser::OnSlurmCancel},
        // The job never forming.
        {"The client socket has ", &FileParser::OnStoreUnreachable},
        {"failed to connect/validate to host", &FileParser::OnStoreUnreachable},
        // Torchrun's agent.
        {"failed (exitcode: ", &FileParser::OnWorkerFailed},
        {"closing signal ", &FileParser::OnSignalSent},
        {" death signal", &FileParser::OnLauncherSignalled},
        {"Rendezvous complete", &FileParser::OnRendezvous},
        {"Setting OMP_NUM_THREADS environment variable", &FileParser::OnLauncherStart},
        // DeepSpeed's launcher.
        {"exits with return code = ", &FileParser::OnDeepSpeedExit},
        {"Killing subprocess ", &FileParser::OnDeepSpeedKill},
        {"deepspeed.launcher.launch", &FileParser::OnDeepSpeedCommand},
        {"setting system clock to ", &FileParser::OnBootClock},
        {"Root Cause (first observed failure)", &FileParser::OnTableStart},
        {"Failures:", &FileParser::OnTableStart},
        // Transport seen by a victim, and transport faults.
        {"remote process exited", &FileParser::OnRemotePeerGone},
        {"ncclRemoteError", &FileParser::OnRemotePeerGone},
        {"ncclSystemError", &FileParser::OnTransportError},
        {"unhandled system error", &FileParser::OnTransportError},
        // The worker's own faults.
        {"out of memory", &FileParser::OnCudaOom},
        {"CUDA error", &FileParser::OnCudaError},
        {"illegal memory access", &FileParser::OnCudaError},
        {"device-side assert", &FileParser::OnCudaError},
        {"unhandled cuda error", &FileParser::OnCudaError},
        // Ray: a worker process that died (before the SIGSEGV of its stock advice).
        {"Worker exit type: ", &FileParser::OnRayWorkerExit},
        // Open MPI's mpirun.
        {"mpirun noticed that process rank ", &FileParser::OnMpirunNoticed},
        {"Process name: [[", &FileParser::OnMpiProcessName},
        {"Exit code:", &FileParser::OnMpiExitCode},
        {"Segmentation fault", &FileParser::OnSegfault},
        {"SIGSEGV", &FileParser::OnSegfault},
        {"oss", &FileParser::OnLoss},
    };
    for (const Pattern& pattern : kPatterns) {
      if (body.find(pattern.needle) != std::string_view::npos &&
          (this->*pattern.recognize)(line, body)) {
        return;
      }
    }
  }

  // A new event for the current line, with who and when from its prefix (or the file). When the
  // file's cap is reached the event is a scratch one, counted and thrown away.
  LogEvent* Emit(LogEventKind kind, std::string_view line) {
    LogEvent* event;
    if (static_cast<int64_t>(out_->events.size() - first_event_) >= options_.max_events_per_file) {
      ++file().events_dropped;
      scratch_ = LogEvent();
      event = &scratch_;
    } else {
      event = &out_->events.emplace_back();
    }
    const LogFile& f = file();
    event->kind = kind;
    event->file = file_index_;
    event->line = line_no_;
    event->rank = prefix_.rank >= 0 ? prefix_.rank : f.rank;
    event->local_rank = prefix_.local_rank >= 0 ? prefix_.local_rank : f.local_rank;
    event->host = prefix_.host.empty() ? f.host : std::string(prefix_.host);
    event->pid = prefix_.pid;
    event->cuda_dev = prefix_.cuda_dev;
    event->raw_time = prefix_.time;
    if (event->raw_time.kind == LogTime::Kind::kNone) {
      event->nearby_time = last_time_;
      if (event != &scratch_) awaiting_next_time_.push_back(out_->events.size() - 1);
    }
    event->text = EventText(line);
    return event;
  }

  // `event` is `launcher`'s own report (a worker's death), and the file holds that launcher's
  // words.
  void MarkLauncher(LogEvent* event, Launcher launcher) {
    event->launcher = launcher;
    file().launchers |= LauncherBit(launcher);
  }

  void SetGroup(LogEvent* event, std::string_view body) {
    PgTag tag;
    if (!ParsePgTag(body, &tag)) return;
    event->process_group = std::string(tag.name);
    // Only in the default group is a group rank the global rank.
    if (event->rank < 0 && tag.is_default && tag.rank >= 0) event->rank = ToInt32(tag.rank);
  }

  // --- ProcessGroupNCCL ---------------------------------------------------------------------

  bool OnWatchdogTimeout(std::string_view line, std::string_view body) {
    LogEvent* e = Emit(LogEventKind::kWatchdogTimeout, line);
    e->seq = IntAfter(body, "SeqNum=");
    e->op = std::string(WordAfter(body, "OpType=", ", )"));
    e->numel_in = IntAfter(body, "NumelIn=");
    e->numel_out = IntAfter(body, "NumelOut=");
    e->timeout_ms = IntAfter(body, "Timeout(ms)=");
    e->ran_for_ms = IntAfter(body, "ran for ");
    SetGroup(e, body);
    return true;
  }

  bool OnWatchdogStuck(std::string_view line, std::string_view body) {
    SetGroup(Emit(LogEventKind::kWatchdogStuck, line), body);
    return true;
  }

  // "Received a dump signal due to a collective timeout from  rank 2 ..." (2.4+), "... from this
  // local rank ...", and 2.3's "Received a timeout signal from this local rank" / "Received a
  // global timeout from another process".
  bool OnDumpSignal(std::string_view line, std::string_view body) {
    if (!Contains(body, "Received a dump signal") && !Contains(body, "Received a timeout signal") &&
        !Contains(body, "Received a global timeout")) {
      return false;
    }
    LogEvent* e = Emit(LogEventKind::kDumpSignal, line);
    size_t from = body.find(" from ");
    if (from != std::string_view::npos) {
      std::string_view rest = TrimLeft(body.substr(from + 6));
      if (ConsumeLiteral(&rest, "rank")) {
        SkipSpaces(&rest);
        int64_t peer;
        if (ConsumeInt(&rest, &peer)) e->peer_rank = ToInt32(peer);
      } else if (StartsWith(rest, "this local rank")) {
        e->reason = "local";
      }
    }
    e->last_enqueued_seq = IntAfter(body, "ast enqueued NCCL work: ");
    e->last_completed_seq = IntAfter(body, "ast completed NCCL work: ");
    SetGroup(e, body);
    return true;
  }

  // "Timeout at NCCL work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609." and
  // "Exception (either an error or timeout) detected by watchdog at work: 610, ...".
  bool OnWorkTimeoutSeqs(std::string_view line, std::string_view body) {
    size_t at = body.find("Timeout at NCCL work: ");
    size_t key_size = 22;
    if (at == std::string_view::npos) {
      at = body.find("detected by watchdog at work: ");
      key_size = 30;
    }
    if (at == std::string_view::npos) return false;
    LogEvent* e = Emit(LogEventKind::kWorkTimeoutSeqs, line);
    std::string_view rest = body.substr(at + key_size);
    int64_t seq;
    if (ConsumeInt(&rest, &seq)) e->seq = seq;
    e->last_enqueued_seq = IntAfter(body, "last enqueued NCCL work: ");
    e->last_completed_seq = IntAfter(body, "last completed NCCL work: ");
    SetGroup(e, body);
    return true;
  }

  bool OnProcessTakenDown(std::string_view line, std::string_view body) {
    SetGroup(Emit(LogEventKind::kProcessTakenDown, line), body);
    return true;
  }

  // --- Kernel ---------------------------------------------------------------------------------

  // "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
  bool OnXid(std::string_view line, std::string_view body) {
    std::string_view t = body.substr(body.find("NVRM: Xid") + 9);
    SkipSpaces(&t);
    std::string bus;
    if (ConsumeLiteral(&t, "(")) {
      size_t close = t.find(')');
      if (close == std::string_view::npos) return false;
      bus = NormalizeBusId(t.substr(0, close));
      t.remove_prefix(close + 1);
    }
    ConsumeLiteral(&t, ":");
    SkipSpaces(&t);
    int64_t xid;
    if (!ConsumeInt(&t, &xid)) return false;
    LogEvent* e = Emit(LogEventKind::kXid, line);
    e->xid = ToInt32(xid);
    e->bus_id = std::move(bus);
    e->pid = -1;
    // Newer drivers name the process on the GPU: ", pid=1234, name=python, <message>".
    ConsumeLiteral(&t, ",");
    SkipSpaces(&t);
    if (ConsumeLiteral(&t, "pid=")) {
      int64_t pid;
      if (ConsumeInt(&t, &pid)) e->pid = ToInt32(pid);
      size_t comma = t.find(',');
      t = comma == std::string_view::npos ? std::string_view() : t.substr(comma + 1);
      SkipSpaces(&t);
      if (ConsumeLiteral(&t, "name=")) {
        comma = t.find(',');
        t = comma == std::string_view::npos ? std::string_view() : t.substr(comma + 1);
      }
    }
    e->reason = EventText(Trim(t));
    return true;
  }

  // "Out of memory: Killed process 1234 (python) total-vm:..kB, anon-rss:..kB, ...", the cgroup
  // form "Memory cgroup out of memory: Killed process ...", and the summary
  // "oom-kill:constraint=...,task=python,pid=1234,uid=1000" printed just before. Both lines of
  // one kill make one event.
  bool OnHostOom(std::string_view line, std::string_view body) {
    int64_t pid = -1;
    std::string_view name;
    int64_t bytes = -1;
    size_t killed = body.find("Killed process ");
    if (killed != std::string_view::npos) {
      std::string_view t = body.substr(killed + 15);
      if (!ConsumeInt(&t, &pid)) return false;
      name = WordAfter(t, "(", ")");
      int64_t rss_kb = IntAfter(t, "anon-rss:");
      if (rss_kb >= 0 && rss_kb < (int64_t{1} << 50)) bytes = rss_kb * 1024;
    } else {
      pid = IntAfter(body, ",pid=");
      name = WordAfter(body, ",task=", ",");
      if (pid < 0) return false;
    }
    std::string host = prefix_.host.empty() ? file().host : std::string(prefix_.host);
    if (last_oom_event_ >= first_event_ && last_oom_event_ < out_->events.size()) {
      LogEvent& previous = out_->events[last_oom_event_];
      if (previous.pid == pid && previous.host == host &&
          line_no_ - last_oom_line_ <= kOomMergeLines) {
        if (bytes >= 0) {
          previous.bytes = bytes;
          previous.text = EventText(line);
        }
        last_oom_event_ = SIZE_MAX;
        return true;
      }
    }
    LogEvent* e = Emit(LogEventKind::kHostOom, line);
    e->pid = ToInt32(pid);
    e->bytes = bytes;
    e->reason = std::string(name);
    if (e != &scratch_) last_oom_event_ = out_->events.size() - 1;
    last_oom_line_ = line_no_;
    return true;
  }

  // --- Slurm ----------------------------------------------------------------------------------

  // "srun: error: node05: task 37: Killed" / "...: task 3: Exited with exit code 1" / "...: task
  // 4: Out Of Memory". Under srun a task number is the global rank.
  bool OnSrunTask(std::string_view line, std::string_view body) {
    std::string_view t = body.substr(body.find("srun: error: ") + 13);
    size_t task_at = t.find(": task");
    if (task_at == std::string_view::npos) return false;
    std::string_view host = t.substr(0, task_at);
    t.remove_prefix(task_at + 6);
    int64_t task = -1;
    if (ConsumeLiteral(&t, " ")) {
      std::string_view digits = t;
      if (!ConsumeInt(&digits, &task) || !StartsWith(digits, ": ")) task = -1;
    }
    size_t colon = t.find(": ");
    if (colon == std::string_view::npos) return false;
    std::string_view what = Trim(t.substr(colon + 2));
    LogEventKind kind = LogEventKind::kWorkerFailed;
    int signal = -1;
    if (StartsWith(what, "Out Of Memory")) {
      kind = LogEventKind::kSlurmOomEvent;
    } else if (StartsWith(what, "Segmentation fault")) {
      kind = LogEventKind::kSegfault;
      signal = 11;
    } else if (StartsWith(what, "Killed")) {
      signal = 9;
    } else if (StartsWith(what, "Bus error")) {
      signal = 7;
    } else if (StartsWith(what, "Aborted")) {
      signal = 6;
    } else if (StartsWith(what, "Terminated")) {
      signal = 15;
    }
    LogEvent* e = Emit(kind, line);
    MarkLauncher(e, Launcher::kSlurm);
    if (task >= 0) e->rank = ToInt32(task);
    if (host.find(' ') == std::string_view::npos && !host.empty()) e->host = std::string(host);
    e->signal = signal;
    int64_t code = IntAfter(what, "exit code ", INT32_MIN);
    if (code != INT32_MIN) e->exit_code = ToInt32(code);
    e->reason = EventText(what);
    return true;
  }

  // "slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of your processes ..."
  // and the older "Detected 2 oom-kill event(s) in step 3756240.batch cgroup."
  bool OnSlurmOom(std::string_view line, std::string_view body) {
    if (!Contains(body, "Detected ")) return false;
    LogEvent* e = Emit(LogEventKind::kSlurmOomEvent, line);
    e->reason = std::string(WordAfter(body, "StepId=", " "));
    if (e->reason.empty()) e->reason = std::string(WordAfter(body, " in step ", " "));
    if (!e->reason.empty() && e->reason.back() == '.') e->reason.pop_back();
    return true;
  }

  // "slurmstepd: error: *** JOB 123 ON node05 CANCELLED AT 2026-12-01T12:03:04 DUE TO TIME LIMIT
  // ***". A STEP cancelled without a reason is srun ending the step after one of its tasks
  // failed: the cascade, not a kill from outside, so it makes no event.
  bool OnSlurmCancel(std::string_view line, std::string_view body) {
    bool job = Contains(body, "*** JOB ");
    size_t due = body.find(" DUE TO ");
    if (!job && due == std::string_view::npos) return Contains(body, "*** STEP ");
    LogEvent* e = Emit(LogEventKind::kHostKill, line);
    // The node, unless the line was redacted ("ON ... CANCELLED", as pasted in public issues).
    std::string_view host = WordAfter(body, " ON ", " ");
    if (std::any_of(host.begin(), host.end(), [](char c) {
          return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        })) {
      e->host = std::string(host);
    }
    std::string_view at = body.substr(body.find("CANCELLED AT ") + 13);
    LogTime time;
    if (ConsumeIsoTime(&at, &time) && e->raw_time.kind == LogTime::Kind::kNone) {
      e->raw_time = time;
    }
    e->reason = "cancelled";
    if (due != std::string_view::npos) {
      std::string_view why = body.substr(due + 8);
      if (StartsWith(why, "TIME LIMIT")) {
        e->reason = "time limit";
      } else if (StartsWith(why, "PREEMPTION")) {
        e->reason = "preemption";
      } else if (StartsWith(why, "NODE FAIL")) {
        e->reason = "node failure";
      }
    }
    return true;
  }

  // "[E521 15:43:02.707733876 socket.cpp:1023] [c10d] The client socket has timed out after
  // 600000ms while trying to connect to (172.18.21.4, 37907).", "The client socket has failed to
  // connect to [node01]:29500 (errno: 111 - Connection refused).", and TCPStore's "TCP client
  // failed to connect/validate to host 172.18.21.4:37907 - timed out (try=1, ...)".
  bool OnStoreUnreachable(std::string_view line, std::string_view body) {
    if (!Contains(body, "connect")) return false;
    LogEvent* e = Emit(LogEventKind::kInitFailure, line);
    e->peer_address = StoreAddress(body);
    e->reason = Contains(body, "timed out") ? "timed out" : "connection failed";
    return true;
  }

  // "(172.18.21.4, 37907)" -> "172.18.21.4:37907"; "[node01]:29500" and "host 10.0.0.1:29500"
  // as written.
  static std::string StoreAddress(std::string_view body) {
    size_t open = body.find("connect to (");
    if (open != std::string_view::npos) {
      std::string_view rest = body.substr(open + 12);
      size_t comma = rest.find(", "), close = rest.find(')');
      if (comma != std::string_view::npos && close != std::string_view::npos && comma < close) {
        return EventText(
            Cat({rest.substr(0, comma), ":", rest.substr(comma + 2, close - comma - 2)}));
      }
    }
    std::string_view word = WordAfter(body, "connect to ", " ");
    if (word.empty()) word = WordAfter(body, "to host ", " ");
    while (!word.empty() && (word.back() == '.' || word.back() == ',')) word.remove_suffix(1);
    return EventText(word);
  }

  // --- Torchrun -------------------------------------------------------------------------------

  // "failed (exitcode: -9) local_rank: 3 (pid: 4567) of binary: /usr/bin/python"
  bool OnWorkerFailed(std::string_view line, std::string_view body) {
    LogEvent* e = Emit(LogEventKind::kWorkerFailed, line);
    MarkLauncher(e, Launcher::kTorchrun);
    int64_t code = IntAfter(body, "(exitcode: ", INT32_MIN);
    if (code != INT32_MIN) e->exit_code = ToInt32(code);
    if (code < 0 && code > -64) e->signal = static_cast<int32_t>(-code);
    int64_t local_rank = IntAfter(body, "local_rank: ");
    if (local_rank >= 0) e->local_rank = ToInt32(local_rank);
    e->pid = ToInt32(IntAfter(body, "(pid: "));
    return true;
  }

  // --- Ray (2.60)
  // ---------------------------------------------------------------------------------

  // "... Worker PID: 24206 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly
  // exits with a connection error code 2. End of file. Some common causes include: (1) the
  // process was killed by the OOM killer ..., (3) the worker crashed unexpectedly due to SIGSEGV
  // ..." (the raylet's and the controller's words for a worker that died). What follows "Some
  // common causes include" is Ray's stock advice, printed for every such death: it is never
  // evidence of how the process died.
  bool OnRayWorkerExit(std::string_view line, std::string_view body) {
    std::string_view type = WordAfter(body, "Worker exit type: ", " ");
    if (type.empty() || StartsWith(type, "INTENDED")) return false;
    LogEvent* e = Emit(LogEventKind::kWorkerFailed, line);
    MarkLauncher(e, Launcher::kRay);
    int64_t pid = IntAfter(body, "Worker PID: ");
    if (pid >= 0 && pid <= INT32_MAX) {
      e->pid = static_cast<int32_t>(pid);
      if (auto it = ray_ranks_.find(e->pid); e->rank < 0 && it != ray_ranks_.end()) {
        e->rank = it->second.first;
        if (e->host.empty()) e->host = it->second.second;
      }
    }
    e->reason = Cat({"Ray worker exit: ", type});
    return true;
  }

  // --- Open MPI's mpirun (4.1) ------------------------------------------------------------------

  // "mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 11
  // (Segmentation fault)." (the PID really prints as 0): the launcher saw that rank die.
  bool OnMpirunNoticed(std::string_view line, std::string_view body) {
    int64_t rank = IntAfter(body, "process rank ");
    if (rank < 0 || rank > INT32_MAX) return false;
    LogEvent* e = Emit(LogEventKind::kWorkerFailed, line);
    MarkLauncher(e, Launcher::kOpenMpi);
    e->rank = static_cast<int32_t>(rank);
    std::string_view node = WordAfter(body, " on node ", " ");
    if (!node.empty()) e->host = std::string(node);
    int64_t signal = IntAfter(body, "on signal ");
    if (signal > 0 && signal < 64) {
      e->signal = static_cast<int32_t>(signal);
      e->exit_code = -e->signal;
    }
    int64_t status = IntAfter(body, "exited with status ", INT32_MIN);
    if (status != INT32_MIN) e->exit_code = ToInt32(status);
    return true;
  }

  // "  Process name: [[22450,1],2]" then "  Exit code:    1": the first process mpirun saw exit
  // with a non-zero status (in a hang, often a victim that timed out first).
  bool OnMpiProcessName(std::string_view line, std::string_view body) {
    std::string_view rest = body.substr(body.find("[[") + 2);
    size_t close = rest.find("],");
    if (close == std::string_view::npos) return false;
    int64_t rank = IntAfter(rest.substr(close), "],");
    if (rank < 0 || rank > INT32_MAX) return false;
    LogEvent* e = Emit(LogEventKind::kWorkerFailed, line);
    MarkLauncher(e, Launcher::kOpenMpi);
    e->rank = static_cast<int32_t>(rank);
    mpi_exit_event_ = out_->events.size() - 1;
    mpi_exit_line_ = line_no_;
    return true;
  }

  bool OnMpiExitCode(std::string_view line, std::string_view body) {
    if (mpi_exit_line_ < 0 || line_no_ > mpi_exit_line_ + 2 ||
        mpi_exit_event_ >= out_->events.size()) {
      return false;
    }
    int64_t code = IntAfter(body, "Exit code:", INT32_MIN);
    if (code == INT32_MIN) return false;
    out_->events[mpi_exit_event_].exit_code = ToInt32(code);
    mpi_exit_line_ = -1;
    return true;
  }

  // "Received 15 death signal, shutting down workers": the elastic agent itself was signalled
  // (scancel, preemption, a node draining, or srun ending the step after another task failed).
  bool OnLauncherSignalled(std::string_view line, std::string_view body) {
    int64_t signal = IntAfter(body, "Received ");
    if (signal <= 0 || signal >= 64 || !Contains(body, "shutting down workers")) return false;
    LogEvent* e = Emit(LogEventKind::kHostKill, line);
    e->signal = static_cast<int32_t>(signal);
    e->reason = Cat({"the launcher received signal ", std::to_string(signal)});
    return true;
  }

  // "Sending process 4567 closing signal SIGTERM"
  bool OnSignalSent(std::string_view line, std::string_view body) {
    if (!Contains(body, "Sending process ")) return false;
    LogEvent* e = Emit(LogEventKind::kSignalSent, line);
    file().launchers |= LauncherBit(Launcher::kTorchrun);
    e->pid = ToInt32(IntAfter(body, "Sending process "));
    std::string_view name = WordAfter(body, "closing signal ", " ,.");
    e->signal = SignalFromName(name);
    e->reason = std::string(name);
    return true;
  }

  bool OnRendezvous(std::string_view line, std::string_view) {
    Emit(LogEventKind::kRendezvous, line);
    return true;
  }

  bool OnLauncherStart(std::string_view line, std::string_view) {
    Emit(LogEventKind::kLauncherStart, line);
    file().launchers |= LauncherBit(Launcher::kTorchrun);
    return true;
  }

  // --- DeepSpeed's launcher (deepspeed.launcher.launch) -----------------------------------------

  // "[ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py',
  // '--local_rank=0', ...] exits with return code = -9": the first worker it saw exit non-zero,
  // by its return code (negative: the signal). The quoted command is not that worker's: the
  // launcher prints the command variable left over from its spawn loop, the last local rank's
  // (with two GPUs, '--local_rank=1' whichever failed), so the line names no rank.
  bool OnDeepSpeedExit(std::string_view line, std::string_view body) {
    if (!Contains(body, "sigkill_handler]")) return false;
    LogEvent* e = Emit(LogEventKind::kWorkerFailed, line);
    MarkLauncher(e, Launcher::kDeepSpeed);
    e->local_rank = -1;
    int64_t code = IntAfter(body, "exits with return code = ", INT32_MIN);
    if (code != INT32_MIN) e->exit_code = ToInt32(code);
    if (code < 0 && code > -64) e->signal = static_cast<int32_t>(-code);
    e->reason = "deepspeed launcher: first worker exit";
    return true;
  }

  // "[INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266": printed for every worker,
  // the one that already died included, once the launcher saw a failure: its own kills.
  bool OnDeepSpeedKill(std::string_view line, std::string_view body) {
    if (!Contains(body, "sigkill_handler]")) return false;
    LogEvent* e = Emit(LogEventKind::kSignalSent, line);
    file().launchers |= LauncherBit(Launcher::kDeepSpeed);
    e->pid = ToInt32(IntAfter(body, "Killing subprocess "));
    e->reason = "killed by the deepspeed launcher";
    return true;
  }

  // "cmd = /usr/bin/python -u -m deepspeed.launcher.launch --world_info=..." (runner.py): a
  // launch by DeepSpeed; no event of its own.
  bool OnDeepSpeedCommand(std::string_view, std::string_view) {
    file().launchers |= LauncherBit(Launcher::kDeepSpeed);
    return false;
  }

  // "rtc_cmos 00:04: setting system clock to 2025-03-16T06:31:14 UTC (1742106674)": the epoch
  // seconds in parentheses when present (exact), else the ISO time.
  bool OnBootClock(std::string_view line, std::string_view body) {
    std::string_view rest = body.substr(body.find("setting system clock to ") + 24);
    int64_t stated = kNoTime;
    if (size_t open = rest.find('('); open != std::string_view::npos) {
      int64_t seconds = IntAfter(rest.substr(open), "(");
      if (seconds > 0 && seconds < (int64_t{1} << 33)) stated = seconds * 1'000'000'000;
    }
    if (stated == kNoTime) {
      LogTime time;
      if (ConsumeIsoTime(&rest, &time)) stated = time.ns;
    }
    if (stated == kNoTime) return false;
    Emit(LogEventKind::kBootClock, line)->stated_ns = stated;
    return true;
  }

  // The ChildFailedError table: "Root Cause (first observed failure):" and "Failures:" sections
  // of "[N]:" entries with "key : value" lines, ended by a "=====" rule.
  bool OnTableStart(std::string_view, std::string_view body) {
    std::string_view t = Trim(body);
    if (t != "Failures:" && !StartsWith(t, "Root Cause (first observed failure)")) return false;
    FlushTableEntry();
    table_section_ = t == "Failures:" ? TableSection::kFailures : TableSection::kRootCause;
    table_idle_lines_ = 0;
    return true;
  }

  // A line while inside the table; false when it is not part of it (the table is then over).
  bool TableLine(std::string_view body) {
    std::string_view t = Trim(body);
    if (StartsWith(t, "Root Cause (first observed failure)")) {
      FlushTableEntry();
      table_section_ = TableSection::kRootCause;
      return true;
    }
    if (t == "Failures:") {
      FlushTableEntry();
      table_section_ = TableSection::kFailures;
      return true;
    }
    if (StartsWith(t, "=====")) {
      FlushTable();
      return true;
    }
    if (StartsWith(t, "-----") || t == "<NO_OTHER_FAILURES>") {
      FlushTableEntry();
      return true;
    }
    if (t.size() >= 4 && t[0] == '[' && t.back() == ':' && t[t.size() - 2] == ']') {
      FlushTableEntry();
      table_entry_.open = true;
      table_entry_.first_line = line_no_;
      table_entry_.time = prefix_.time;
      if (prefix_.rank >= 0) table_entry_.rank = prefix_.rank;
      return true;
    }
    size_t colon = t.find(':');
    if (table_entry_.open && colon != std::string_view::npos && colon <= 12) {
      std::string_view key = Trim(t.substr(0, colon));
      std::string_view value = Trim(t.substr(colon + 1));
      TableEntry& entry = table_entry_;
      if (!entry.text.empty()) entry.text += " | ";
      entry.text += Cat({key, ": ", value});
      if (key == "time") {
        LogTime time;
        if (ConsumeIsoTime(&value, &time)) entry.time = time;
      } else if (key == "host") {
        entry.host = std::string(value);
      } else if (key == "rank") {
        ConsumeInt(&value, &entry.rank);
        entry.local_rank = IntAfter(value, "local_rank: ");
      } else if (key == "exitcode") {
        int64_t code;
        if (ConsumeInt(&value, &code)) entry.exit_code = ToInt32(code);
        if (code < 0 && code > -64) entry.signal = -code;
        entry.pid = IntAfter(value, "pid: ");
      } else if (key == "traceback") {
        if (ConsumeLiteral(&value, "Signal ")) {
          int64_t signal;
          if (ConsumeInt(&value, &signal)) entry.signal = signal;
        }
      }
      return true;
    }
    // Anything else ends the table (a cut-off table must not swallow the rest of the log).
    if (++table_idle_lines_ > 2) FlushTable();
    return false;
  }

  void FlushTableEntry() {
    if (!table_entry_.open) return;
    TableEntry entry = std::move(table_entry_);
    table_entry_ = TableEntry();
    int64_t saved_line = line_no_;
    line_no_ = entry.first_line;
    LogEvent* e = Emit(table_section_ == TableSection::kRootCause ? LogEventKind::kRootCauseTable
                                                                  : LogEventKind::kWorkerFailed,
                       entry.text);
    line_no_ = saved_line;
    e->raw_time = entry.time;
    if (!entry.host.empty()) e->host = entry.host;
    if (entry.rank >= 0) e->rank = ToInt32(entry.rank);
    if (entry.local_rank >= 0) e->local_rank = ToInt32(entry.local_rank);
    MarkLauncher(e, Launcher::kTorchrun);
    e->exit_code = entry.exit_code;
    e->signal = ToInt32(entry.signal);
    e->pid = ToInt32(entry.pid);
  }

  void FlushTable() {
    FlushTableEntry();
    table_section_ = TableSection::kNone;
    table_idle_lines_ = 0;
  }

  // --- Transport ------------------------------------------------------------------------------

  bool OnRemotePeerGone(std::string_view line, std::string_view) {
    Emit(LogEventKind::kRemotePeerGone, line);
    return true;
  }

  bool OnTransportError(std::string_view line, std::string_view body) {
    LogEvent* e = Emit(LogEventKind::kTransportError, line);
    e->reason = Contains(body, "ncclSystemError") ? "ncclSystemError" : "system error";
    return true;
  }

  // "host:pid:tid [dev] file.cc:123 NCCL WARN ...": network and CUDA failures NCCL saw first.
  void OnNcclWarn(std::string_view line, std::string_view body) {
    if (Contains(body, "Cuda failure")) {
      bool oom = Contains(body, "out of memory");
      LogEvent* e = Emit(oom ? LogEventKind::kCudaOom : LogEventKind::kCudaError, line);
      e->reason = std::string(WordAfter(body, "Cuda failure '", "'"));
      return;
    }
    std::string_view reason;
    if (Contains(body, "Got completion from peer")) {
      reason = "completion error";
    } else if (Contains(body, "Connection reset by peer")) {
      reason = "connection reset by peer";
    } else if (Contains(body, "Connection closed by remote peer")) {
      reason = "connection closed by remote peer";
    } else if (Contains(body, "Connection refused")) {
      reason = "connection refused";
    } else if (Contains(body, "Broken pipe")) {
      reason = "broken pipe";
    } else if (Contains(body, "completed with error")) {
      reason = "completion error";
    } else if (Contains(body, "ncclSystemError") || Contains(body, "Connection timed out")) {
      reason = "system error";
    } else {
      return;
    }
    LogEvent* e = Emit(LogEventKind::kTransportError, line);
    std::string_view transport = WordAfter(body, "NET/", " :");
    e->reason = transport.empty() ? std::string(reason) : Cat({"NET/", transport, " ", reason});
    std::string_view peer = WordAfter(body, " peer ", " ,");
    if (peer.empty()) peer = WordAfter(body, " from ", " ,");
    if (!peer.empty() && (IsDigit(peer[0]) || Contains(peer, "<"))) {
      e->peer_address = EventText(peer);
    }
  }

  // "comm 0x55d0c8a0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 3b000 commId 0x1a2b - Init
  // COMPLETE": which GPU (bus id) a process drives, and its rank in that communicator.
  void OnNcclInit(std::string_view line, std::string_view body) {
    LogEvent* e = Emit(LogEventKind::kNcclInit, line);
    e->comm_rank = ToInt32(IntAfter(body, " rank "));
    e->nranks = ToInt32(IntAfter(body, " nranks "));
    int64_t dev = IntAfter(body, " cudaDev ");
    if (dev >= 0) e->cuda_dev = ToInt32(dev);
    e->bus_id = NormalizeBusId(WordAfter(body, " busId ", " "));
    e->comm_id = std::string(WordAfter(body, " commId ", " "));
  }

  // The address this host's NCCL bootstraps and connects from, which its peers' transport errors
  // name: "Bootstrap : Using eth0:10.0.0.5<0>", "NET/Socket : Using [0]ib0:192.168.11.1<0>",
  // "NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:11.1.128.136<0>".
  void OnNcclInterface(std::string_view line, std::string_view body) {
    // Newer NCCL writes "Bootstrap: Using enp39s0:10.0.10.226<0>", without the space.
    size_t at = body.find("; OOB ");
    if (at != std::string_view::npos) {
      at += 6;
    } else if (Contains(body, "Bootstrap") || Contains(body, "NET/Socket")) {
      at = body.find(": Using ") + 8;
    } else {
      return;
    }
    std::string_view rest = body.substr(at);
    if (ConsumeLiteral(&rest, "[")) {
      size_t close = rest.find(']');
      if (close == std::string_view::npos) return;
      rest.remove_prefix(close + 1);
    }
    size_t colon = rest.find(':');
    size_t angle = rest.find('<');
    if (colon == std::string_view::npos || angle == std::string_view::npos || angle < colon) {
      return;
    }
    std::string_view address = rest.substr(colon + 1, angle - colon - 1);
    if (address.empty() || address.size() > 64) return;
    if (prefix_.host.empty() && file().host.empty()) return;  // an address of no known host
    LogEvent* e = Emit(LogEventKind::kHostAddress, line);
    e->peer_address = std::string(address);
  }

  // "NCCL INFO NCCL version 2.22.3+cuda12.2": the release each process runs; hosts that run
  // different ones cannot be trusted to agree on a protocol.
  void OnNcclVersion(std::string_view line, std::string_view body) {
    std::string_view version = WordAfter(body, "NCCL version ", " ");
    if (version.empty() || version.size() > 64 || !IsDigit(version[0])) return;
    if (prefix_.host.empty() && file().host.empty()) return;
    Emit(LogEventKind::kNcclVersion, line)->reason = std::string(version);
  }

  // --- The worker's own faults ----------------------------------------------------------------

  bool OnCudaOom(std::string_view line, std::string_view body) {
    if (!Contains(body, "CUDA out of memory") && !Contains(body, "CUDA error: out of memory")) {
      return false;
    }
    LogEvent* e = Emit(LogEventKind::kCudaOom, line);
    size_t at = body.find("Tried to allocate ");
    if (at != std::string_view::npos) e->bytes = ParseSize(body.substr(at + 18));
    e->cuda_dev = ToInt32(IntAfter(body, "GPU ", e->cuda_dev));
    return true;
  }

  bool OnCudaError(std::string_view line, std::string_view body) {
    LogEvent* e = Emit(LogEventKind::kCudaError, line);
    size_t at = body.find("CUDA error: ");
    std::string_view reason = at != std::string_view::npos ? body.substr(at + 12) : body;
    if (Contains(body, "illegal memory access")) {
      reason = "an illegal memory access was encountered";
    } else if (Contains(body, "device-side assert")) {
      reason = "device-side assert triggered";
    } else if (Contains(body, "unhandled cuda error")) {
      reason = "unhandled cuda error";
    }
    e->reason = EventText(Trim(reason));
    return true;
  }

  bool OnSegfault(std::string_view line, std::string_view body) {
    LogEvent* e = Emit(LogEventKind::kSegfault, line);
    e->signal = 11;
    int64_t pid = IntAfter(body, "received by PID ");
    if (pid >= 0) e->pid = ToInt32(pid);
    return true;
  }

  // "loss: nan", "loss=inf", "Loss is NaN", "'loss': nan".
  bool OnLoss(std::string_view line, std::string_view body) {
    size_t at = 0;
    for (int probes = 0; probes < 8; ++probes) {
      at = body.find("oss", at);
      if (at == std::string_view::npos) return false;
      size_t end = at + 3;
      at = end;
      if (end < 4 || (body[end - 4] != 'l' && body[end - 4] != 'L')) continue;
      std::string_view t = body.substr(end);
      size_t skip = 0;
      while (skip < t.size() && skip < 8 &&
             (t[skip] == ' ' || t[skip] == ':' || t[skip] == '=' || t[skip] == '\'' ||
              t[skip] == '"')) {
        ++skip;
      }
      t.remove_prefix(skip);
      if (StartsWith(t, "is ")) t.remove_prefix(3);
      ConsumeLiteral(&t, "-");
      if (t.size() < 3) continue;
      char a = t[0] | 0x20, b = t[1] | 0x20, c = t[2] | 0x20;
      bool non_finite = (a == 'n' && b == 'a' && c == 'n') || (a == 'i' && b == 'n' && c == 'f');
      if (!non_finite || (t.size() > 3 && IsIdentChar(t[3]) && (t[3] | 0x20) != 'i')) continue;
      Emit(LogEventKind::kNonFiniteLoss, line);
      return true;
    }
    return false;
  }

  // --- Python tracebacks ----------------------------------------------------------------------

  // A line of a process whose traceback is finished but still open under another of its names
  // (its exception line said "[default0]:[rank0]: KeyError", this line only "[default0]:")
  // ends that traceback: the process went on printing.
  void CloseTracebacksOfProcess() {
    if (tracebacks_.empty()) return;
    std::array<int64_t, 2> keys = ProcessKeys(prefix_);
    for (auto it = tracebacks_.begin(); it != tracebacks_.end();) {
      std::array<int64_t, 2> owner = ProcessKeys(it->second.prefix);
      bool same =
          it->second.state == Traceback::kAfterException &&
          std::any_of(keys.begin(), keys.end(), [&](int64_t key) {
            return key != INT64_MIN && std::find(owner.begin(), owner.end(), key) != owner.end();
          });
      if (!same) {
        ++it;
        continue;
      }
      EmitTraceback(it->second);
      tracebacks_.erase(it++);
    }
  }

  // A line its writer printed after an exception: the process kept running (a handled, logged
  // exception), unless the line is the writer's own end (torch's and the launcher's messages
  // about the failure, an exit notice).
  void CountLineAfterException(std::string_view body) {
    if (open_exception_of_writer_.empty() || Trim(body).empty()) return;
    for (int64_t key : ProcessKeys(prefix_)) {
      if (key == INT64_MIN) continue;
      auto it = open_exception_of_writer_.find(key);
      if (it == open_exception_of_writer_.end()) continue;
      LogEvent& exception = out_->events[it->second];
      if (exception.lines_after < INT32_MAX) ++exception.lines_after;
      return;
    }
  }

  // The process a line came from, by each name its prefix gives: torchrun's `--tee` prints a
  // worker's glog and traceback lines as "[default0]:[rank0]:..." and its plain prints as
  // "[default0]:...", so the rank and the local rank each name it.
  // A line with neither is the file's own process only in a one-rank file (a combined console
  // without prefixes interleaves many processes, which cannot be told apart).
  std::array<int64_t, 2> ProcessKeys(const LinePrefix& prefix) {
    constexpr int64_t kNone = INT64_MIN;
    if (int64_t ray = RayWorkerKey(prefix); ray >= 0) return {ray, kNone};
    if (prefix.rank < 0 && prefix.local_rank < 0) return {file().rank >= 0 ? -1 : kNone, kNone};
    return {prefix.rank >= 0 ? prefix.rank : kNone,
            prefix.local_rank >= 0 ? (int64_t{1} << 40) + prefix.local_rank : kNone};
  }

  // Follows "Traceback (most recent call last):", its frames, and the exception line that ends
  // it, per writer (lines of many ranks interleave under their prefixes). Returns true when the
  // line belonged to a traceback and needs no other look.
  bool TracebackLine(std::string_view line, std::string_view body) {
    int64_t key = WriterKey();
    auto it = tracebacks_.find(key);
    bool starts = StartsWith(body, "Traceback (most recent call last)");
    if (starts) {
      if (it != tracebacks_.end() && it->second.state == Traceback::kAfterException) {
        // A chained exception continues the same traceback; only its last exception counts.
        it->second.state = Traceback::kFrames;
        return true;
      }
      if (it == tracebacks_.end()) {
        if (tracebacks_.size() >= kMaxTracebackWriters) return true;
        it = tracebacks_.try_emplace(key).first;
      }
      Traceback& tb = it->second;
      tb = Traceback();
      tb.first_line = line_no_;
      tb.time_before = last_time_;
      tb.prefix = prefix_;
      tb.prefix.body = {};
      tb.host = std::string(prefix_.host);
      tb.prefix.host = {};
      return true;
    }
    if (it == tracebacks_.end()) return false;
    Traceback& tb = it->second;
    if (tb.state == Traceback::kFrames) {
      if (!tb.outermost_frame_seen && StartsWith(TrimLeft(body), "File \"")) {
        tb.outermost_frame_seen = true;
        tb.in_launcher = Contains(body, "/bin/torchrun\"") ||
                         Contains(body, "torch/distributed/run.py\"") ||
                         Contains(body, "torch/distributed/elastic/");
      }
      if (body.empty() || body[0] == ' ' || body[0] == '\t') return true;
      size_t colon = body.find(':');
      std::string_view type = body.substr(0, colon);
      if (!IsExceptionType(Trim(type))) {
        // Not Python's output after all (another writer without a prefix): give up on it.
        tracebacks_.erase(it);
        return false;
      }
      tb.exception_line = std::string(line.substr(0, kMaxTextBytes * 2));
      tb.state = Traceback::kAfterException;
      tb.blank_lines = 0;
      return true;
    }
    // After the exception line: a chain marker keeps the traceback open, anything else ends it.
    if (Trim(body).empty() && ++tb.blank_lines <= 2) return true;
    if (StartsWith(body, "During handling of the above exception") ||
        StartsWith(body, "The above exception was the direct cause")) {
      return true;
    }
    EmitTraceback(tb);
    tracebacks_.erase(it);
    return false;
  }

  // One event for a finished traceback, dated by its first line, kind by its exception: a CUDA
  // OOM or CUDA error is that fault; torch's distributed errors are the cascade and add nothing
  // the glog lines did not say, except a peer that went away.
  void EmitTraceback(const Traceback& tb) {
    LinePrefix exception_prefix;
    ParseLinePrefix(tb.exception_line, &exception_prefix);
    std::string_view body = exception_prefix.body;
    size_t colon = body.find(':');
    std::string_view type = Trim(body.substr(0, colon));
    std::string_view message = colon == std::string_view::npos ? "" : body.substr(colon + 1);
    LogEventKind kind = LogEventKind::kPythonException;
    // Gloo says what it waited for in the exception itself: a timeout is a victim's collective
    // timeout ("[.../unbound_buffer.cc:81] Timed out waiting 10000ms for recv operation to
    // complete"), a closed or reset connection a victim's view of its peer ("[.../pair.cc:534]
    // Connection closed by peer [10.0.0.5]:10895", "Read error [10.0.0.5]:25266: Connection
    // reset by peer"), whatever exception type carries them.
    if (Contains(message, "Timed out waiting ") && Contains(message, "ms for ")) {
      kind = LogEventKind::kWatchdogTimeout;
    } else if (Contains(message, "by peer [") || Contains(message, "Read error [") ||
               Contains(message, "Write error [")) {
      kind = LogEventKind::kRemotePeerGone;
    } else if (Contains(type, "OutOfMemoryError") || Contains(message, "CUDA out of memory")) {
      kind = LogEventKind::kCudaOom;
    } else if (Contains(message, "CUDA error") || Contains(message, "illegal memory access") ||
               Contains(message, "device-side assert") ||
               Contains(message, "unhandled cuda error")) {
      kind = LogEventKind::kCudaError;
    } else if (Contains(message, "remote process exited")) {
      kind = LogEventKind::kRemotePeerGone;
    } else if (EndsWith(type, "RendezvousTimeoutError") ||
               EndsWith(type, "RendezvousConnectionError") ||
               ((EndsWith(type, "DistNetworkError") || EndsWith(type, "DistStoreError")) &&
                Contains(message, "connect"))) {
      kind = LogEventKind::kInitFailure;
    } else if (EndsWith(type, "DistBackendError") || EndsWith(type, "DistStoreError") ||
               EndsWith(type, "DistNetworkError") || EndsWith(type, "ChildFailedError") ||
               // Ray Train's wrappers quote the worker's own error, read from its traceback.
               EndsWith(type, "WorkerGroupError") || Contains(type, "RayTaskError") ||
               EndsWith(type, "TrainingFailedError") ||
               // ...and ActorDiedError reports a death the raylet's "Worker exit type" line
               // states; the worker raised nothing.
               EndsWith(type, "ActorDiedError") || EndsWith(type, "SignalException") ||
               Contains(message, "Watchdog caught") ||
               Contains(message, "NCCL communicator was aborted") ||
               Contains(message, "ProcessGroupNCCL")) {
      return;
    }
    LinePrefix saved = prefix_;
    int64_t saved_line = line_no_;
    prefix_ = tb.prefix;
    prefix_.host = tb.host;
    line_no_ = tb.first_line;
    LogEvent* e = Emit(kind, tb.exception_line);
    prefix_ = saved;
    line_no_ = saved_line;
    if (e->raw_time.kind == LogTime::Kind::kNone) e->nearby_time = tb.time_before;
    e->reason = std::string(type);
    e->in_launcher = tb.in_launcher || Contains(tb.exception_line, "torch/distributed/elastic/");
    if (kind == LogEventKind::kPythonException && e != &scratch_) {
      // What the writer prints after it tells a logged exception from a death.
      for (int64_t key : ProcessKeys(tb.prefix)) {
        if (key != INT64_MIN) open_exception_of_writer_[key] = out_->events.size() - 1;
      }
    }
    if (kind == LogEventKind::kInitFailure) {
      e->peer_address = StoreAddress(message);
    } else if (kind == LogEventKind::kWatchdogTimeout) {
      e->timeout_ms = IntAfter(message, "Timed out waiting ");
    } else if (kind == LogEventKind::kRemotePeerGone) {
      // "[10.0.0.5]:10895" -> "10.0.0.5:10895"
      size_t open = message.find('[', message.find(" error [") != std::string_view::npos
                                          ? message.find(" error [")
                                          : message.find("by peer ["));
      size_t close = open == std::string_view::npos ? open : message.find(']', open);
      if (close != std::string_view::npos) {
        std::string_view port = WordAfter(message.substr(close), "]:", " :,");
        e->peer_address = EventText(
            Cat({message.substr(open + 1, close - open - 1), port.empty() ? "" : ":", port}));
      }
    }
    if (kind == LogEventKind::kCudaOom) {
      size_t at = message.find("Tried to allocate ");
      if (at != std::string_view::npos) e->bytes = ParseSize(message.substr(at + 18));
    } else if (kind == LogEventKind::kCudaError) {
      size_t at = message.find("CUDA error: ");
      if (at != std::string_view::npos) e->reason = EventText(Trim(message.substr(at + 12)));
    }
  }

  LogSet* out_;
  const LogParseOptions& options_;
  int32_t file_index_ = 0;
  size_t first_event_ = 0;
  int64_t line_no_ = 0;
  std::string carry_;
  // A line with mpirun's repeated tags taken out (WithoutRepeatedMpiTags).
  std::string mpi_line_;
  std::string ansi_line_;
  // Ray Train: pid -> (world rank, ip) from the controller's rank map; the rank whose error
  // snippet is being quoted.
  std::map<int32_t, std::pair<int32_t, std::string>> ray_ranks_;
  int32_t ray_snippet_rank_ = -1;
  // The event of the last "Process name: [[J,S],R]" line, whose "Exit code:" follows it.
  size_t mpi_exit_event_ = 0;
  int64_t mpi_exit_line_ = -1;
  bool carry_long_ = false;
  // The line being read continues a piece already read (AppendToCarry): same line number.
  bool continuing_line_ = false;
  LogTextDecoder decoder_;
  std::string decoded_;  // the decoder's output when it had to change something
  LinePrefix prefix_;
  // The time of the last line that carried one: when an untimed line was printed, at the
  // earliest; and the untimed events waiting for the next timed line, their latest.
  LogTime last_time_;
  std::vector<size_t> awaiting_next_time_;
  LogEvent scratch_;
  int64_t format_lines_[kFormatCount] = {};
  // The logical lines of the current physical line; prefix_ points into them until the next.
  std::vector<std::string> tee_pieces_;
  absl::flat_hash_map<int64_t, Traceback> tracebacks_;
  // Per writer, the last Python exception it printed (an index into out_->events), whose
  // `lines_after` count the writer's later lines.
  absl::flat_hash_map<int64_t, size_t> open_exception_of_writer_;
  TableSection table_section_ = TableSection::kNone;
  TableEntry table_entry_;
  int table_idle_lines_ = 0;
  size_t last_oom_event_ = SIZE_MAX;
  int64_t last_oom_line_ = 0;
};

}  // namespace

std::string NormalizeBusId(std::string_view text) {
  ConsumeLiteral(&text, "PCI:");
  size_t first = text.find(':');
  if (first == std::string_view::npos) {
    if (text.empty() || text.size() > 12) return {};
    uint64_t v = 0;
    for (char c : text) {
      if (!IsHex(c)) return {};
      v = v * 16 + (IsDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x", static_cast<unsigned>((v >> 20) & 0xffff),
                  static_cast<unsigned>((v >> 12) & 0xff), static_cast<unsigned>((v >> 4) & 0xff));
    return buf;
  }
  std::string_view domain = text.substr(0, first);
  std::string_view rest = text.substr(first + 1);
  if (rest.size() < 5 || rest[2] != ':' || !IsHex(rest[0]) || !IsHex(rest[1]) || !IsHex(rest[3]) ||
      !IsHex(rest[4]) || domain.empty() || domain.size() > 8) {
    return {};
  }
  for (char c : domain) {
    if (!IsHex(c)) return {};
  }
  // nvidia-smi pads the domain to 8 digits; the driver and NCCL print 4.
  while (domain.size() > 4 && domain[0] == '0') domain.remove_prefix(1);
  std::string padding(4 - std::min<size_t>(4, domain.size()), '0');
  return LowerHex(Cat({padding, domain, ":", rest.substr(0, 2), ":", rest.substr(3, 2)}));
}

bool LooksLikeLog(std::string_view head) {
  if (head.empty()) return false;
  head = head.substr(0, 8192);
  const auto* bytes = reinterpret_cast<const unsigned char*>(head.data());
  // Compressed files and pickles announce themselves in their first bytes.
  if (head.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return false;
  if (head.size() >= 4 && bytes[0] == 0x28 && bytes[1] == 0xb5 && bytes[2] == 0x2f &&
      bytes[3] == 0xfd) {
    return false;
  }
  if (head.size() >= 4 && (bytes[0] & 0xf0) == 0x50 && bytes[1] == 0x2a && bytes[2] == 0x4d &&
      bytes[3] == 0x18) {
    return false;  // zstd skippable frame
  }
  if (bytes[0] == 0x80) return false;  // pickle protocol 2+
  // The text as the parser reads it: UTF-16 decoded, NUL padding and other binary runs dropped
  // (log_text.h). Binary data is what keeps a control byte every few bytes.
  LogTextSample sample = DecodeLogSample(head);
  if (!SampleIsText(sample)) return false;
  std::string_view t = sample.text;
  ConsumeLiteral(&t, "\xEF\xBB\xBF");
  size_t first = t.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  t.remove_prefix(first);
  // JSON: an object, or an array of values; a log line may start with '[' too ("[rank0]:",
  // "[ 12.5] dmesg"), but never with "[{", "[\"", "[[", "[]" or "[-1," / "[12,".
  if (t[0] == '{') return false;
  // mpirun --tag-output's "[1,0]<stdout>:" is no JSON array.
  if (t[0] == '[' && MpiTagLength(t) > 0) return true;
  if (t[0] == '[') {
    std::string_view inner = TrimLeft(t.substr(1));
    while (!inner.empty() && (inner[0] == '\n' || inner[0] == '\r'))
      inner = TrimLeft(inner.substr(1));
    if (!inner.empty()) {
      char c = inner[0];
      if (c == '{' || c == '"' || c == '[' || c == ']') return false;
      if (IsDigit(c) || c == '-') {
        std::string_view number = inner;
        ConsumeLiteral(&number, "-");
        while (!number.empty() && IsDigit(number[0])) number.remove_prefix(1);
        // dmesg's "[ 1234.567890]" has a fraction and a bracket; a date ("[2026-12-01 ...",
        // torchelastic's prefix) or a time ("[12:03:04") goes on with '-' or ':'; a JSON
        // array of numbers goes on with ',', ']' or a fraction and then ',' or ']'.
        bool dmesg = false;
        if (ConsumeLiteral(&number, ".")) {
          while (!number.empty() && IsDigit(number[0])) number.remove_prefix(1);
          dmesg = StartsWith(number, "]");
        }
        bool dated = StartsWith(number, "-") || StartsWith(number, ":");
        if (!dmesg && !dated) return false;
      }
    }
  }
  // Pickle protocol 0/1 is text-like: "cmodule\nname\n" (GLOBAL) or "(dp0\n" / "(lp0\n".
  if (t[0] == '(' && t.size() > 1 && (t[1] == 'd' || t[1] == 'l' || t[1] == 'S' || t[1] == 'I')) {
    return false;
  }
  if (t[0] == 'c') {
    size_t newline = t.find('\n');
    if (newline != std::string_view::npos && newline < 64) {
      std::string_view module = t.substr(1, newline - 1);
      bool identifier = !module.empty();
      for (char c : module) identifier = identifier && (IsIdentChar(c) || c == '.');
      if (identifier) return false;
    }
  }
  // A first line longer than the sample is still a log: the parser reads long lines in pieces.
  return true;
}

absl::Status ParseLogText(std::string_view path, std::string_view text, LogSet* out,
                          const LogParseOptions& options) {
  if (out == nullptr) return absl::InvalidArgumentError("ParseLogText: no output LogSet");
  FileParser parser(path, out, options);
  parser.Feed(text);
  parser.Finish();
  return absl::OkStatus();
}

absl::Status ParseLogStream(std::string_view path, std::FILE* stream, LogSet* out,
                            const LogParseOptions& options) {
  if (out == nullptr || stream == nullptr) {
    return absl::InvalidArgumentError("ParseLogStream: no stream or output LogSet");
  }
  FileParser parser(path, out, options);
  std::unique_ptr<char[]> chunk(new char[1 << 20]);
  while (true) {
    size_t n = std::fread(chunk.get(), 1, 1 << 20, stream);
    if (n > 0) parser.Feed(std::string_view(chunk.get(), n));
    if (n < (1 << 20)) {
      if (std::ferror(stream)) {
        parser.Finish();
        return absl::UnavailableError(Cat({path, ": read error: ", std::strerror(errno)}));
      }
      break;
    }
  }
  parser.Finish();
  return absl::OkStatus();
}

absl::StatusOr<LogSet> ParseLogFiles(const std::vector<std::string>& paths,
                                     const LogParseOptions& options) {
  LogSet logs;
  for (const std::string& path : paths) {
    absl::StatusOr<std::shared_ptr<const Buffer>> file = Buffer::ReadFile(path);
    if (!file.ok()) {
      logs.errors.push_back(Cat({path, ": ", std::string(file.status().message())}));
      logs.set_aside.push_back({path, std::string(file.status().message())});
      continue;
    }
    std::shared_ptr<const Buffer> bytes = *std::move(file);
    // Compression is recognized by magic bytes; anything else is read as it is.
    absl::StatusOr<Compression> compression = DetectCompression(bytes->bytes());
    if (compression.ok() && *compression != Compression::kNone) {
      ReadOptions read_options;
      read_options.max_decompressed_bytes = options.max_decompressed_bytes;
      read_options.max_expansion_ratio = options.max_expansion_ratio;
      absl::StatusOr<std::shared_ptr<const Buffer>> plain =
          Decompress(bytes->bytes(), *compression, read_options);
      if (!plain.ok()) {
        logs.errors.push_back(Cat({path, ": ", std::string(plain.status().message())}));
        logs.set_aside.push_back({path, std::string(plain.status().message())});
        continue;
      }
      bytes = *std::move(plain);
    }
    std::string_view head = LogHead(bytes->bytes(), 8192);
    if (!bytes->bytes().empty() && !LooksLikeLog(head)) {
      std::string why = DescribeNonLog(head);
      logs.errors.push_back(Cat({path, ": not a log: ", why}));
      logs.set_aside.push_back({path, Cat({"not a log: ", why})});
      continue;
    }
    FileParser parser(path, &logs, options);
    parser.Feed(bytes->bytes());
    parser.Finish();
  }
  return logs;
}

}  // namespace fr
