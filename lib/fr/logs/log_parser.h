// The log stage: turns the logs a job already printed (torchrun and Slurm output, glog lines of
// ProcessGroupNCCL, NCCL_DEBUG=INFO output, kernel logs) into LogEvents, the evidence the verdict
// uses to name a root cause (log_event.h). Files are recognized by content, never by name.
//
//   FR_ASSIGN_OR_RETURN(LogSet logs, ParseLogFiles({"/job/slurm-123.out", "/job/dmesg.txt"}));
//   for (const LogEvent& event : logs.events) {
//     // event.kind == LogEventKind::kXid, event.host == "node05", event.xid == 79 ...
//   }
//
// Lines are scanned by hand (memchr to split, a few substring probes to reject), so that a
// gigabyte of NCCL INFO chatter costs about as much as grepping it. Memory is bounded by the
// events kept (LogParseOptions::max_events_per_file), never by the bytes read. Hostile input
// (huge lines, NUL bytes, invalid UTF-8, CRLF) is read without error: odd bytes simply match
// nothing, and event texts are cut to 512 bytes of valid UTF-8.
#ifndef FR_LOGS_LOG_PARSER_H_
#define FR_LOGS_LOG_PARSER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fr/logs/log_event.h"

namespace fr {

struct LogParseOptions {
  // Events kept per file; later ones are counted in LogFile::events_dropped. 100k events are
  // about 50 MB at worst, and a real failure says what matters in far fewer lines.
  int64_t max_events_per_file = 100000;
  // Only the first this many bytes of a line are looked at (LogFile::long_lines counts the
  // longer ones); the rest is skipped in linear time.
  size_t max_line_bytes = size_t{64} << 10;
  // Compressed logs (.gz / .zst, recognized by magic bytes) expand to at most this many bytes,
  // and to at most max_expansion_ratio times their size: repetitive NCCL chatter compresses far
  // better than dumps, and a log is only scanned (memory: the decompressed bytes, once).
  uint64_t max_decompressed_bytes = uint64_t{16} << 30;
  uint64_t max_expansion_ratio = 1000;
  // Any text is a log, as a paste is (LooksLikeText rather than LooksLikeLog): for the files of
  // a folder that holds logs and no dump.
  bool any_text_is_log = false;
  // Threads for ParseLogFiles (0: one per core); files are parsed apart and their results joined
  // in the order given, so the LogSet does not depend on it.
  int jobs = 0;
};

// Whether `head` (the first few KB of a file) is text that a log parser should read: mostly
// printable, newline separated, and not a flight-recorder dump (pickle, JSON) or a compressed
// file. Compressed logs are recognized after decompression, by the caller.
bool LooksLikeLog(std::string_view head);

// A PCI address as "dddd:bb:dd" (domain:bus:device, lower case) from what NCCL, the driver or
// nvidia-smi print: "0000:3b:00.0", "00000000:3B:00.0", "PCI:0000:3b:00", or NCCL's busId
// integer in hex ("3b000": domain << 20 | bus << 12 | device << 4 | function). Empty when it is
// none of these. LogEvent::bus_id holds this form.
std::string NormalizeBusId(std::string_view text);

// The name a pasted log goes by in reports (evidence lines' `file`), whether it came on the
// CLI's standard input ("fr-analyze analyze -") or as text through Python (analyze_log): one
// name, so a report of the same paste reads the same from either.
inline constexpr std::string_view kPastedLogName = "<pasted>";

// Parses `text`, the whole content of the log at `path` (kPastedLogName for a paste), appending one
// LogFile and its events to `out` (the file's index is its position in out->files). Never fails
// on content; the Status is for a null `out`.
absl::Status ParseLogText(std::string_view path, std::string_view text, LogSet* out,
                          const LogParseOptions& options = {});

// Whether one pasted log (standard input, Python's analyze_log) holds a log at all: an empty
// paste, blank lines only, or binary bytes are no log, and no log is no healthy log.
// `head`: its first bytes (a few KB are enough); `visible`: whether any byte other than white
// space was pasted. InvalidArgumentError naming `path` and what it holds instead.
absl::Status CheckPastedLog(std::string_view path, std::string_view head, bool visible);

// Whether `text` holds a byte that is not white space.
bool HasVisibleText(std::string_view text);

// Reads `stream` to its end in bounded chunks (standard input for "fr-analyze ... -") and parses
// it as the log `path`. Memory stays bounded by the events kept, however long the stream.
// InvalidArgumentError (CheckPastedLog) when the stream holds no log's text; nothing is parsed
// then.
absl::Status ParseLogStream(std::string_view path, std::FILE* stream, LogSet* out,
                            const LogParseOptions& options = {});

// Reads and parses each of `paths` (plain, gzip or zstd). A file that cannot be read, or that is
// not text, is listed in LogSet::errors as "path: reason" and the others are still parsed.
absl::StatusOr<LogSet> ParseLogFiles(const std::vector<std::string>& paths,
                                     const LogParseOptions& options = {});

}  // namespace fr

#endif  // FR_LOGS_LOG_PARSER_H_
