#include "fr/logs/log_text.h"

#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;

// A real Xid line (tests/data/logs/real/xid.log), as dmesg -T prints it.
constexpr std::string_view kXidLine =
    "[Thu May 29 12:25:58 2025] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus\n";

std::string KernelLog() {
  std::string log;
  for (int i = 0; i < 12; ++i) {
    log += "[Thu May 29 12:04:58 2025] mlx5_core 0000:1c:00.0: mlx5_ib0: Port: 1 Link ACTIVE\n";
  }
  log += kXidLine;
  log += "[Thu May 29 12:25:58 2025] NVRM: GPU 0000:44:00.0: GPU has fallen off the bus.\n";
  return log;
}

std::string Utf16(std::string_view ascii, bool little_endian, bool bom) {
  std::string out;
  if (bom) out += little_endian ? "\xff\xfe" : "\xfe\xff";
  for (char c : ascii) {
    if (little_endian) {
      out += c;
      out += '\0';
    } else {
      out += '\0';
      out += c;
    }
  }
  return out;
}

std::string DecodeAll(std::string_view bytes, size_t chunk = SIZE_MAX) {
  LogTextDecoder decoder;
  std::string scratch, out;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    out += decoder.Decode(bytes.substr(at, chunk), &scratch);
  }
  out += decoder.Finish(&scratch);
  return out;
}

// Parses `bytes` as the file `name` through ParseLogFiles, as logs beside dumps are read.
LogSet ParseFile(const std::string& bytes) {
  char path[] = "/tmp/log_text_test_XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  absl::StatusOr<LogSet> logs = ParseLogFiles({path});
  ::unlink(path);
  EXPECT_TRUE(logs.ok());
  return *std::move(logs);
}

TEST(LogTextDecoder, PlainTextComesBackWithoutACopy) {
  std::string text = KernelLog();
  LogTextDecoder decoder;
  std::string scratch;
  std::string_view out = decoder.Decode(text, &scratch);
  EXPECT_EQ(out, text);
  EXPECT_EQ(out.data(), text.data());
  EXPECT_EQ(decoder.binary_bytes(), 0);
}

TEST(LogTextDecoder, Utf16ByItsByteOrderMarkOrItsNuls) {
  std::string text = KernelLog() + "caf\xc3\xa9\n";
  std::string le = Utf16(KernelLog(), true, true) + std::string("c\0a\0f\0\xe9\0\n\0", 10);
  std::string be = Utf16(KernelLog(), false, true) + std::string("\0c\0a\0f\0\xe9\0\n", 10);
  EXPECT_EQ(DecodeAll(le), text);
  EXPECT_EQ(DecodeAll(be), text);
  EXPECT_EQ(DecodeAll(Utf16(KernelLog(), true, false)), KernelLog());
  EXPECT_EQ(DecodeAll(Utf16(KernelLog(), false, false)), KernelLog());
  // Chunks that end inside a code unit decode the same.
  EXPECT_EQ(DecodeAll(le, 7), text);
  EXPECT_EQ(DecodeAll(be, 3), text);
}

TEST(LogTextDecoder, SurrogatePairsAndLoneSurrogates) {
  // U+1F600 as a pair, then a lone high and a lone low surrogate, then a code unit cut short.
  std::string le(
      "\xff\xfe\x3d\xd8\x00\xde\x3d\xd8"
      "A\x00\x00\xdc"
      "B\x00\x41",
      15);
  EXPECT_EQ(DecodeAll(le),
            "\xf0\x9f\x98\x80\xef\xbf\xbd"
            "A\xef\xbf\xbd"
            "B\xef\xbf\xbd");
  EXPECT_EQ(DecodeAll(le, 1), DecodeAll(le));
}

TEST(LogTextDecoder, BinaryRunsAreDroppedAndCounted) {
  std::string padded = KernelLog() + std::string(17, '\0');
  LogTextDecoder decoder;
  std::string scratch;
  EXPECT_EQ(decoder.Decode(padded, &scratch), KernelLog());
  EXPECT_EQ(decoder.binary_bytes(), 17);
  EXPECT_EQ(decoder.binary_runs(), 1);
  // Tabs, line breaks, form feeds and ESC (colors) are text; a UTF-8 byte order mark is not.
  std::string kept = "\xef\xbb\xbf\x1b[31mred\x1b[0m\tx\r\n\f";
  EXPECT_EQ(DecodeAll(kept + std::string("\x01\x02\x7f", 3) + "y"), kept.substr(3) + "y");
}

TEST(LooksLikeLog, ReadsTextThatIsPaddedEncodedOrLong) {
  std::string log = KernelLog();
  ASSERT_LT(log.size(), 1700u);
  // 17 NULs at the end of a 1.6 KB dmesg: over 1% of it.
  EXPECT_TRUE(LooksLikeLog(log + std::string(17, '\0')));
  // The last block of a file a crash left unwritten: more NULs than text.
  EXPECT_TRUE(LooksLikeLog(log + std::string(4096 - log.size(), '\0')));
  EXPECT_TRUE(LooksLikeLog(Utf16(log, true, true)));
  EXPECT_TRUE(LooksLikeLog(Utf16(log, false, true)));
  // A first line longer than 8 KiB.
  EXPECT_TRUE(LooksLikeLog(std::string(9000, 'x') + "\n" + log));
  EXPECT_TRUE(LooksLikeLog(LogHead(std::string(1 << 20, '\0') + log, 8192)));
}

TEST(LooksLikeLog, StillRefusesBinaryData) {
  std::mt19937 random(7);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  EXPECT_FALSE(LooksLikeLog(noise));
  EXPECT_THAT(DescribeNonLog(noise), HasSubstr("binary data"));
  std::string all_bytes;
  for (int c = 7; c < 250; ++c) all_bytes += static_cast<char>(c);
  EXPECT_FALSE(LooksLikeLog(all_bytes));
  EXPECT_FALSE(LooksLikeLog(std::string(4096, '\0')));
  EXPECT_EQ(DescribeNonLog(std::string(4096, '\0')),
            "binary data: 4096 NUL or control bytes and no text");
  EXPECT_EQ(DescribeNonLog(std::string("\x7f"
                                       "ELF\x02\x01\x01",
                                       7) +
                           std::string(64, '\0')),
            "an ELF core file or executable");
  EXPECT_EQ(DescribeNonLog("{\"version\": \"2.10\"}"), "JSON");
}

TEST(ParseLogFiles, FindsTheXidInPaddedUtf16AndLongLinedLogs) {
  const std::string log = KernelLog();
  struct Case {
    std::string bytes;
    int64_t xid_line;  // as an editor shows it: UTF-16 decoded, NULs on no line of their own
  };
  for (const Case& c : std::vector<Case>{{log + std::string(17, '\0'), 13},
                                         {log + std::string(4096, '\0'), 13},
                                         {Utf16(log, true, true), 13},
                                         {Utf16(log, false, true), 13},
                                         {std::string(9000, 'x') + "\n" + log, 14},
                                         {std::string(3 << 20, '\0') + log, 13}}) {
    LogSet logs = ParseFile(c.bytes);
    ASSERT_EQ(logs.files.size(), 1u);
    EXPECT_TRUE(logs.errors.empty());
    ASSERT_EQ(logs.events.size(), 1u);
    const LogEvent& xid = logs.events[0];
    EXPECT_EQ(xid.kind, LogEventKind::kXid);
    EXPECT_EQ(xid.xid, 79);
    EXPECT_EQ(xid.line, c.xid_line);
    EXPECT_EQ(xid.text, kXidLine.substr(0, kXidLine.size() - 1));
  }
}

TEST(ParseLogFiles, SetsAsideBinaryDataWithWhy) {
  std::string noise(8192, '\0');
  std::mt19937 random(3);
  for (char& c : noise) c = static_cast<char>(random());
  LogSet logs = ParseFile(noise);
  EXPECT_TRUE(logs.files.empty());
  ASSERT_EQ(logs.set_aside.size(), 1u);
  EXPECT_THAT(logs.set_aside[0].reason, HasSubstr("not a log: binary data"));
}

TEST(ParseLogText, ReadsAnOverlongLineInBoundedPieces) {
  LogParseOptions options;
  options.max_line_bytes = 1024;
  // A progress bar redrawn with '\r' for longer than the line cap, then the kernel's line: the
  // piece after the last redraw starts with it.
  std::string line;
  while (line.size() < 5000) line += "\r 42%|####      | 420/1000 [00:42<00:58, 10.0it/s]";
  line += "\r";
  line += kXidLine;
  LogSet logs;
  ASSERT_TRUE(ParseLogText("bar.log", "first\n" + line + "last\n", &logs, options).ok());
  ASSERT_EQ(logs.events.size(), 1u);
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kXid);
  EXPECT_EQ(logs.events[0].line, 2);
  EXPECT_EQ(logs.files[0].lines, 3);
  EXPECT_EQ(logs.files[0].long_lines, 1);
}

}  // namespace
}  // namespace fr
