#include "fr/read/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "fmt/format.h"
#include "fr/base/errno_status.h"
#include "fr/base/status_macros.h"

namespace fr {
namespace {

constexpr std::string_view kZstdMagic("\x28\xb5\x2f\xfd", 4);
constexpr std::string_view kGzipMagic("\x1f\x8b", 2);
constexpr std::string_view kUtf8Bom("\xef\xbb\xbf", 3);

// Below this the expansion ratio is not enforced: a tiny archive may legitimately expand a lot,
// and a megabyte can never exhaust memory.
constexpr uint64_t kExpansionRatioFloorBytes = uint64_t{1} << 20;

bool StartsWith(std::string_view bytes, std::string_view prefix) {
  return bytes.substr(0, prefix.size()) == prefix;
}

// zstd skippable frames (magic 0x184D2A5?, little-endian) lead pzstd output and may precede data.
bool IsZstdSkippableFrame(std::string_view bytes) {
  return bytes.size() >= 4 && (static_cast<uint8_t>(bytes[0]) & 0xf0) == 0x50 &&
         bytes.substr(1, 3) == std::string_view("\x2a\x4d\x18", 3);
}

bool IsJsonWhitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string HexPrefix(std::string_view bytes) {
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 4); ++i) {
    if (i > 0) hex += ' ';
    hex += fmt::format("{:02x}", static_cast<uint8_t>(bytes[i]));
  }
  return hex;
}

// Marks statuses made by NotADumpError (see IsNotADump).
constexpr char kNotADumpPayload[] = "fr-analyze/not-a-dump";

absl::Status NotADump(std::string_view bytes) { return NotADumpError(DescribeNonDump(bytes)); }

std::string_view FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

// Reads the regular file `path` whole. Opening a FIFO for reading blocks until a writer comes,
// possibly forever, and a path checked before opening can be swapped for one in between: so the
// open does not block (O_NONBLOCK) and the type is checked on the open descriptor.
absl::StatusOr<std::shared_ptr<const Buffer>> ReadRegularFile(const std::string& path,
                                                              const ReadOptions& options) {
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (!options.follow_symlinks) flags |= O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    if (errno == ELOOP && !options.follow_symlinks) {
      return absl::FailedPreconditionError("is a symbolic link now (not followed)");
    }
    return ErrnoToStatus(errno, "cannot open");
  }
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
  struct stat info;
  if (::fstat(fd, &info) != 0) return ErrnoToStatus(errno, "cannot stat");
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(
        fmt::format("{}, not a regular file: not read", FileTypeName(info.st_mode)));
  }
  // A regular file never blocks; clear the flag so that reads behave as everywhere else.
  int status_flags = ::fcntl(fd, F_GETFL);
  if (status_flags >= 0) ::fcntl(fd, F_SETFL, status_flags & ~O_NONBLOCK);
  // Buffer reads by path (into its reused per-thread buffer). The descriptor's entry in
  // /proc/self/fd opens exactly the file checked above, whatever the path names by now; without
  // /proc, the path itself is the fallback.
  std::string self = fmt::format("/proc/self/fd/{}", fd);
  bool has_proc = ::access(self.c_str(), R_OK) == 0;
  absl::StatusOr<std::shared_ptr<const Buffer>> bytes = Buffer::ReadFile(has_proc ? self : path);
  if (!bytes.ok()) {
    // Buffer's messages start with the path it was given; callers add the real one.
    std::string full_message(bytes.status().message());
    std::string_view message = full_message;
    std::string_view opened = has_proc ? std::string_view(self) : std::string_view(path);
    if (message.starts_with(opened) && message.substr(opened.size()).starts_with(": ")) {
      message.remove_prefix(opened.size() + 2);
    }
    return absl::Status(bytes.status().code(), std::string(message));
  }
  return bytes;
}

// The most bytes `compressed_size` compressed bytes may expand to under `options`.
uint64_t DecompressedLimit(uint64_t compressed_size, const ReadOptions& options) {
  uint64_t by_ratio =
      options.max_expansion_ratio == 0 || compressed_size > UINT64_MAX / options.max_expansion_ratio
          ? UINT64_MAX
          : compressed_size * options.max_expansion_ratio;
  by_ratio = std::max(by_ratio, kExpansionRatioFloorBytes);
  return std::min(options.max_decompressed_bytes, by_ratio);
}

absl::Status TooLarge(std::string_view format, uint64_t compressed_size, uint64_t limit,
                      const ReadOptions& options) {
  if (limit == options.max_decompressed_bytes) {
    return absl::ResourceExhaustedError(
        fmt::format("{} data decompresses to more than {} bytes (ReadOptions::"
                    "max_decompressed_bytes)",
                    format, limit));
  }
  return absl::ResourceExhaustedError(
      fmt::format("{} data expands more than {}x ({} compressed bytes would give more than {} "
                  "bytes; ReadOptions::max_expansion_ratio): a corrupt or hostile archive?",
                  format, options.max_expansion_ratio, compressed_size, limit));
}

// Output space management shared by both decompressors: grows `out` geometrically, never past
// limit + 1 bytes (one byte past the limit proves the output is too large without holding it).
class OutputGrower {
 public:
  OutputGrower(std::string& out, uint64_t limit, uint64_t initial) : out_(out), limit_(limit) {
    out_.resize(static_cast<size_t>(std::min(std::max<uint64_t>(initial, 4096), Cap())));
  }
  // Makes room after `used` bytes; false when `out` already holds limit + 1 bytes.
  bool Grow(size_t used) {
    if (used < out_.size()) return true;
    if (out_.size() >= Cap()) return false;
    uint64_t next = std::min<uint64_t>(uint64_t{out_.size()} * 2, Cap());
    out_.resize(static_cast<size_t>(next));
    return true;
  }
  bool OverLimit(size_t used) const { return used > limit_; }

 private:
  uint64_t Cap() const { return limit_ == UINT64_MAX ? limit_ : limit_ + 1; }
  std::string& out_;
  uint64_t limit_;
};

absl::StatusOr<std::string> DecompressZstd(std::string_view in, const ReadOptions& options) {
  uint64_t limit = DecompressedLimit(in.size(), options);
  // The declared size of the first frame, when written, sizes the output in one allocation and
  // refuses an oversized declaration before any work.
  uint64_t initial = in.size() * 4;
  unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR) {
    if (declared > limit) return TooLarge("zstd", in.size(), limit, options);
    initial = declared;
  }
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (context == nullptr) return absl::ResourceExhaustedError("cannot allocate a zstd context");
  // zstd refuses windows above 128 MiB (2^27) unless allowed (files made with --long=28 and up).
  // Allow windows up to the output limit, since a window never needs to exceed the output; a
  // small hostile file therefore cannot make the decoder allocate a huge window.
  int window_log = 27;
  while (window_log < 31 && (uint64_t{1} << window_log) < limit) ++window_log;
  ZSTD_DCtx_setParameter(context.get(), ZSTD_d_windowLogMax, window_log);

  std::string out;
  OutputGrower grower(out, limit, initial);
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t used = 0;
  size_t frame_start = 0;
  size_t pending = 0;  // 0 when the last frame was complete
  while (input.pos < input.size) {
    if (!grower.Grow(used)) return TooLarge("zstd", in.size(), limit, options);
    ZSTD_outBuffer output{out.data() + used, out.size() - used, 0};
    size_t before = input.pos;
    pending = ZSTD_decompressStream(context.get(), &output, &input);
    used += output.pos;
    if (ZSTD_isError(pending)) {
      return absl::DataLossError(
          fmt::format("corrupt zstd data in the frame starting at compressed byte {} (error "
                      "near byte {}): {}",
                      frame_start, input.pos, ZSTD_getErrorName(pending)));
    }
    if (grower.OverLimit(used)) return TooLarge("zstd", in.size(), limit, options);
    if (pending == 0) {
      frame_start = input.pos;
    } else if (input.pos == before && output.pos == 0 && used < out.size()) {
      break;  // no progress: needs input we do not have
    }
  }
  // Flush what the decoder still buffers for the last frame.
  while (pending != 0) {
    if (!grower.Grow(used)) return TooLarge("zstd", in.size(), limit, options);
    ZSTD_outBuffer output{out.data() + used, out.size() - used, 0};
    pending = ZSTD_decompressStream(context.get(), &output, &input);
    used += output.pos;
    if (ZSTD_isError(pending)) {
      return absl::DataLossError(fmt::format("corrupt zstd data near compressed byte {}: {}",
                                             input.pos, ZSTD_getErrorName(pending)));
    }
    if (grower.OverLimit(used)) return TooLarge("zstd", in.size(), limit, options);
    if (pending != 0 && output.pos < output.size) {
      return absl::DataLossError(fmt::format(
          "truncated zstd data: the frame starting at compressed byte {} is incomplete at the "
          "end of the file (byte {}) after {} decompressed bytes",
          frame_start, in.size(), used));
    }
  }
  out.resize(used);
  return out;
}

absl::StatusOr<std::string> DecompressGzip(std::string_view in, const ReadOptions& options) {
  uint64_t limit = DecompressedLimit(in.size(), options);
  // The last four bytes hold the size of the last member modulo 2^32: a hint, never trusted.
  uint64_t initial = in.size() * 4;
  if (in.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, in.data() + in.size() - 4, 4);  // little-endian on every target we build
    if (isize >= in.size() && isize <= limit) initial = isize;
  }
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    return absl::ResourceExhaustedError("cannot allocate a zlib stream");
  }
  std::unique_ptr<z_stream, int (*)(z_stream*)> cleanup(&stream, inflateEnd);

  std::string out;
  OutputGrower grower(out, limit, initial);
  size_t consumed = 0;  // input bytes handed to zlib and used
  size_t used = 0;
  size_t member_start = 0;
  // zlib counts in 32-bit uInt: feed at most this much at a time.
  constexpr size_t kMaxChunk = size_t{1} << 30;
  while (true) {
    if (!grower.Grow(used)) return TooLarge("gzip", in.size(), limit, options);
    size_t in_chunk = std::min(in.size() - consumed, kMaxChunk);
    size_t out_chunk = std::min(out.size() - used, kMaxChunk);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + consumed));
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    stream.avail_out = static_cast<uInt>(out_chunk);
    int result = inflate(&stream, Z_NO_FLUSH);
    consumed += in_chunk - stream.avail_in;
    used += out_chunk - stream.avail_out;
    if (grower.OverLimit(used)) return TooLarge("gzip", in.size(), limit, options);
    if (result == Z_STREAM_END) {
      std::string_view rest = in.substr(consumed);
      if (rest.empty()) break;
      if (StartsWith(rest, kGzipMagic)) {  // concatenated members (gzip a; gzip b; cat)
        member_start = consumed;
        inflateReset(&stream);
        continue;
      }
      // Archivers pad with zeros; gzip(1) ignores anything after the last member, so do we when it
      // is padding, and refuse anything else.
      if (rest.find_first_not_of('\0') == std::string_view::npos) break;
      return absl::DataLossError(
          fmt::format("unexpected bytes after the gzip member ending at compressed byte {}: "
                      "starts with {}",
                      consumed, HexPrefix(rest)));
    }
    if (result == Z_OK) continue;
    if (result == Z_BUF_ERROR) {
      if (stream.avail_out == 0) continue;  // needs more output space
      if (consumed == in.size()) {
        return absl::DataLossError(fmt::format(
            "truncated gzip data: the member starting at compressed byte {} is incomplete at the "
            "end of the file (byte {}) after {} decompressed bytes",
            member_start, in.size(), used));
      }
      continue;
    }
    return absl::DataLossError(fmt::format(
        "corrupt gzip data in the member starting at compressed byte {} (error near byte {}): {}",
        member_start, consumed, stream.msg != nullptr ? stream.msg : zError(result)));
  }
  out.resize(used);
  return out;
}

}  // namespace

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kZstd:
      return "zstd";
    case Compression::kGzip:
      return "gzip";
  }
  return "unknown";
}

std::string_view EncodingName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kPickle:
      return "pickle";
    case Encoding::kJson:
      return "json";
  }
  return "unknown";
}

std::string DescribeNonDump(std::string_view bytes) {
  struct Magic {
    std::string_view prefix;
    std::string_view kind;
  };
  static constexpr Magic kMagics[] = {
      {std::string_view("\x7f"
                        "ELF",
                        4),
       "an ELF core file or executable"},
      {std::string_view("PK\x03\x04", 4), "a zip archive (a torch.save checkpoint?)"},
      {std::string_view("\xfd"
                        "7zXZ\x00",
                        6),
       "an xz archive (decompress it first)"},
      {std::string_view("BZh", 3), "a bzip2 archive (decompress it first)"},
      {std::string_view("\x04\x22\x4d\x18", 4), "an lz4 archive (decompress it first)"},
      {std::string_view("\x89PNG", 4), "a PNG image"},
      {std::string_view("%PDF", 4), "a PDF document"},
      {std::string_view("SQLite format 3", 15), "an SQLite database"},
      {std::string_view("\xff\xfe", 2), "UTF-16 text"},
      {std::string_view("\xfe\xff", 2), "UTF-16 text"},
  };
  for (const Magic& magic : kMagics) {
    if (StartsWith(bytes, magic.prefix)) return std::string(magic.kind);
  }
  if (bytes.size() >= 262 && bytes.substr(257, 5) == "ustar") {
    return "a tar archive (extract it first)";
  }
  size_t sample = std::min<size_t>(bytes.size(), 256);
  bool text = sample > 0;
  for (size_t i = 0; i < sample && text; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    text = c >= 0x20 || c == '\n' || c == '\r' || c == '\t';
  }
  return text ? "text (a log or configuration file?)" : "binary data of an unknown kind";
}

absl::Status NotADumpError(std::string_view what) {
  absl::Status status =
      absl::InvalidArgumentError(fmt::format("not a flight-recorder dump: {}", what));
  status.SetPayload(kNotADumpPayload, absl::Cord());
  return status;
}

bool IsNotADump(const absl::Status& status) {
  return status.GetPayload(kNotADumpPayload).has_value();
}

absl::StatusOr<Encoding> DetectEncoding(std::string_view bytes) {
  if (bytes.empty()) return absl::InvalidArgumentError("empty file (0 bytes)");
  if (static_cast<uint8_t>(bytes[0]) == 0x80) return Encoding::kPickle;
  std::string_view rest = bytes;
  if (StartsWith(rest, kUtf8Bom)) rest.remove_prefix(kUtf8Bom.size());
  size_t first = 0;
  while (first < rest.size() && IsJsonWhitespace(rest[first])) ++first;
  if (first == rest.size()) {
    return NotADumpError(fmt::format("{} bytes of whitespace only", bytes.size()));
  }
  if (rest[first] == '{' || rest[first] == '[') return Encoding::kJson;
  return NotADump(bytes);
}

absl::StatusOr<Compression> DetectCompression(std::string_view bytes) {
  if (StartsWith(bytes, kZstdMagic) || IsZstdSkippableFrame(bytes)) return Compression::kZstd;
  if (StartsWith(bytes, kGzipMagic)) return Compression::kGzip;
  FR_RETURN_IF_ERROR(DetectEncoding(bytes).status());
  return Compression::kNone;
}

absl::StatusOr<std::shared_ptr<const Buffer>> Decompress(std::string_view compressed,
                                                         Compression compression,
                                                         const ReadOptions& options) {
  absl::StatusOr<std::string> out;
  switch (compression) {
    case Compression::kZstd:
      out = DecompressZstd(compressed, options);
      break;
    case Compression::kGzip:
      out = DecompressGzip(compressed, options);
      break;
    case Compression::kNone:
      return absl::InvalidArgumentError("Decompress called for uncompressed data");
  }
  if (!out.ok()) return out.status();
  return Buffer::FromString(*std::move(out));
}

absl::StatusOr<InputFile> ReadInputBytes(std::shared_ptr<const Buffer> bytes,
                                         const ReadOptions& options) {
  InputFile file;
  file.size_on_disk = bytes->size();
  std::string_view raw = bytes->bytes();
  if (raw.empty()) return absl::InvalidArgumentError("empty file (0 bytes)");
  FR_ASSIGN_OR_RETURN(file.compression, DetectCompression(raw));
  if (file.compression == Compression::kNone) {
    file.bytes = std::move(bytes);
  } else {
    FR_ASSIGN_OR_RETURN(file.bytes, Decompress(raw, file.compression, options));
    if (file.bytes->size() == 0) {
      return absl::InvalidArgumentError(
          fmt::format("empty after {} decompression ({} compressed bytes)",
                      CompressionName(file.compression), raw.size()));
    }
  }
  absl::StatusOr<Encoding> encoding = DetectEncoding(file.bytes->bytes());
  if (!encoding.ok()) {
    if (file.compression == Compression::kNone) return encoding.status();
    // Name the layer so that "gzip of a zstd file" or "compressed core file" reads clearly.
    absl::Status status(encoding.status().code(),
                        fmt::format("after {} decompression: {}", CompressionName(file.compression),
                                    std::string(encoding.status().message())));
    if (IsNotADump(encoding.status())) status.SetPayload(kNotADumpPayload, absl::Cord());
    return status;
  }
  file.encoding = *encoding;
  return file;
}

void HintWillRead(const std::string& path, const ReadOptions& options) {
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (!options.follow_symlinks) flags |= O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  struct stat info;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
  }
  ::close(fd);
}

absl::StatusOr<InputFile> ReadInputFile(const std::string& path, const ReadOptions& options) {
  FR_ASSIGN_OR_RETURN(std::shared_ptr<const Buffer> bytes, ReadRegularFile(path, options));
  return ReadInputBytes(std::move(bytes), options);
}

}  // namespace fr
