// What a log family's recognizers see of the parser that reads one file (log_parser.cc): the
// line being read (its prefixes, its number, its file) and the one way to make an event of it.
// The parser's own work (splitting bytes into lines, the prefixes, the caps) stays behind it.
// Internal to lib/fr/logs.
//
//   bool KernelLines::OnXid(std::string_view line, std::string_view body) {
//     LogEvent* e = context_->Emit(LogEventKind::kXid, line);  // who and when: the prefix's
//     e->xid = ...;
//     return true;
//   }
#ifndef FR_LOGS_LINE_CONTEXT_H_
#define FR_LOGS_LINE_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "fr/logs/line_prefix.h"
#include "fr/logs/log_event.h"
#include "fr/logs/log_parser.h"

namespace fr::logs_internal {

// Event texts are cut to this many bytes, so that one hostile line cannot grow the report.
inline constexpr size_t kMaxEventTextBytes = 512;

// At most kMaxEventTextBytes of `line`, as valid UTF-8, cut on a character boundary.
std::string EventText(std::string_view line);

// Concatenation of string_views (Debian's Abseil StrCat takes absl::string_view, which is not
// std::string_view there).
std::string Cat(std::initializer_list<std::string_view> parts);

// `v`, or -1 (an event's "unknown") when it does not fit an int64_t.
inline int32_t ToInt32(int64_t v) {
  return v < INT32_MIN || v > INT32_MAX ? -1 : static_cast<int32_t>(v);
}

// One log file being parsed, as its recognizers see it. The parser (log_parser.cc) is the only
// subclass: it feeds the lines and keeps the current line's prefix up to date.
class LineContext {
 public:
  // Appends the LogFile of `path` to `out`; this file's events go to the end of out->events.
  // `out` and `options` must outlive the context.
  LineContext(std::string_view path, LogSet* out, const LogParseOptions& options);
  LineContext(const LineContext&) = delete;
  LineContext& operator=(const LineContext&) = delete;

  // Who printed the current line and when, as its prefixes say; `body` is the message after
  // them. Its views point into the current line: copy what must outlive it.
  const LinePrefix& prefix() const { return prefix_; }
  // The current line's number in the file, from 1.
  int64_t line_no() const { return line_no_; }
  // The file: its path, and the host and rank that its path or content named.
  const LogFile& file() const { return out_->files[file_index_]; }
  // The time of the last line that carried one.
  const LogTime& last_time() const { return last_time_; }

  // A new event for the current line, its text cut from `text`, with who and when from the
  // prefix (or the file). Once the file's cap is reached the event is a scratch one, counted
  // and thrown away (IsDropped): fill it all the same.
  LogEvent* Emit(LogEventKind kind, std::string_view text) {
    return EmitAs(kind, text, prefix_, line_no_);
  }
  // The same for something that ended on the current line but began earlier (a traceback, an
  // entry of an error table): who and when from `prefix`, at line `line_no`.
  LogEvent* EmitAs(LogEventKind kind, std::string_view text, const LinePrefix& prefix,
                   int64_t line_no);
  bool IsDropped(const LogEvent* event) const { return event == &scratch_; }
  // The untimed `event`, just emitted, is already followed by a timed line of the file (it
  // ended before the line that emitted it): `next` bounds it, not a later line's time.
  void SetNextTime(LogEvent* event, const LogTime& next);

  // The events of every file parsed into the LogSet so far, by index: families that amend an
  // event a later line completes keep its index. This file's first is first_event().
  size_t event_count() const { return out_->events.size(); }
  LogEvent& event(size_t index) { return out_->events[index]; }
  size_t first_event() const { return first_event_; }

  // `event` is `launcher`'s own report (a worker's death), and the file holds that launcher's
  // words.
  void MarkLauncher(LogEvent* event, Launcher launcher);
  // The file holds `launcher`'s words (a line of its own that is no report of a death).
  void MarkFileLauncher(Launcher launcher);

 protected:
  const LogParseOptions& options() const { return options_; }
  LogFile& mutable_file() { return out_->files[file_index_]; }
  LinePrefix& mutable_prefix() { return prefix_; }
  // A new physical line begins.
  void CountLine() {
    ++line_no_;
    ++mutable_file().lines;
  }
  // The current line's prefix is parsed: its time, when it has one, is the latest, and the
  // latest the untimed events before it can be.
  void NoteLineTime();
  // Events are made when what they report ends but dated by its first line: this file's events
  // in line order.
  void SortEventsByLine();

 private:
  LogSet* out_;
  const LogParseOptions& options_;
  int32_t file_index_ = 0;
  size_t first_event_ = 0;
  int64_t line_no_ = 0;
  LinePrefix prefix_;
  LogTime last_time_;
  // The untimed events waiting for the next timed line, their latest possible time.
  std::vector<size_t> awaiting_next_time_;
  LogEvent scratch_;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_LINE_CONTEXT_H_
