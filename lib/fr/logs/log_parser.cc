#include "fr/logs/log_parser.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "fr/base/buffer.h"
#include "fr/base/parallel_for.h"
#include "fr/logs/line_context.h"
#include "fr/logs/line_prefix.h"
#include "fr/logs/line_table.h"
#include "fr/logs/log_text.h"
#include "fr/logs/text_scan.h"
#include "fr/read/input_file.h"

namespace fr {
namespace {

using logs_internal::Cat;
using logs_internal::ConsumeLiteral;
using logs_internal::IsDigit;
using logs_internal::IsHex;
using logs_internal::IsIdentChar;
using logs_internal::kFormatCount;
using logs_internal::kFormatText;
using logs_internal::LineContext;
using logs_internal::LineFamilies;
using logs_internal::LineFormat;
using logs_internal::LineFormatName;
using logs_internal::LinePrefix;
using logs_internal::MpiTagLength;
using logs_internal::ParseLinePrefix;
using logs_internal::SplitTeeCopies;
using logs_internal::StartsWith;
using logs_internal::TrimLeft;
using logs_internal::WithoutAnsiAndRepeats;
using logs_internal::WithoutRepeatedMpiTags;

std::string LowerHex(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Parses one log, pushed in chunks: Feed() any number of times, then Finish(). It splits the
// bytes into lines and their prefixes; what the lines mean is the families' (line_table.h),
// which see the file through the LineContext it is.
class FileParser : private LineContext {
 public:
  FileParser(std::string_view path, LogSet* out, const LogParseOptions& options)
      : LineContext(path, out, options), families_(this) {}

  void Feed(std::string_view bytes) {
    mutable_file().bytes += static_cast<int64_t>(bytes.size());
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
      if (!carry_.empty() || carry_long_ || piece.size() > options().max_line_bytes) {
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
    // The last line stays alive until the end: the prefix points into it, and the table and
    // tracebacks flushed below are emitted with it.
    std::string last_line;
    if (!carry_.empty() || carry_long_) {
      last_line = std::move(carry_);
      carry_.clear();
      Line(last_line, carry_long_);
      carry_long_ = false;
      continuing_line_ = false;
    }
    families_.Finish();
    mutable_prefix() = LinePrefix();
    SortEventsByLine();
    int best = kFormatText;
    for (int format = 1; format < kFormatCount; ++format) {
      if (format_lines_[format] > format_lines_[best]) best = format;
    }
    mutable_file().format = LineFormatName(static_cast<LineFormat>(best));
  }

  // Adds `piece` to the line being carried. Whenever the line outgrows max_line_bytes, what it
  // holds so far is read as a piece of its own, cut after its last '\r' when it has one
  // (progress bars redraw a line with '\r', and what a dying process prints comes after the
  // last redraw), so that no part of a long line goes unread and memory stays bounded.
  void AppendToCarry(std::string_view piece) {
    const size_t max_bytes = std::max<size_t>(options().max_line_bytes, 1);
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
    if (!continuing_line_) CountLine();
    if (line.size() > options().max_line_bytes) {
      line = line.substr(0, options().max_line_bytes);
      long_line = true;
    }
    if (long_line && !continuing_line_) ++mutable_file().long_lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() && !families_.WantsBlankLines()) return;
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
    LinePrefix& prefix = mutable_prefix();
    ParseLinePrefix(line, &prefix);
    LogFile& file = mutable_file();
    file.launchers |= prefix.launchers;
    file.highest_local_rank = std::max(file.highest_local_rank, prefix.local_rank);
    families_.NameWriter(&prefix);
    NoteLineTime();
    if (prefix.format != kFormatText) ++format_lines_[prefix.format];
    families_.HandleLine(line, prefix.body);
  }

  LineFamilies families_;
  std::string carry_;
  // A line with mpirun's repeated tags taken out (WithoutRepeatedMpiTags).
  std::string mpi_line_;
  std::string ansi_line_;
  bool carry_long_ = false;
  // The line being read continues a piece already read (AppendToCarry): same line number.
  bool continuing_line_ = false;
  LogTextDecoder decoder_;
  std::string decoded_;  // the decoder's output when it had to change something
  int64_t format_lines_[kFormatCount] = {};
  // The logical lines of the current physical line; the prefix points into them until the next.
  std::vector<std::string> tee_pieces_;
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
  std::unique_ptr<char[]> chunk(new char[1 << 20]);
  // The first chunk decides whether this is a log at all, before anything is parsed.
  size_t n = std::fread(chunk.get(), 1, 1 << 20, stream);
  if (n < (1 << 20) && std::ferror(stream)) {
    return absl::UnavailableError(Cat({path, ": read error: ", std::strerror(errno)}));
  }
  std::string_view first(chunk.get(), n);
  bool visible = HasVisibleText(first);
  // Nothing visible in a full first chunk: a stream of blank lines may still bring text.
  if (!visible && n == (1 << 20)) visible = true;
  if (absl::Status text = CheckPastedLog(path, first, visible); !text.ok()) return text;
  FileParser parser(path, out, options);
  while (true) {
    if (n > 0) parser.Feed(std::string_view(chunk.get(), n));
    if (n < (1 << 20)) break;
    n = std::fread(chunk.get(), 1, 1 << 20, stream);
    if (n < (1 << 20) && std::ferror(stream)) {
      parser.Finish();
      return absl::UnavailableError(Cat({path, ": read error: ", std::strerror(errno)}));
    }
  }
  parser.Finish();
  return absl::OkStatus();
}

bool HasVisibleText(std::string_view text) {
  return text.find_first_not_of(" \t\r\n\f\v") != std::string_view::npos;
}

absl::Status CheckPastedLog(std::string_view path, std::string_view head, bool visible) {
  if (head.empty()) {
    return absl::InvalidArgumentError(Cat(
        {path, ": nothing was pasted (an empty input is no log, and no log shows no failure)"}));
  }
  LogTextSample sample = DecodeLogSample(LogHead(head, 4096));
  std::string why;
  if (!SampleIsText(sample, &why)) {
    return absl::InvalidArgumentError(
        Cat({path, ": not a log: ", why, " (paste a log's text, or give the job's folder)"}));
  }
  if (!visible) {
    return absl::InvalidArgumentError(
        Cat({path, ": only blank lines were pasted (no log, so no verdict)"}));
  }
  return absl::OkStatus();
}

namespace {

// Reads and parses the file at `path` alone into `out` (ParseLogFiles joins them).
void ParseOneLogFile(const std::string& path, const LogParseOptions& options, LogSet* out) {
  absl::StatusOr<std::shared_ptr<const Buffer>> file = Buffer::ReadFile(path);
  if (!file.ok()) {
    out->errors.push_back(Cat({path, ": ", std::string(file.status().message())}));
    out->set_aside.push_back({path, std::string(file.status().message())});
    return;
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
      out->errors.push_back(Cat({path, ": ", std::string(plain.status().message())}));
      out->set_aside.push_back({path, std::string(plain.status().message())});
      return;
    }
    bytes = *std::move(plain);
  }
  std::string_view head = LogHead(bytes->bytes(), 8192);
  if (!bytes->bytes().empty() && !LooksLikeLog(head) &&
      !(options.any_text_is_log && LooksLikeText(head))) {
    std::string why = DescribeNonLog(head);
    out->errors.push_back(Cat({path, ": not a log: ", why}));
    out->set_aside.push_back({path, Cat({"not a log: ", why})});
    return;
  }
  FileParser parser(path, out, options);
  parser.Feed(bytes->bytes());
  parser.Finish();
}

// Appends `part` to `out`: its files after out's, its events pointing at them.
void AppendLogSet(LogSet part, LogSet* out) {
  const int32_t first_file = static_cast<int32_t>(out->files.size());
  for (LogEvent& event : part.events) event.file += first_file;
  out->files.insert(out->files.end(), std::make_move_iterator(part.files.begin()),
                    std::make_move_iterator(part.files.end()));
  out->events.insert(out->events.end(), std::make_move_iterator(part.events.begin()),
                     std::make_move_iterator(part.events.end()));
  out->errors.insert(out->errors.end(), std::make_move_iterator(part.errors.begin()),
                     std::make_move_iterator(part.errors.end()));
  out->set_aside.insert(out->set_aside.end(), std::make_move_iterator(part.set_aside.begin()),
                        std::make_move_iterator(part.set_aside.end()));
}

}  // namespace

absl::StatusOr<LogSet> ParseLogFiles(const std::vector<std::string>& paths,
                                     const LogParseOptions& options) {
  // Each file is parsed on its own (a job's logs are hundreds of files on a few cores), then the
  // results are joined in the order given.
  std::vector<LogSet> parts(paths.size());
  ParallelFor(paths.size(), options.jobs,
              [&](size_t i) { ParseOneLogFile(paths[i], options, &parts[i]); });
  LogSet logs;
  size_t events = 0;
  for (const LogSet& part : parts) events += part.events.size();
  logs.events.reserve(events);
  for (LogSet& part : parts) {
    AppendLogSet(std::move(part), &logs);
    part = LogSet();
  }
  return logs;
}

}  // namespace fr
