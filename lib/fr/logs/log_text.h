// Turning a log file's raw bytes into the text the line parser reads. Logs copied off a cluster
// are not always clean UTF-8: a node that crashed leaves the tail of its kernel log as NUL bytes
// (the blocks were allocated, the data never written), Windows tools and PowerShell redirection
// write UTF-16 with a byte order mark, and progress bars or binary junk put control bytes between
// the lines. Such a file still holds the line that explains the failure, so it is read for the
// text it holds instead of being refused as "binary".
//
//   LogTextDecoder decoder;
//   std::string scratch;
//   for (std::string_view chunk : chunks) parser.Feed(decoder.Decode(chunk, &scratch));
//   parser.Feed(decoder.Finish(&scratch));
//
// What is done, in order: UTF-16 (LE or BE, told by its byte order mark, or without one by its
// NUL bytes in every other position) becomes UTF-8; a UTF-8 byte order mark is dropped; runs of
// binary bytes (NUL and the C0 controls other than tab, line breaks, form feed and ESC, which
// colored output uses; DEL) are dropped, so that line numbers stay those an editor shows.
// Anything else, invalid UTF-8 included, is passed on as it is (the parser matches nothing on
// odd bytes, and event texts are made valid UTF-8).
#ifndef FR_LOGS_LOG_TEXT_H_
#define FR_LOGS_LOG_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace fr {

enum class LogEncoding : uint8_t { kUtf8, kUtf16Le, kUtf16Be };

// Decodes one file pushed in chunks of any size (a chunk may end inside a UTF-16 code unit or a
// surrogate pair). Not thread-safe; one decoder per file.
class LogTextDecoder {
 public:
  // The text of `bytes`, the next chunk of the file: `bytes` itself when nothing in it needs
  // changing (the common case costs one scan, no copy), else a view of `*scratch`, which is
  // overwritten. The view is valid until the next call with the same `scratch`.
  std::string_view Decode(std::string_view bytes, std::string* scratch);
  // What is left at the end of the file (half a UTF-16 code unit or a lone high surrogate
  // becomes U+FFFD); usually empty.
  std::string_view Finish(std::string* scratch);

  // Known once the first chunk was decoded.
  LogEncoding encoding() const { return encoding_; }
  // Binary bytes dropped (after UTF-16 decoding), and in how many runs.
  int64_t binary_bytes() const { return binary_bytes_; }
  int64_t binary_runs() const { return binary_runs_; }

 private:
  void DetectEncoding(std::string_view* bytes);
  void DecodeUtf16(std::string_view bytes, std::string* out);
  // Appends `text` without its binary bytes to `*out`.
  void AppendWithoutBinary(std::string_view text, std::string* out);

  bool started_ = false;
  std::string first_bytes_;  // the file's first bytes while fewer than 4 came
  LogEncoding encoding_ = LogEncoding::kUtf8;
  bool in_binary_run_ = false;
  int64_t binary_bytes_ = 0;
  int64_t binary_runs_ = 0;
  // UTF-16 state across chunks: a code unit's first byte, a high surrogate waiting for its pair.
  int pending_byte_ = -1;
  uint32_t pending_high_surrogate_ = 0;
  std::string utf16_out_;
};

// What the first bytes of a file (a few KB) hold as text, for judging whether it is a log:
// `text` is the decoded sample, and the counts say how much binary was dropped from it.
struct LogTextSample {
  std::string text;
  LogEncoding encoding = LogEncoding::kUtf8;
  int64_t binary_bytes = 0;
  int64_t binary_runs = 0;
  // Bytes of `text` that are not part of well-formed UTF-8.
  int64_t invalid_utf8_bytes = 0;
};
LogTextSample DecodeLogSample(std::string_view head);

// Whether a decoded sample reads as text: some text is left, binary runs are rare (NUL padding or
// a few stray controls are one run or a handful; random bytes put one every few bytes) and
// nearly all of it is well-formed UTF-8. When not, `*why` says what it looks like instead
// ("binary data: 1 byte in 9 is a control byte"), quoting nothing.
bool SampleIsText(const LogTextSample& sample, std::string* why = nullptr);

std::string_view LogEncodingName(LogEncoding encoding);  // "UTF-8", "UTF-16LE", "UTF-16BE"

// The first `size` bytes of a log's `content` after its leading NUL bytes, by which it is judged
// (LooksLikeLog): a log truncated in place while its writer went on at its old offset
// (logrotate's copytruncate) starts with a hole of NULs as long as what was cut.
std::string_view LogHead(std::string_view content, size_t size);

// Why a file whose first bytes are `head` is not read as a log, in a few words that quote
// nothing from it: "gzip data", "a pickle", "JSON", "an ELF core file or executable", "binary
// data: ...". For files LooksLikeLog refuses.
std::string DescribeNonLog(std::string_view head);

// Whether `head` is lines of text of some kind (not a known binary format, not blank): what a
// folder holding no dump may still give as a log, read as a paste would be, although its first
// lines are a program's own output (`{'loss': ...}`, progress bars) rather than log lines.
bool LooksLikeText(std::string_view head);

}  // namespace fr

#endif  // FR_LOGS_LOG_TEXT_H_
