#include "fr/logs/line_context.h"

#include <algorithm>
#include <cstddef>

#include "fr/base/utf8.h"
#include "fr/logs/group_tag.h"
#include "fr/logs/text_scan.h"

namespace fr::logs_internal {
namespace {

// Torchrun's --log-dir layout ".../attempt_0/3/stderr.log" names the local rank.
int64_t LocalRankFromPath(std::string_view path) {
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
  return RankOrUnknown(rank);
}

}  // namespace

std::string EventText(std::string_view line) {
  std::string text = ValidUtf8(line.substr(0, kMaxEventTextBytes));
  if (text.size() > kMaxEventTextBytes) {
    size_t cut = kMaxEventTextBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
  }
  return text;
}

std::string Cat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (std::string_view part : parts) out.append(part.data(), part.size());
  return out;
}

LineContext::LineContext(std::string_view path, LogSet* out, const LogParseOptions& options)
    : out_(out), options_(options) {
  file_index_ = static_cast<int32_t>(out_->files.size());
  first_event_ = out_->events.size();
  LogFile& file = out_->files.emplace_back();
  file.path = std::string(path);
  file.local_rank = LocalRankFromPath(path);
  file.highest_local_rank = file.local_rank;
}

LogEvent* LineContext::EmitAs(LogEventKind kind, std::string_view text, const LinePrefix& prefix,
                              int64_t line_no) {
  LogEvent* event;
  if (static_cast<int64_t>(out_->events.size() - first_event_) >= options_.max_events_per_file) {
    ++mutable_file().events_dropped;
    scratch_ = LogEvent();
    event = &scratch_;
  } else {
    event = &out_->events.emplace_back();
  }
  const LogFile& f = file();
  event->kind = kind;
  event->file = file_index_;
  event->line = line_no;
  event->rank = prefix.rank >= 0 ? prefix.rank : f.rank;
  event->local_rank = prefix.local_rank >= 0 ? prefix.local_rank : f.local_rank;
  event->host = prefix.host.empty() ? f.host : std::string(prefix.host);
  event->pid = prefix.pid;
  event->cuda_dev = prefix.cuda_dev;
  event->raw_time = prefix.time;
  if (event->raw_time.kind == LogTime::Kind::kNone) {
    event->nearby_time = last_time_;
    if (event != &scratch_) awaiting_next_time_.push_back(out_->events.size() - 1);
  }
  event->text = EventText(text);
  // ProcessGroupNCCL's tag says whose line it is within its group; in the default group that is
  // the global rank.
  if (GroupTag tag; ParseGroupTag(text, &tag)) {
    using Kind = LogEvent::GroupTagKind;
    event->group_rank = RankOrUnknown(tag.rank);
    event->group_tag = tag.is_default     ? Kind::kDefaultGroup
                       : tag.name.empty() ? Kind::kUnnamedGroup
                                          : Kind::kOtherGroup;
    if (event->rank < 0 && tag.is_default) event->rank = event->group_rank;
  }
  return event;
}

void LineContext::SetNextTime(LogEvent* event, const LogTime& next) {
  event->next_time = next;
  if (IsDropped(event)) return;
  size_t index = static_cast<size_t>(event - out_->events.data());
  std::erase(awaiting_next_time_, index);
}

void LineContext::MarkLauncher(LogEvent* event, Launcher launcher) {
  event->launcher = launcher;
  MarkFileLauncher(launcher);
}

void LineContext::MarkFileLauncher(Launcher launcher) {
  mutable_file().launchers |= LauncherBit(launcher);
}

void LineContext::NoteLineTime() {
  if (prefix_.time.kind == LogTime::Kind::kNone) return;
  last_time_ = prefix_.time;
  for (size_t index : awaiting_next_time_) out_->events[index].next_time = prefix_.time;
  awaiting_next_time_.clear();
}

void LineContext::SortEventsByLine() {
  std::stable_sort(out_->events.begin() + static_cast<std::ptrdiff_t>(first_event_),
                   out_->events.end(),
                   [](const LogEvent& a, const LogEvent& b) { return a.line < b.line; });
}

}  // namespace fr::logs_internal
