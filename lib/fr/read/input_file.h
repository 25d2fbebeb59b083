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
  uint64_t max_expansion_ratio = 1000;  // 0: no ratio limit
};

struct InputFile {
  std::shared_ptr<const Buffer> bytes;  // decompressed content
  Compression compression = Compression::kNone;
  Encoding encoding = Encoding::kPickle;
  uint64_t size_on_disk = 0;
};

// What the leading bytes say. Returns InvalidArgument naming the first bytes when they are neither
// a pickle (0x80 PROTO), JSON ('{' or '[' after an optional UTF-8 BOM and whitespace), zstd
// (including a leading skippable frame, as pzstd writes) nor gzip, with a guess where the magic
// says what it is ("... starts with bytes 7f 45 4c 46 (an ELF core file?)"). An empty input is
// InvalidArgument "empty file (0 bytes)".
absl::StatusOr<Compression> DetectCompression(std::string_view bytes);
absl::StatusOr<Encoding> DetectEncoding(std::string_view bytes);

// Decompresses zstd or gzip `compressed` within `options`: every zstd frame (multi-frame files,
// frames without a content size) and every gzip member (concatenated .gz files). Errors: DataLoss
// for a truncated or corrupt stream or bytes after the last gzip member other than zero padding,
// ResourceExhausted past the limits; messages name the compressed byte offset where known.
absl::StatusOr<std::shared_ptr<const Buffer>> Decompress(std::string_view compressed,
                                                         Compression compression,
                                                         const ReadOptions& options = {});

// Maps `path`, decompresses it when needed and detects its encoding. Error messages do not repeat
// the path: callers prefix it.
absl::StatusOr<InputFile> ReadInputFile(const std::string& path, const ReadOptions& options = {});

// The same for bytes already in memory (dumps fetched over HTTP, tests).
absl::StatusOr<InputFile> ReadInputBytes(std::shared_ptr<const Buffer> bytes,
                                         const ReadOptions& options = {});

}  // namespace fr

#endif  // FR_READ_INPUT_FILE_H_
