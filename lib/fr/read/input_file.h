// Reading one dump file from disk: read it (Buffer::ReadFile), recognise compression by its magic
// bytes (not by the file name), decompress within bounds, and tell pickle from JSON.
//
//   FR_ASSIGN_OR_RETURN(InputFile file, ReadInputFile("/dumps/nccl_trace_rank_3.zst"));
//   // file.bytes: the decompressed dump; file.encoding: kPickle
//
// Uncompressed files are used as read, without a copy: decoded strings point straight into them.
#ifndef FR_READ_INPUT_FILE_H_
#define FR_READ_INPUT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fr/base/buffer.h"

namespace fr {

enum class Compression : uint8_t { kNone, kZstd, kGzip };
enum class Encoding : uint8_t { kPickle, kJson };

std::string_view CompressionName(Compression compression);  // "none", "zstd", "gzip"
std::string_view EncodingName(Encoding encoding);           // "pickle", "json"

struct ReadOptions {
  // Decompressed size limit: a dump larger than this, or a compressed file that expands more than
  // max_expansion_ratio times, is refused (a corrupt or hostile archive must not exhaust memory).
  // The ratio is not enforced below 1 MiB of output (tiny archives may expand a lot, harmlessly).
  // The decoder never holds more than the limit (+1 byte) of output.
  uint64_t max_decompressed_bytes = uint64_t{4} << 30;
  // Real dumps compress 6-25x (gzip -9, zstd -19 --long, pickle and JSON alike). The limit is the
  // decompressed bytes' own cost and, more, what decoding them may cost (up to 16 bytes kept per
  // byte read): at 1000x a 216 KB .gz of "{}," became 216 MB of JSON and 3.4 GB of memory before
  // it was refused; at 100x it is refused after 22 MB. Logs, which are only scanned, allow more
  // (LogParseOptions).
  uint64_t max_expansion_ratio = 100;  // 0: no ratio limit
  // false: a path whose last component is a symbolic link is refused (O_NOFOLLOW). The loader
  // opens what discovery resolved and checked, so that a link put in place after discovery
  // cannot make it read a file outside the input directory.
  bool follow_symlinks = true;
};

struct InputFile {
  std::shared_ptr<const Buffer> bytes;  // decompressed content
  Compression compression = Compression::kNone;
  Encoding encoding = Encoding::kPickle;
  uint64_t size_on_disk = 0;
};

// What the leading bytes say. Returns a NotADumpError when they are neither a pickle (0x80 PROTO),
// JSON ('{' or '[' after an optional UTF-8 BOM and whitespace), zstd (including a leading
// skippable frame, as pzstd writes) nor gzip, saying what kind of file the magic bytes suggest
// ("not a flight-recorder dump: an ELF core file or executable"). It quotes nothing from the
// file: a link to /etc/shadow must not put its first line into a report. An empty input is
// InvalidArgument "empty file (0 bytes)" (a dump cut short, not some other file).
absl::StatusOr<Compression> DetectCompression(std::string_view bytes);
absl::StatusOr<Encoding> DetectEncoding(std::string_view bytes);

// What kind of file `bytes` (its first bytes suffice) looks like when it is not a dump, from
// magic numbers and byte classes only: "an ELF core file or executable", "a zip archive (a
// torch.save checkpoint?)", "text (a log?)", "binary data". Never quotes the bytes.
std::string DescribeNonDump(std::string_view bytes);

// InvalidArgument "not a flight-recorder dump: <what>", marked so that IsNotADump() recognises
// it. Callers use it for files that are not dumps at all (another kind of file), as opposed to
// dumps that are damaged: a loader skips the former and reports the latter.
absl::Status NotADumpError(std::string_view what);
bool IsNotADump(const absl::Status& status);

// Decompresses zstd or gzip `compressed` within `options`: every zstd frame (multi-frame files,
// frames without a content size) and every gzip member (concatenated .gz files). Errors: DataLoss
// for a truncated or corrupt stream or bytes after the last gzip member other than zero padding,
// ResourceExhausted past the limits; messages name the compressed byte offset where known.
absl::StatusOr<std::shared_ptr<const Buffer>> Decompress(std::string_view compressed,
                                                         Compression compression,
                                                         const ReadOptions& options = {});

// Reads `path`, decompresses it when needed and detects its encoding. Error messages do not
// repeat the path: callers prefix it. The file is opened without blocking and checked to be a
// regular file on the open descriptor, so that a FIFO or device (or a file swapped for one after
// it was listed) is refused with InvalidArgument instead of blocking forever in open() or read().
absl::StatusOr<InputFile> ReadInputFile(const std::string& path, const ReadOptions& options = {});

// Asks the kernel to start reading `path` into the page cache now, without waiting (a file
// about to be read; the kernel reads ahead within one file, never across files). Opens the file
// as ReadInputFile does and never blocks; a file that cannot be opened is silently left alone.
void HintWillRead(const std::string& path, const ReadOptions& options = {});

// The same for bytes already in memory (dumps fetched over HTTP, tests).
absl::StatusOr<InputFile> ReadInputBytes(std::shared_ptr<const Buffer> bytes,
                                         const ReadOptions& options = {});

}  // namespace fr

#endif  // FR_READ_INPUT_FILE_H_
