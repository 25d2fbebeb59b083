#include "fr/logs/families/slurm.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {

// "srun: error: node05: task 37: Killed" / "...: task 3: Exited with exit code 1" / "...: task
// 4: Out Of Memory". Under srun a task number is the global rank.
bool SlurmLines::OnSrunTask(std::string_view line, std::string_view body) {
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
  LogEvent* e = context_->Emit(kind, line);
  context_->MarkLauncher(e, Launcher::kSlurm);
  if (task >= 0) e->rank = RankOrUnknown(task);
  if (host.find(' ') == std::string_view::npos && !host.empty()) e->host = std::string(host);
  e->signal = signal;
  int64_t code = IntAfter(what, "exit code ", INT32_MIN);
  if (code != INT32_MIN) e->exit_code = ToInt32(code);
  e->reason = EventText(what);
  return true;
}

// "slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of your processes ..."
// and the older "Detected 2 oom-kill event(s) in step 3756240.batch cgroup."
bool SlurmLines::OnSlurmOom(std::string_view line, std::string_view body) {
  if (!Contains(body, "Detected ")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kSlurmOomEvent, line);
  e->reason = std::string(WordAfter(body, "StepId=", " "));
  if (e->reason.empty()) e->reason = std::string(WordAfter(body, " in step ", " "));
  if (!e->reason.empty() && e->reason.back() == '.') e->reason.pop_back();
  return true;
}

// "slurmstepd: error: *** JOB 123 ON node05 CANCELLED AT 2026-12-01T12:03:04 DUE TO TIME LIMIT
// ***". A STEP cancelled without a reason is srun ending the step after one of its tasks
// failed: the cascade, not a kill from outside, so it makes no event.
bool SlurmLines::OnSlurmCancel(std::string_view line, std::string_view body) {
  bool job = Contains(body, "*** JOB ");
  bool step = Contains(body, "*** STEP ");
  size_t due = body.find(" DUE TO ");
  if (!job && !step) return false;
  LogEvent* e = context_->Emit(LogEventKind::kHostKill, line);
  // The node, unless the line was redacted ("ON ... CANCELLED", as pasted in public issues).
  std::string_view host = WordAfter(body, " ON ", " ");
  if (std::any_of(host.begin(), host.end(),
                  [](char c) { return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); })) {
    e->host = std::string(host);
  }
  std::string_view at = body.substr(body.find("CANCELLED AT ") + 13);
  LogTime time;
  if (ConsumeIsoTime(&at, &time) && e->raw_time.kind == LogTime::Kind::kNone) {
    e->raw_time = time;
  }
  // A step cancelled for no stated reason: an operator's scancel, or srun ending the step after
  // one of its tasks failed; the verdict tells them apart by what else the logs hold.
  e->reason = job ? "cancelled" : "step cancelled";
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

}  // namespace fr::logs_internal
