#include "fr/logs/families/torchrun.h"

#include <utility>

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {
namespace {

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

}  // namespace

// "failed (exitcode: -9) local_rank: 3 (pid: 4567) of binary: /usr/bin/python"
bool TorchrunLines::OnWorkerFailed(std::string_view line, std::string_view body) {
  LogEvent* e = context_->Emit(LogEventKind::kWorkerFailed, line);
  context_->MarkLauncher(e, Launcher::kTorchrun);
  int64_t code = IntAfter(body, "(exitcode: ", INT32_MIN);
  if (code != INT32_MIN) e->exit_code = ToInt32(code);
  if (code < 0 && code > -64) e->signal = static_cast<int32_t>(-code);
  int64_t local_rank = IntAfter(body, "local_rank: ");
  if (local_rank >= 0) e->local_rank = RankOrUnknown(local_rank);
  e->pid = ToInt32(IntAfter(body, "(pid: "));
  return true;
}

// "Received 15 death signal, shutting down workers": the elastic agent itself was signalled
// (scancel, preemption, a node draining, or srun ending the step after another task failed).
bool TorchrunLines::OnLauncherSignalled(std::string_view line, std::string_view body) {
  int64_t signal = IntAfter(body, "Received ");
  if (signal <= 0 || signal >= 64 || !Contains(body, "shutting down workers")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kHostKill, line);
  e->signal = static_cast<int32_t>(signal);
  e->reason = Cat({"the launcher received signal ", std::to_string(signal)});
  return true;
}

// "Sending process 4567 closing signal SIGTERM"
bool TorchrunLines::OnSignalSent(std::string_view line, std::string_view body) {
  if (!Contains(body, "Sending process ")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kSignalSent, line);
  context_->MarkFileLauncher(Launcher::kTorchrun);
  e->pid = ToInt32(IntAfter(body, "Sending process "));
  std::string_view name = WordAfter(body, "closing signal ", " ,.");
  e->signal = SignalFromName(name);
  e->reason = std::string(name);
  return true;
}

bool TorchrunLines::OnRendezvous(std::string_view line, std::string_view) {
  context_->Emit(LogEventKind::kRendezvous, line);
  return true;
}

bool TorchrunLines::OnLauncherStart(std::string_view line, std::string_view) {
  context_->Emit(LogEventKind::kLauncherStart, line);
  context_->MarkFileLauncher(Launcher::kTorchrun);
  return true;
}

// The ChildFailedError table: "Root Cause (first observed failure):" and "Failures:" sections
// of "[N]:" entries with "key : value" lines, ended by a "=====" rule.
bool TorchrunLines::OnTableStart(std::string_view, std::string_view body) {
  std::string_view t = Trim(body);
  if (t != "Failures:" && !StartsWith(t, "Root Cause (first observed failure)")) return false;
  FlushTableEntry();
  table_section_ = t == "Failures:" ? TableSection::kFailures : TableSection::kRootCause;
  table_idle_lines_ = 0;
  return true;
}

bool TorchrunLines::OnHeadlessTableEntry(std::string_view, std::string_view body) {
  std::string_view t = Trim(body);
  if (!ConsumeLiteral(&t, "rank")) return false;
  SkipSpaces(&t);
  if (!ConsumeLiteral(&t, ":")) return false;
  SkipSpaces(&t);
  int64_t rank = -1;
  if (!ConsumeInt(&t, &rank) || !StartsWith(TrimLeft(t), "(local_rank: ")) return false;
  FlushTable();
  table_section_ = TableSection::kFailures;
  table_entry_.open = true;
  table_entry_.first_line = context_->line_no();
  table_entry_.time = context_->prefix().time;
  return TableLine(body);
}

bool TorchrunLines::TableLine(std::string_view body) {
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
    const LinePrefix& prefix = context_->prefix();
    table_entry_.open = true;
    table_entry_.first_line = context_->line_no();
    table_entry_.time = prefix.time;
    if (prefix.rank >= 0) table_entry_.rank = prefix.rank;
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
      int64_t code = 0;
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

void TorchrunLines::FlushTableEntry() {
  if (!table_entry_.open) return;
  TableEntry entry = std::move(table_entry_);
  table_entry_ = TableEntry();
  // At the entry's "[N]:" line; the entry's own fields below say who and when.
  LogEvent* e =
      context_->EmitAs(table_section_ == TableSection::kRootCause ? LogEventKind::kRootCauseTable
                                                                  : LogEventKind::kWorkerFailed,
                       entry.text, context_->prefix(), entry.first_line);
  e->raw_time = entry.time;
  if (!entry.host.empty()) e->host = entry.host;
  if (entry.rank >= 0) e->rank = RankOrUnknown(entry.rank);
  if (entry.local_rank >= 0) e->local_rank = RankOrUnknown(entry.local_rank);
  context_->MarkLauncher(e, Launcher::kTorchrun);
  e->exit_code = entry.exit_code;
  e->signal = ToInt32(entry.signal);
  e->pid = ToInt32(entry.pid);
}

void TorchrunLines::FlushTable() {
  FlushTableEntry();
  table_section_ = TableSection::kNone;
  table_idle_lines_ = 0;
}

}  // namespace fr::logs_internal
