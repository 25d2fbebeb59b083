#include "fr/logs/families/python.h"

#include <algorithm>
#include <optional>

#include "fr/logs/families/store.h"
#include "fr/logs/text_scan.h"

namespace fr::logs_internal {
namespace {

// Distinct writers (ranks) whose Python tracebacks are followed at once; a hostile file that
// names a new rank on every line cannot grow the map past this.
constexpr size_t kMaxTracebackWriters = 4096;
// Frames kept per traceback (the innermost): where it raised and what called it.
constexpr size_t kMaxTracebackFrames = 16;

// '  File "/a/train.py", line 93, in inject' as "inject (/a/train.py:93)"; "" when the line is not
// a frame line.
std::string FrameOf(std::string_view body) {
  std::string_view rest = TrimLeft(body);
  if (!StartsWith(rest, "File \"")) return "";
  rest.remove_prefix(6);
  size_t quote = rest.find('"');
  if (quote == std::string_view::npos) return "";
  std::string_view file = rest.substr(0, quote);
  rest.remove_prefix(quote + 1);
  int64_t line = IntAfter(rest, ", line ");
  size_t in = rest.find(", in ");
  if (line < 0 || in == std::string_view::npos) return "";
  std::string_view function = Trim(rest.substr(in + 5));
  return EventText(Cat({function, " (", file, ":", std::to_string(line), ")"}));
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

bool IsExceptionType(std::string_view type) {
  if (type.empty() || IsDigit(type[0]) || type[0] == '.') return false;
  for (char c : type) {
    if (!IsIdentChar(c) && c != '.') return false;
  }
  return true;
}

// Gloo says what it waited for in the exception itself, whatever exception type carries it: a
// timeout is a victim's collective timeout ("[.../unbound_buffer.cc:81] Timed out waiting
// 10000ms for recv operation to complete"), a closed or reset connection a victim's view of its
// peer ("[.../pair.cc:534] Connection closed by peer [10.0.0.5]:10895", "Read error
// [10.0.0.5]:25266: Connection reset by peer").
// CUDA's "invalid device ordinal": a process asked for a GPU it cannot see (torch.cuda.set_device
// or a tensor's .to("cuda:N") at start-up, with more processes on the node than GPUs visible to
// each). A launch that does not fit the node, not a device fault: the job never formed.
bool IsNoSuchGpu(std::string_view message) {
  return Contains(message, "CUDA error") && Contains(message, "invalid device ordinal");
}

void DescribeNoSuchGpu(LogEvent* e) {
  e->failed_step = "select its GPU";
  e->reason = "invalid device ordinal: more processes on the node than GPUs visible to each";
}

std::optional<LogEventKind> GlooErrorKind(std::string_view message) {
  if (Contains(message, "Timed out waiting ") && Contains(message, "ms for ")) {
    return LogEventKind::kWatchdogTimeout;
  }
  if (Contains(message, "by peer [") || Contains(message, "Read error [") ||
      Contains(message, "Write error [")) {
    return LogEventKind::kRemotePeerGone;
  }
  return std::nullopt;
}

// Gloo's enforce on a message longer than the receiving op ("op.preamble.length <= op.nbytes.
// 6232 vs 4": what the peer sent, then what this rank's op holds) as a reason: the ranks are not
// in the same collective with the same sizes. Empty when `message` is not that check.
std::string GlooSizeMismatchReason(std::string_view message) {
  constexpr std::string_view kCheck = "op.preamble.length <= op.nbytes";
  size_t at = message.find(kCheck);
  if (at == std::string_view::npos) return "";
  std::string_view rest = message.substr(at + kCheck.size());
  int64_t sent = IntAfter(rest, ". ");
  int64_t expected = IntAfter(rest, " vs ");
  std::string sizes = sent >= 0 && expected >= 0
                          ? Cat({": a peer sent ", std::to_string(sent),
                                 " bytes where this rank's op takes ", std::to_string(expected)})
                          : "";
  return EventText(
      Cat({"gloo::EnforceNotMet (a collective's sizes differ across ranks", sizes, ")"}));
}

// The timeout waited for, or the peer Gloo lost ("[10.0.0.5]:10895" -> "10.0.0.5:10895").
void DescribeGlooError(std::string_view message, LogEvent* e) {
  if (e->kind == LogEventKind::kWatchdogTimeout) {
    e->timeout_ms = IntAfter(message, "Timed out waiting ");
    return;
  }
  size_t open = message.find('[', message.find(" error [") != std::string_view::npos
                                      ? message.find(" error [")
                                      : message.find("by peer ["));
  size_t close = open == std::string_view::npos ? open : message.find(']', open);
  if (close != std::string_view::npos) {
    std::string_view port = WordAfter(message.substr(close), "]:", " :,");
    e->peer_address =
        EventText(Cat({message.substr(open + 1, close - open - 1), port.empty() ? "" : ":", port}));
  }
}

// A trainer's own check of its loss, raised: detectron2's "FloatingPointError: Loss became
// infinite or NaN at iteration=1!", and any FloatingPointError that speaks of a NaN or inf.
bool IsNonFiniteLossError(std::string_view type, std::string_view message) {
  if (!EndsWith(type, "FloatingPointError")) return false;
  return Contains(message, "NaN") || Contains(message, "nan") || Contains(message, "infinite") ||
         Contains(message, " inf");
}

}  // namespace

// --- Tracebacks ---------------------------------------------------------------------------------

// Who a line belongs to for following a traceback: the rank its prefix names, else the file.
int64_t PythonLines::WriterKey() const {
  const LinePrefix& prefix = context_->prefix();
  if (int64_t ray = ray_->WorkerKey(prefix); ray >= 0) return ray;
  if (prefix.rank >= 0) return prefix.rank;
  if (prefix.local_rank >= 0) return (int64_t{1} << 40) + prefix.local_rank;
  return -1;
}

// The process a line came from, by each name its prefix gives: torchrun's `--tee` prints a
// worker's glog and traceback lines as "[default0]:[rank0]:..." and its plain prints as
// "[default0]:...", so the rank and the local rank each name it.
// A line with neither is the file's own process only in a one-rank file (a combined console
// without prefixes interleaves many processes, which cannot be told apart).
std::array<int64_t, 2> PythonLines::ProcessKeys(const LinePrefix& prefix) const {
  constexpr int64_t kNone = INT64_MIN;
  if (int64_t ray = ray_->WorkerKey(prefix); ray >= 0) return {ray, kNone};
  if (prefix.rank < 0 && prefix.local_rank < 0) {
    return {context_->file().rank >= 0 ? -1 : kNone, kNone};
  }
  return {prefix.rank >= 0 ? prefix.rank : kNone,
          prefix.local_rank >= 0 ? (int64_t{1} << 40) + prefix.local_rank : kNone};
}

bool PythonLines::FollowTraceback(std::string_view line, std::string_view body) {
  if (tracebacks_.empty() && !StartsWith(body, "Traceback (most recent call last)")) {
    return false;
  }
  if (context_->prefix().time.kind != LogTime::Kind::kNone) {
    for (auto& [writer, tb] : tracebacks_) {
      if (tb.state == Traceback::kAfterException && tb.time_after.kind == LogTime::Kind::kNone) {
        tb.time_after = context_->prefix().time;
      }
    }
  }
  return TracebackLine(line, body);
}

void PythonLines::NoteLineOfWriter(std::string_view body) {
  CloseTracebacksOfProcess();
  CountLineAfterException(body);
}

void PythonLines::Finish() {
  for (auto& [writer, traceback] : tracebacks_) {
    if (traceback.state == Traceback::kAfterException) EmitTraceback(traceback);
  }
  tracebacks_.clear();
}

// A line of a process whose traceback is finished but still open under another of its names
// (its exception line said "[default0]:[rank0]: KeyError", this line only "[default0]:")
// ends that traceback: the process went on printing.
void PythonLines::CloseTracebacksOfProcess() {
  if (tracebacks_.empty()) return;
  std::array<int64_t, 2> keys = ProcessKeys(context_->prefix());
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
void PythonLines::CountLineAfterException(std::string_view body) {
  if (open_exception_of_writer_.empty() || Trim(body).empty()) return;
  for (int64_t key : ProcessKeys(context_->prefix())) {
    if (key == INT64_MIN) continue;
    auto it = open_exception_of_writer_.find(key);
    if (it == open_exception_of_writer_.end()) continue;
    LogEvent& exception = context_->event(it->second);
    if (exception.lines_after < INT32_MAX) ++exception.lines_after;
    return;
  }
}

bool PythonLines::TracebackLine(std::string_view line, std::string_view body) {
  int64_t key = WriterKey();
  auto it = tracebacks_.find(key);
  bool starts = StartsWith(body, "Traceback (most recent call last)");
  if (starts) {
    if (it != tracebacks_.end() && it->second.state == Traceback::kAfterException) {
      if (it->second.chained) {
        // A chained exception continues the same traceback; only its last exception counts.
        it->second.state = Traceback::kFrames;
        it->second.chained = false;
        it->second.frames.clear();
        return true;
      }
      // No chain marker: another traceback (the same writer's next exception, or another
      // process printing without a prefix). The finished one stands, even if this one is cut.
      EmitTraceback(it->second);
    }
    if (it == tracebacks_.end()) {
      if (tracebacks_.size() >= kMaxTracebackWriters) return true;
      it = tracebacks_.try_emplace(key).first;
    }
    const LinePrefix& prefix = context_->prefix();
    Traceback& tb = it->second;
    tb = Traceback();
    tb.first_line = context_->line_no();
    tb.time_before = context_->last_time();
    tb.prefix = prefix;
    tb.prefix.body = {};
    tb.host = std::string(prefix.host);
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
    if (body.empty() || body[0] == ' ' || body[0] == '\t') {
      if (std::string frame = FrameOf(body); !frame.empty()) {
        if (tb.frames.size() == kMaxTracebackFrames) tb.frames.pop_front();
        tb.frames.push_back(std::move(frame));
      }
      return true;
    }
    size_t colon = body.find(':');
    std::string_view type = body.substr(0, colon);
    if (!IsExceptionType(Trim(type))) {
      // Not Python's output after all (another writer without a prefix): give up on it.
      tracebacks_.erase(it);
      return false;
    }
    tb.exception_line = std::string(line.substr(0, kMaxEventTextBytes * 2));
    tb.state = Traceback::kAfterException;
    tb.blank_lines = 0;
    return true;
  }
  // After the exception line: a chain marker keeps the traceback open, anything else ends it.
  if (Trim(body).empty() && ++tb.blank_lines <= 2) return true;
  if (StartsWith(body, "During handling of the above exception") ||
      StartsWith(body, "The above exception was the direct cause")) {
    tb.chained = true;
    return true;
  }
  EmitTraceback(tb);
  tracebacks_.erase(it);
  return false;
}

// One event for a finished traceback, dated by its first line, kind by its exception: a CUDA
// OOM or CUDA error is that fault; torch's distributed errors are the cascade and add nothing
// the glog lines did not say, except a peer that went away.
void PythonLines::EmitTraceback(const Traceback& tb) {
  LinePrefix exception_prefix;
  ParseLinePrefix(tb.exception_line, &exception_prefix);
  std::string_view body = exception_prefix.body;
  size_t colon = body.find(':');
  std::string_view type = Trim(body.substr(0, colon));
  std::string_view message = colon == std::string_view::npos ? "" : body.substr(colon + 1);
  LogEventKind kind = LogEventKind::kPythonException;
  if (std::optional<LogEventKind> gloo = GlooErrorKind(message)) {
    kind = *gloo;
  } else if (IsNonFiniteLossError(type, message)) {
    kind = LogEventKind::kNonFiniteLoss;
  } else if (Contains(type, "OutOfMemoryError") || Contains(message, "CUDA out of memory")) {
    kind = LogEventKind::kCudaOom;
  } else if (IsNoSuchGpu(message)) {
    kind = LogEventKind::kInitFailure;
  } else if (Contains(message, "CUDA error") || Contains(message, "illegal memory access") ||
             Contains(message, "device-side assert") || Contains(message, "unhandled cuda error")) {
    kind = LogEventKind::kCudaError;
  } else if (Contains(message, "remote process exited")) {
    kind = LogEventKind::kRemotePeerGone;
  } else if (IsStoreBarrierFault(message) || IsStoreListenFailure(message) ||
             EndsWith(type, "RendezvousTimeoutError") ||
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
  LinePrefix first_prefix = tb.prefix;
  first_prefix.host = tb.host;
  LogEvent* e = context_->EmitAs(kind, tb.exception_line, first_prefix, tb.first_line);
  if (e->raw_time.kind == LogTime::Kind::kNone) {
    e->nearby_time = tb.time_before;
    if (tb.time_after.kind != LogTime::Kind::kNone) context_->SetNextTime(e, tb.time_after);
  }
  e->reason = std::string(type);
  if (std::string mismatch = GlooSizeMismatchReason(message); !mismatch.empty()) {
    e->reason = mismatch;
    e->reports_mismatch = true;
  }
  e->in_launcher = tb.in_launcher || Contains(tb.exception_line, "torch/distributed/elastic/");
  e->stack.assign(tb.frames.rbegin(), tb.frames.rend());
  if (kind == LogEventKind::kPythonException && !context_->IsDropped(e)) {
    // What the writer prints after it tells a logged exception from a death.
    for (int64_t key : ProcessKeys(tb.prefix)) {
      if (key != INT64_MIN) open_exception_of_writer_[key] = context_->event_count() - 1;
    }
  }
  if (kind == LogEventKind::kInitFailure && IsNoSuchGpu(message)) {
    DescribeNoSuchGpu(e);
  } else if (kind == LogEventKind::kInitFailure && IsStoreBarrierFault(message)) {
    DescribeStoreBarrierFault(message, e);
  } else if (kind == LogEventKind::kInitFailure && IsStoreListenFailure(message)) {
    DescribeStoreListenFailure(message, e);
  } else if (kind == LogEventKind::kInitFailure) {
    e->peer_address = StoreAddress(message);
  } else if (kind == LogEventKind::kWatchdogTimeout || kind == LogEventKind::kRemotePeerGone) {
    DescribeGlooError(message, e);
  }
  if (kind == LogEventKind::kCudaOom) {
    size_t at = message.find("Tried to allocate ");
    if (at != std::string_view::npos) e->bytes = ParseSize(message.substr(at + 18));
  } else if (kind == LogEventKind::kCudaError) {
    size_t at = message.find("CUDA error: ");
    if (at != std::string_view::npos) e->reason = EventText(Trim(message.substr(at + 12)));
  }
}

// --- Faults printed on one line -----------------------------------------------------------------

bool PythonLines::OnCudaOom(std::string_view line, std::string_view body) {
  if (!AnyBare(body, {"CUDA out of memory", "CUDA error: out of memory"})) return false;
  LogEvent* e = context_->Emit(LogEventKind::kCudaOom, line);
  size_t at = body.find("Tried to allocate ");
  if (at != std::string_view::npos) e->bytes = ParseSize(body.substr(at + 18));
  e->cuda_dev = ToInt32(IntAfter(body, "GPU ", e->cuda_dev));
  return true;
}

bool PythonLines::OnCudaError(std::string_view line, std::string_view body) {
  if (!AnyBare(body, {"CUDA error", "illegal memory access", "device-side assert",
                      "unhandled cuda error"})) {
    return false;
  }
  // The hint torch prints under every CUDA error ("Compile with `TORCH_USE_CUDA_DSA` to enable
  // device-side assertions.") is no error of its own.
  if (Contains(body, "TORCH_USE_CUDA_DSA")) return false;
  if (IsNoSuchGpu(body)) {
    DescribeNoSuchGpu(context_->Emit(LogEventKind::kInitFailure, line));
    return true;
  }
  LogEvent* e = context_->Emit(LogEventKind::kCudaError, line);
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

bool PythonLines::OnSegfault(std::string_view line, std::string_view body) {
  if (!AnyBare(body, {"Segmentation fault", "SIGSEGV"})) return false;
  // mpirun's sentence about another process ("mpirun noticed that process rank 2 ... exited on
  // signal 11 (Segmentation fault)."), printed by a worker: that worker did not crash.
  if (Contains(body, "noticed that process rank ")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kSegfault, line);
  e->signal = 11;
  int64_t pid = IntAfter(body, "received by PID ");
  if (pid >= 0) e->pid = ToInt32(pid);
  return true;
}

bool PythonLines::OnCaughtSignal(std::string_view line, std::string_view body) {
  int64_t signal = IntAfter(body, "Caught signal ");
  if (signal != 4 && signal != 7 && signal != 8 && signal != 11) return false;
  // The handler's own words follow the number: "(Segmentation fault: ...)", "(Bus error: ...)".
  std::string_view rest = body.substr(body.find("Caught signal ") + 14);
  if (!Contains(rest.substr(0, 8), " (")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kSegfault, line);
  e->signal = static_cast<int32_t>(signal);
  e->reason = EventText(WordAfter(rest, "(", ":)"));
  // UCX's prefix "[host:pid:thread:tid]" names the process when no other prefix did (the line,
  // since a prefix reader may have taken the bracket for a tag of its own).
  std::string_view before = line.substr(0, line.find("Caught signal "));
  size_t open = before.rfind('[');
  std::string_view t = open == std::string_view::npos ? std::string_view() : before.substr(open);
  if (e->pid < 0 && ConsumeLiteral(&t, "[")) {
    std::string_view host = t.substr(0, t.find(':'));
    if (host.size() < t.size() && !host.empty() && host.size() <= 64) {
      if (e->host.empty()) e->host = std::string(host);
      t.remove_prefix(host.size() + 1);
      int64_t pid = -1;
      if (ConsumeInt(&t, &pid) && pid > 0) e->pid = ToInt32(pid);
    }
  }
  return true;
}

bool PythonLines::OnGlooSizeMismatch(std::string_view line, std::string_view body) {
  std::string reason = GlooSizeMismatchReason(body);
  if (reason.empty()) return false;
  LogEvent* e = context_->Emit(LogEventKind::kPythonException, line);
  e->reason = std::move(reason);
  e->reports_mismatch = true;
  return true;
}

bool PythonLines::OnBareException(std::string_view line, std::string_view body) {
  size_t colon = body.find(": ");
  if (colon == std::string_view::npos) return false;
  std::string_view type = Trim(body.substr(0, colon));
  if (!IsExceptionType(type)) return false;
  std::string_view message = body.substr(colon + 2);
  if (std::optional<LogEventKind> gloo = GlooErrorKind(message)) {
    DescribeGlooError(message, context_->Emit(*gloo, line));
    return true;
  }
  if (IsNonFiniteLossError(type, message)) {
    context_->Emit(LogEventKind::kNonFiniteLoss, line)->reason = std::string(type);
    return true;
  }
  return false;
}

bool PythonLines::OnRayTaskError(std::string_view line, std::string_view body) {
  size_t colon = body.find(": ");
  if (colon == std::string_view::npos) return false;
  std::string_view type = Trim(body.substr(0, colon));
  size_t open = type.find("RayTaskError(");
  if (open == std::string_view::npos || !EndsWith(type, ")") ||
      !IsExceptionType(type.substr(0, open + 12))) {
    return false;
  }
  std::string_view raised = type.substr(open + 13, type.size() - open - 14);
  // Another wrapper (a distributed error, a Ray actor's death) says nothing of its own: the
  // lines that do are read where they are.
  if (!IsExceptionType(raised) || Contains(raised, "Dist") || Contains(raised, "Ray") ||
      Contains(raised, "ActorDied") || Contains(raised, "WorkerGroup") ||
      Contains(raised, "ChildFailed")) {
    return false;
  }
  LogEvent* e = context_->Emit(LogEventKind::kPythonException, line);
  e->reason = std::string(raised);
  e->pid = ToInt32(IntAfter(body, "(pid=", e->pid));
  return true;
}

void PythonLines::NoteFiniteLoss() {
  auto it = open_non_finite_of_writer_.find(WriterKey());
  if (it == open_non_finite_of_writer_.end()) return;
  LogEvent& loss = context_->event(it->second);
  if (loss.finite_losses_after < INT32_MAX) ++loss.finite_losses_after;
}

// "loss: nan", "loss=inf", "Loss is NaN", "'loss': nan"; and the finite losses after one.
bool PythonLines::OnLoss(std::string_view line, std::string_view body) {
  size_t at = 0;
  for (int probes = 0; probes < 8; ++probes) {
    at = body.find("oss", at);
    if (at == std::string_view::npos) return false;
    size_t end = at + 3;
    at = end;
    if (end < 4 || (body[end - 4] != 'l' && body[end - 4] != 'L')) continue;
    std::string_view t = body.substr(end);
    size_t skip = 0;
    while (
        skip < t.size() && skip < 8 &&
        (t[skip] == ' ' || t[skip] == ':' || t[skip] == '=' || t[skip] == '\'' || t[skip] == '"')) {
      ++skip;
    }
    t.remove_prefix(skip);
    if (StartsWith(t, "is ")) t.remove_prefix(3);
    ConsumeLiteral(&t, "-");
    if (t.size() < 3) continue;
    char a = t[0] | 0x20, b = t[1] | 0x20, c = t[2] | 0x20;
    bool non_finite = (a == 'n' && b == 'a' && c == 'n') || (a == 'i' && b == 'n' && c == 'f');
    if (!non_finite) {
      // A finite loss printed after the writer's non-finite one: training went on (a dynamic
      // loss scaler skipped the step); the earlier NaN stopped nothing.
      if (IsDigit(t[0]) || (t[0] == '.' && IsDigit(t[1]))) NoteFiniteLoss();
      continue;
    }
    if (t.size() > 3 && IsIdentChar(t[3]) && (t[3] | 0x20) != 'i') continue;
    LogEvent* e = context_->Emit(LogEventKind::kNonFiniteLoss, line);
    if (!context_->IsDropped(e))
      open_non_finite_of_writer_[WriterKey()] = context_->event_count() - 1;
    return true;
  }
  return false;
}

}  // namespace fr::logs_internal
