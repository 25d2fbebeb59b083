#include "fr/logs/log_text.h"

#include <array>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fmt/format.h"

namespace fr {
namespace {

// NUL, the C0 controls other than tab, line feed, vertical tab, form feed, carriage return and
// ESC (ANSI colors), and DEL.
constexpr std::array<bool, 256> MakeBinaryTable() {
  std::array<bool, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[c] = true;
  for (int c : {0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1b}) table[c] = false;  // \t \n \v \f \r ESC
  table[0x7f] = true;
  return table;
}
constexpr std::array<bool, 256> kBinary = MakeBinaryTable();

bool IsBinary(char c) { return kBinary[static_cast<unsigned char>(c)]; }

// The first binary byte at or after `from`, or text.size(). Sixteen bytes at a time where SSE2
// is there (every x86-64): a block whose only bytes below 0x20 are newlines, and with no DEL,
// has nothing to drop, which is most blocks of a log. Elsewhere eight at a time.
size_t FindBinary(std::string_view text, size_t from) {
  size_t i = from;
#if defined(__SSE2__)
  const __m128i below_space = _mm_set1_epi8(0x1f);
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i del = _mm_set1_epi8(0x7f);
  for (; i + 16 <= text.size(); i += 16) {
    __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i));
    // Unsigned byte < 0x20: min(byte, 0x1f) == byte.
    __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(block, below_space), block);
    __m128i drop = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(block, newline), control),
                                _mm_cmpeq_epi8(block, del));
    if (_mm_movemask_epi8(drop) == 0) continue;
    for (size_t j = i; j < i + 16; ++j) {
      if (IsBinary(text[j])) return j;
    }
  }
#else
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    uint64_t below_space = (word - kOnes * 0x20) & ~word & kHighs;
    uint64_t del = word ^ (kOnes * 0x7f);
    uint64_t is_del = (del - kOnes) & ~del & kHighs;
    if ((below_space | is_del) == 0) continue;
    for (size_t j = i; j < i + 8; ++j) {
      if (IsBinary(text[j])) return j;
    }
  }
#endif
  for (; i < text.size(); ++i) {
    if (IsBinary(text[i])) return i;
  }
  return text.size();
}

void AppendUtf8(uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    *out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    *out += static_cast<char>(0xc0 | (code_point >> 6));
    *out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else if (code_point < 0x10000) {
    *out += static_cast<char>(0xe0 | (code_point >> 12));
    *out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (code_point >> 18));
    *out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (code_point & 0x3f));
  }
}

constexpr uint32_t kReplacement = 0xfffd;

// UTF-16 without a byte order mark: ASCII text in it has a NUL in every other byte and none in
// the others. Text with NUL padding has NULs in both, so it is not taken for UTF-16.
bool LooksLikeUtf16(std::string_view bytes, bool little_endian) {
  size_t pairs = std::min<size_t>(bytes.size(), 4096) / 2;
  if (pairs < 8) return false;
  size_t zero_high = 0, zero_low = 0;
  for (size_t i = 0; i < pairs; ++i) {
    char first = bytes[2 * i], second = bytes[2 * i + 1];
    char high = little_endian ? second : first;
    char low = little_endian ? first : second;
    zero_high += high == '\0';
    zero_low += low == '\0';
  }
  return zero_high * 10 >= pairs * 9 && zero_low * 10 <= pairs;
}

// Length of the well-formed UTF-8 sequence at the start of `text`, or 0 (RFC 3629).
size_t Utf8SequenceLength(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  auto continuation = [&](size_t i) { return i < text.size() && (byte(i) & 0xc0) == 0x80; };
  uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead < 0xc2) return 0;
  if (lead < 0xe0) return continuation(1) ? 2 : 0;
  if (lead < 0xf0) {
    if (!continuation(1) || !continuation(2)) return 0;
    if ((lead == 0xe0 && byte(1) < 0xa0) || (lead == 0xed && byte(1) >= 0xa0)) return 0;
    return 3;
  }
  if (lead < 0xf5) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if ((lead == 0xf0 && byte(1) < 0x90) || (lead == 0xf4 && byte(1) >= 0x90)) return 0;
    return 4;
  }
  return 0;
}

}  // namespace

std::string_view LogEncodingName(LogEncoding encoding) {
  switch (encoding) {
    case LogEncoding::kUtf8:
      return "UTF-8";
    case LogEncoding::kUtf16Le:
      return "UTF-16LE";
    case LogEncoding::kUtf16Be:
      return "UTF-16BE";
  }
  return "unknown";
}

void LogTextDecoder::DetectEncoding(std::string_view* bytes) {
  started_ = true;
  if (bytes->starts_with("\xff\xfe")) {
    encoding_ = LogEncoding::kUtf16Le;
    bytes->remove_prefix(2);
  } else if (bytes->starts_with("\xfe\xff")) {
    encoding_ = LogEncoding::kUtf16Be;
    bytes->remove_prefix(2);
  } else if (bytes->starts_with("\xef\xbb\xbf")) {
    bytes->remove_prefix(3);
  } else if (LooksLikeUtf16(*bytes, /*little_endian=*/true)) {
    encoding_ = LogEncoding::kUtf16Le;
  } else if (LooksLikeUtf16(*bytes, /*little_endian=*/false)) {
    encoding_ = LogEncoding::kUtf16Be;
  }
}

void LogTextDecoder::DecodeUtf16(std::string_view bytes, std::string* out) {
  out->reserve(out->size() + bytes.size());
  auto emit = [&](uint32_t unit) {
    if (pending_high_surrogate_ != 0) {
      if (unit >= 0xdc00 && unit <= 0xdfff) {
        AppendUtf8(0x10000 + ((pending_high_surrogate_ - 0xd800) << 10) + (unit - 0xdc00), out);
        pending_high_surrogate_ = 0;
        return;
      }
      AppendUtf8(kReplacement, out);
      pending_high_surrogate_ = 0;
    }
    if (unit >= 0xd800 && unit <= 0xdbff) {
      pending_high_surrogate_ = unit;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      AppendUtf8(kReplacement, out);
    } else {
      AppendUtf8(unit, out);
    }
  };
  const bool little = encoding_ == LogEncoding::kUtf16Le;
  size_t i = 0;
  if (pending_byte_ >= 0 && !bytes.empty()) {
    uint32_t first = static_cast<uint32_t>(pending_byte_);
    uint32_t second = static_cast<unsigned char>(bytes[0]);
    emit(little ? first | (second << 8) : (first << 8) | second);
    pending_byte_ = -1;
    i = 1;
  }
  for (; i + 2 <= bytes.size(); i += 2) {
    uint32_t first = static_cast<unsigned char>(bytes[i]);
    uint32_t second = static_cast<unsigned char>(bytes[i + 1]);
    emit(little ? first | (second << 8) : (first << 8) | second);
  }
  if (i < bytes.size()) pending_byte_ = static_cast<unsigned char>(bytes[i]);
}

void LogTextDecoder::AppendWithoutBinary(std::string_view text, std::string* out) {
  size_t at = 0;
  while (at < text.size()) {
    size_t binary = FindBinary(text, at);
    if (binary > at) {
      out->append(text.data() + at, binary - at);
      in_binary_run_ = false;
    }
    at = binary;
    while (at < text.size() && IsBinary(text[at])) {
      if (!in_binary_run_) ++binary_runs_;
      in_binary_run_ = true;
      ++binary_bytes_;
      ++at;
    }
  }
}

std::string_view LogTextDecoder::Decode(std::string_view bytes, std::string* scratch) {
  if (bytes.empty()) return bytes;
  std::string first_bytes;
  if (!started_) {
    // A byte order mark is told from the first 4 bytes, however the file is chunked.
    if (first_bytes_.size() + bytes.size() < 4) {
      first_bytes_.append(bytes.data(), bytes.size());
      return {};
    }
    if (!first_bytes_.empty()) {
      first_bytes = std::move(first_bytes_);
      first_bytes.append(bytes.data(), bytes.size());
      first_bytes_.clear();
      bytes = first_bytes;
    }
    DetectEncoding(&bytes);
  }
  std::string_view text = bytes;
  if (encoding_ != LogEncoding::kUtf8) {
    utf16_out_.clear();
    DecodeUtf16(bytes, &utf16_out_);
    text = utf16_out_;
  }
  size_t first_binary = FindBinary(text, 0);
  // (Text in `first_bytes` dies here: it is copied.)
  bool text_is_local = !first_bytes.empty() && encoding_ == LogEncoding::kUtf8;
  if (first_binary == text.size() && !text_is_local) {
    if (!text.empty()) in_binary_run_ = false;
    return text;
  }
  scratch->clear();
  scratch->reserve(text.size());
  AppendWithoutBinary(text, scratch);
  return *scratch;
}

std::string_view LogTextDecoder::Finish(std::string* scratch) {
  if (!started_ && !first_bytes_.empty()) {
    // A file of fewer than 4 bytes.
    std::string bytes = std::move(first_bytes_);
    first_bytes_.clear();
    started_ = true;  // too short for a byte order mark to matter
    std::string text(Decode(bytes, scratch));
    *scratch = std::move(text);
    return *scratch;
  }
  scratch->clear();
  if (pending_byte_ >= 0 || pending_high_surrogate_ != 0) AppendUtf8(kReplacement, scratch);
  pending_byte_ = -1;
  pending_high_surrogate_ = 0;
  return *scratch;
}

LogTextSample DecodeLogSample(std::string_view head) {
  LogTextDecoder decoder;
  std::string scratch;
  LogTextSample sample;
  // A head is cut anywhere: half a code unit at its end is not an error, so no Finish().
  sample.text = std::string(decoder.Decode(head, &scratch));
  sample.encoding = decoder.encoding();
  sample.binary_bytes = decoder.binary_bytes();
  sample.binary_runs = decoder.binary_runs();
  std::string_view rest = sample.text;
  while (!rest.empty()) {
    size_t length = Utf8SequenceLength(rest);
    // A character cut by the end of the sample is not invalid.
    if (length == 0 && rest.size() < 4 && static_cast<unsigned char>(rest[0]) >= 0xc2) break;
    if (length == 0) {
      ++sample.invalid_utf8_bytes;
      length = 1;
    }
    rest.remove_prefix(length);
  }
  return sample;
}

bool SampleIsText(const LogTextSample& sample, std::string* why) {
  auto fail = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  const int64_t text = static_cast<int64_t>(sample.text.size());
  if (text == 0) {
    return fail(
        sample.binary_bytes > 0
            ? fmt::format("binary data: {} NUL or control bytes and no text", sample.binary_bytes)
            : std::string("no text"));
  }
  // A log pads with NULs once or twice (a crash, a truncation); binary data has a control byte
  // every few bytes. One run per 64 bytes of text is far from both.
  if (sample.binary_runs * 64 > text) {
    return fail(fmt::format("binary data: {} runs of NUL or control bytes among {} bytes of text",
                            sample.binary_runs, text));
  }
  if (sample.invalid_utf8_bytes * 10 > text) {
    return fail(fmt::format("binary data: {} of {} bytes are not UTF-8 text",
                            sample.invalid_utf8_bytes, text));
  }
  return true;
}

std::string_view LogHead(std::string_view content, size_t size) {
  size_t first = content.find_first_not_of('\0');
  if (first == std::string_view::npos) return content.substr(0, size);
  return content.substr(first, size);
}

bool LooksLikeText(std::string_view head) {
  if (head.empty()) return false;
  for (std::string_view magic :
       {std::string_view("\x1f\x8b", 2), std::string_view("\x28\xb5\x2f\xfd", 4),
        std::string_view("\x80", 1),
        std::string_view("\x7f"
                         "ELF",
                         4),
        std::string_view("PK\x03\x04", 4), std::string_view("\x89PNG", 4),
        std::string_view("%PDF", 4), std::string_view("SQLite format 3", 15)}) {
    if (head.starts_with(magic)) return false;
  }
  LogTextSample sample = DecodeLogSample(head);
  std::string why;
  if (!SampleIsText(sample, &why)) return false;
  const std::string_view text = sample.text;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  // A JSON document (a config, a result file) is data, not a program's output: `{"` or `[{`.
  // Python's own printing of a dict, `{'loss': 2.3}`, is output.
  size_t next = text.find_first_not_of(" \t\r\n", first + 1);
  char after = next == std::string_view::npos ? '\0' : text[next];
  if (text[first] == '{' && (after == '"' || after == '}')) return false;
  if (text[first] == '[' && (after == '{' || after == '"' || after == ']')) return false;
  return true;
}

std::string DescribeNonLog(std::string_view head) {
  if (head.empty()) return "an empty file";
  struct Magic {
    std::string_view prefix;
    std::string_view kind;
  };
  static constexpr Magic kMagics[] = {
      {std::string_view("\x1f\x8b", 2), "gzip data"},
      {std::string_view("\x28\xb5\x2f\xfd", 4), "zstd data"},
      {std::string_view("\x80", 1), "a pickle (a flight-recorder dump?)"},
      {std::string_view("\x7f"
                        "ELF",
                        4),
       "an ELF core file or executable"},
      {std::string_view("PK\x03\x04", 4), "a zip archive"},
      {std::string_view("\x89PNG", 4), "a PNG image"},
      {std::string_view("%PDF", 4), "a PDF document"},
      {std::string_view("SQLite format 3", 15), "an SQLite database"},
  };
  for (const Magic& magic : kMagics) {
    if (head.starts_with(magic.prefix)) return std::string(magic.kind);
  }
  LogTextSample sample = DecodeLogSample(head);
  std::string why;
  if (!SampleIsText(sample, &why)) return why;
  size_t first = sample.text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "whitespace only";
  char c = sample.text[first];
  if (c == '{' || c == '[') return "JSON";
  return "structured data (a pickle?), not lines of text";
}

}  // namespace fr
