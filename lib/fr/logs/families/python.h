// The log family of the worker's own Python process: tracebacks (followed per writer, since the
// lines of many ranks interleave), the exception that ends each, and the faults a worker prints
// on one line: CUDA errors and OOM, a segfault (faulthandler), a loss that is NaN. Its patterns
// are rows of the table in lib/fr/logs/line_table.cc; the tracebacks it follows line by line
// (line_table.cc's LineFamilies::HandleLine).
//
//   [rank0]: Traceback (most recent call last):
//   [rank0]:   File "/app/src/llamafactory/launcher.py", line 185, in <module>
//   [rank0]:     run_exp()
//   [rank0]: AttributeError: 'AcceleratorState' object has no attribute 'mixed_precision'. ...
#ifndef FR_LOGS_FAMILIES_PYTHON_H_
#define FR_LOGS_FAMILIES_PYTHON_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "fr/logs/families/ray.h"
#include "fr/logs/line_context.h"
#include "fr/logs/line_prefix.h"

namespace fr::logs_internal {

class PythonLines {
 public:
  // `ray` names the process a Ray Train worker's line came from (by pid); it must outlive this.
  PythonLines(LineContext* context, const RayLines* ray) : context_(context), ray_(ray) {}

  // Whether a traceback is being followed: its blank lines are part of it.
  bool following_tracebacks() const { return !tracebacks_.empty(); }

  // Follows "Traceback (most recent call last):", its frames, and the exception line that ends
  // it, per writer. True when the line belonged to a traceback and needs no other look.
  bool FollowTraceback(std::string_view line, std::string_view body);

  // Any other line: it ends its writer's finished traceback, and counts as printed after that
  // writer's last exception (a process that went on printing handled it).
  void NoteLineOfWriter(std::string_view body);

  // The end of the file: the tracebacks whose exception was read make their events.
  void Finish();

  // The table's recognizers: false when the line is none of their own.
  bool OnCudaOom(std::string_view line, std::string_view body);
  bool OnCudaError(std::string_view line, std::string_view body);
  // A native crash handler's report of the signal that killed its process: UCX's "[host:pid:0:tid]
  // Caught signal 7 (Bus error: nonexistent physical address)". Crash signals only.
  // An exception line whose traceback the paste cut ("RuntimeError: [.../pair.cc:598]
  // Connection closed by peer [10.0.0.5]:30872", "FloatingPointError: Loss became infinite or
  // NaN at iteration=1!"): Gloo's words and a trainer's non-finite loss check mean the same as
  // they would under a traceback.
  bool OnBareException(std::string_view line, std::string_view body);
  bool OnCaughtSignal(std::string_view line, std::string_view body);
  // Ray's wrapper of a task's own exception outside any traceback, as Ray Tune's "Failure # 1"
  // block prints it before the task's frames: "ray.exceptions.RayTaskError(RuntimeError):
  // ray::RayTrainWorker._RayTrainWorker__execute() (pid=3120093, ip=192.168.128.39, ...)". The
  // type in parentheses is what the worker raised; a paste cut before the worker's own exception
  // line still says that much.
  bool OnRayTaskError(std::string_view line, std::string_view body);
  // Gloo's check that a peer sent no more than the op expects ("[enforce fail at
  // gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 6232 vs 4"): the ranks ran a
  // collective with different sizes, or different collectives; the process aborts on it.
  bool OnGlooSizeMismatch(std::string_view line, std::string_view body);
  bool OnSegfault(std::string_view line, std::string_view body);
  bool OnLoss(std::string_view line, std::string_view body);

 private:
  struct Traceback {
    enum State { kFrames, kAfterException } state = kFrames;
    int64_t first_line = 0;
    LinePrefix prefix;  // of the first line; its views are not kept (see FollowTraceback)
    std::string host;
    // The last time printed before the traceback began: it is emitted only when it ends, maybe
    // many interleaved lines later.
    LogTime time_before;
    // The first time printed after its exception line (by any writer of the file): it is
    // emitted when a later line ends it, after that line's time went by.
    LogTime time_after;
    std::string exception_line;
    int blank_lines = 0;
    // Python's chain marker ("During handling of the above exception...") followed the
    // exception line: the next traceback continues this one.
    bool chained = false;
    bool outermost_frame_seen = false;
    bool in_launcher = false;  // the outermost frame is torchrun's or the elastic agent's
    // "function (file:line)" per frame line, outermost first (the innermost kMaxTracebackFrames).
    std::deque<std::string> frames;
  };

  int64_t WriterKey() const;
  std::array<int64_t, 2> ProcessKeys(const LinePrefix& prefix) const;
  bool TracebackLine(std::string_view line, std::string_view body);
  void CloseTracebacksOfProcess();
  void CountLineAfterException(std::string_view body);
  void EmitTraceback(const Traceback& tb);
  void NoteFiniteLoss();

  LineContext* context_;
  const RayLines* ray_;
  absl::flat_hash_map<int64_t, Traceback> tracebacks_;
  // Per writer, the last Python exception it printed (an index into the events), whose
  // `lines_after` count the writer's later lines.
  absl::flat_hash_map<int64_t, size_t> open_exception_of_writer_;
  // Per writer, the last non-finite loss it printed, whose `finite_losses_after` count the
  // finite losses the writer printed later.
  absl::flat_hash_map<int64_t, size_t> open_non_finite_of_writer_;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_PYTHON_H_
