#include "fr/logs/families/kernel.h"

#include <string>
#include <utility>

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {
namespace {

// Lines between the kernel's "oom-kill:" summary and its "Killed process" line that still count
// as the same kill.
constexpr int64_t kOomMergeLines = 64;

}  // namespace

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
bool KernelLines::OnXid(std::string_view line, std::string_view body) {
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
  LogEvent* e = context_->Emit(LogEventKind::kXid, line);
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
  // The driver names the fault a cleanup follows: "45, pid=1818990, name=python3, Ch 00000001
  // caused by previous Xid 149". That earlier Xid is what happened to the GPU.
  int64_t previous = IntAfter(t, "caused by previous Xid ");
  if (previous > 0 && previous < 100000 && previous != xid) {
    e->reason = EventText(Cat({"Xid ", std::to_string(xid), " after it: ", Trim(t)}));
    e->xid = ToInt32(previous);
  }
  return true;
}

// "Out of memory: Killed process 1234 (python) total-vm:..kB, anon-rss:..kB, ...", the cgroup
// form "Memory cgroup out of memory: Killed process ...", and the summary
// "oom-kill:constraint=...,task=python,pid=1234,uid=1000" printed just before.
bool KernelLines::OnHostOom(std::string_view line, std::string_view body) {
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
  const LinePrefix& prefix = context_->prefix();
  std::string host = prefix.host.empty() ? context_->file().host : std::string(prefix.host);
  if (last_oom_event_ >= context_->first_event() && last_oom_event_ < context_->event_count()) {
    LogEvent& previous = context_->event(last_oom_event_);
    if (previous.pid == pid && previous.host == host &&
        context_->line_no() - last_oom_line_ <= kOomMergeLines) {
      if (bytes >= 0) {
        previous.bytes = bytes;
        previous.text = EventText(line);
      }
      last_oom_event_ = SIZE_MAX;
      return true;
    }
  }
  LogEvent* e = context_->Emit(LogEventKind::kHostOom, line);
  e->pid = ToInt32(pid);
  e->bytes = bytes;
  e->reason = std::string(name);
  if (!context_->IsDropped(e)) last_oom_event_ = context_->event_count() - 1;
  last_oom_line_ = context_->line_no();
  return true;
}

// "rtc_cmos 00:04: setting system clock to 2025-03-16T06:31:14 UTC (1742106674)": the epoch
// seconds in parentheses when present (exact), else the ISO time.
bool KernelLines::OnBootClock(std::string_view line, std::string_view body) {
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
  context_->Emit(LogEventKind::kBootClock, line)->stated_ns = stated;
  return true;
}

}  // namespace fr::logs_internal
