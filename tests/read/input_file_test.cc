#include "fr/read/input_file.h"

#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "fr/base/buffer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A minimal protocol-2 pickle of {"version": "2.10"}, as torch writes it.
constexpr char kPickleBytes[] =
    "\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01X\x04\x00\x00\x00"
    "2.10q\x02u.";
const std::string kPickle(kPickleBytes, sizeof(kPickleBytes) - 1);

std::string TempPath(const std::string& name) {
  std::string dir = testing::TempDir();
  if (!dir.empty() && dir.back() == '/') dir.pop_back();  // /proc/self/maps shows clean paths
  return dir + "/" + name;
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// Runs a real command-line tool (zstd, gzip), as users compress their dumps.
void RunTool(const std::string& command) { ASSERT_EQ(std::system(command.c_str()), 0) << command; }

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// True when `data` lies inside a mapping of `path` in /proc/self/maps.
bool IsMappedFrom(const void* data, const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  auto address = reinterpret_cast<uintptr_t>(data);
  for (std::string line; std::getline(maps, line);) {
    if (line.find(path) == std::string::npos) continue;
    uintptr_t begin = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    uintptr_t end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    if (address >= begin && address < end) return true;
  }
  return false;
}

TEST(InputFileTest, PlainPickleIsReadAndStaysIntactWhileHeld) {
  std::string first_path = TempPath("nccl_trace_rank_0");
  std::string second_path = TempPath("nccl_trace_rank_1");
  WriteFile(first_path, kPickle);
  std::string second_bytes = kPickle;
  second_bytes[2] = 'X';  // same size, other bytes
  WriteFile(second_path, second_bytes);
  absl::StatusOr<InputFile> first = ReadInputFile(first_path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->compression, Compression::kNone);
  EXPECT_EQ(first->encoding, Encoding::kPickle);
  EXPECT_EQ(first->size_on_disk, kPickle.size());
  EXPECT_EQ(first->bytes->bytes(), kPickle);
  // The reading thread reuses its buffer only once nothing holds it: what a caller keeps (a
  // document's strings point into it) is never overwritten by the next file.
  absl::StatusOr<InputFile> second = ReadInputFile(second_path);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->bytes->bytes(), second_bytes);
  EXPECT_EQ(first->bytes->bytes(), kPickle);
  const char* second_data = second->bytes->bytes().data();
  second = absl::UnknownError("dropped");
  absl::StatusOr<InputFile> again = ReadInputFile(first_path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->bytes->bytes(), kPickle);
  EXPECT_EQ(again->bytes->bytes().data(), second_data);  // the freed buffer, taken again
  EXPECT_EQ(first->bytes->bytes(), kPickle);
}

TEST(InputFileTest, LargeFilesAreMappedNotCopied) {
  std::string path = TempPath("nccl_trace_rank_9");
  WriteFile(path, kPickle);
  std::error_code error;
  std::filesystem::resize_file(path, Buffer::kMaxReadSize + 1, error);  // sparse tail
  ASSERT_FALSE(error) << error.message();
  absl::StatusOr<std::shared_ptr<const Buffer>> bytes = Buffer::ReadFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ((*bytes)->size(), Buffer::kMaxReadSize + 1);
  EXPECT_EQ((*bytes)->bytes().substr(0, kPickle.size()), kPickle);
  EXPECT_TRUE(IsMappedFrom((*bytes)->bytes().data(), path));
}

TEST(InputFileTest, ZstdAndGzipAreDetectedByMagicWhateverTheName) {
  std::string json = R"({"entries":[],"version":"2.10"})";
  std::string source = TempPath("dump_source");
  WriteFile(source, json);
  // Wrong or missing extensions: only the bytes count.
  RunTool("zstd -q -f -19 " + source + " -o " + TempPath("rank_1.gz"));
  RunTool("gzip -c " + source + " > " + TempPath("rank_2.zst"));
  RunTool("zstd -q -f " + source + " -o " + TempPath("nccl_trace_rank_3"));
  struct Case {
    std::string name;
    Compression compression;
  } cases[] = {{"rank_1.gz", Compression::kZstd},
               {"rank_2.zst", Compression::kGzip},
               {"nccl_trace_rank_3", Compression::kZstd}};
  for (const Case& c : cases) {
    absl::StatusOr<InputFile> file = ReadInputFile(TempPath(c.name));
    ASSERT_TRUE(file.ok()) << c.name << ": " << file.status();
    EXPECT_EQ(file->compression, c.compression) << c.name;
    EXPECT_EQ(file->encoding, Encoding::kJson) << c.name;
    EXPECT_EQ(file->bytes->bytes(), json) << c.name;
    EXPECT_EQ(file->size_on_disk, ReadFile(TempPath(c.name)).size());
  }
}

TEST(InputFileTest, CompressedPickleDecodesToTheSameBytes) {
  std::string big = kPickle;
  for (int i = 0; i < 20000; ++i) big.insert(big.size() - 1, "N0");  // NONE POP: still a pickle
  WriteFile(TempPath("big_pickle"), big);
  RunTool("zstd -q -f " + TempPath("big_pickle") + " -o " + TempPath("big_pickle.zst"));
  absl::StatusOr<InputFile> file = ReadInputFile(TempPath("big_pickle.zst"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->encoding, Encoding::kPickle);
  EXPECT_EQ(file->bytes->bytes(), big);
}

TEST(InputFileTest, MultiFrameZstdWithAndWithoutContentSize) {
  std::string a = std::string(5000, 'a');
  std::string b = "{\"k\":" + std::string(3, '1') + "}";
  // Frame 1 from the library with its content size; frame 2 streamed, without it.
  std::string frame1(ZSTD_compressBound(b.size()), '\0');
  frame1.resize(ZSTD_compress(frame1.data(), frame1.size(), b.data(), b.size(), 3));
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 0);
  std::string frame2(ZSTD_compressBound(a.size()) + 64, '\0');
  ZSTD_inBuffer in{a.data(), a.size(), 0};
  ZSTD_outBuffer out{frame2.data(), frame2.size(), 0};
  ASSERT_EQ(ZSTD_compressStream2(context, &out, &in, ZSTD_e_end), 0u);
  frame2.resize(out.pos);
  ZSTD_freeCCtx(context);
  EXPECT_EQ(ZSTD_getFrameContentSize(frame2.data(), frame2.size()), ZSTD_CONTENTSIZE_UNKNOWN);

  absl::StatusOr<InputFile> file = ReadInputBytes(Buffer::FromString(frame1 + frame2));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->bytes->bytes(), b + a);
  EXPECT_EQ(file->encoding, Encoding::kJson);

  // The same with the command-line tool: `cat a.zst b.zst`.
  WriteFile(TempPath("part1"), "[1,");
  WriteFile(TempPath("part2"), "2]");
  RunTool("zstd -q -f " + TempPath("part1") + " -o " + TempPath("part1.zst"));
  RunTool("zstd -q -f " + TempPath("part2") + " -o " + TempPath("part2.zst"));
  RunTool("cat " + TempPath("part1.zst") + " " + TempPath("part2.zst") + " > " +
          TempPath("parts.zst"));
  file = ReadInputFile(TempPath("parts.zst"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->bytes->bytes(), "[1,2]");
}

TEST(InputFileTest, ConcatenatedGzipMembers) {
  WriteFile(TempPath("member1"), "[\"a\",");
  WriteFile(TempPath("member2"), "\"b\"]");
  RunTool("gzip -c " + TempPath("member1") + " > " + TempPath("members.gz"));
  RunTool("gzip -c " + TempPath("member2") + " >> " + TempPath("members.gz"));
  absl::StatusOr<InputFile> file = ReadInputFile(TempPath("members.gz"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->compression, Compression::kGzip);
  EXPECT_EQ(file->bytes->bytes(), "[\"a\",\"b\"]");
}

TEST(InputFileTest, TruncatedCompressedFilesAreDataLoss) {
  std::string payload;
  for (int i = 0; i < 20000; ++i) payload += "{\"record_id\":" + std::to_string(i) + "},";
  payload = "[" + payload + "0]";
  WriteFile(TempPath("payload"), payload);
  RunTool("zstd -q -f " + TempPath("payload") + " -o " + TempPath("payload.zst"));
  RunTool("gzip -c " + TempPath("payload") + " > " + TempPath("payload.gz"));
  for (std::string name : {"payload.zst", "payload.gz"}) {
    std::string compressed = ReadFile(TempPath(name));
    for (size_t keep : {compressed.size() / 2, compressed.size() - 1, size_t{6}}) {
      absl::StatusOr<InputFile> file =
          ReadInputBytes(Buffer::FromString(compressed.substr(0, keep)));
      EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss)
          << name << " cut at " << keep << ": " << file.status();
      EXPECT_THAT(Message(file.status()), HasSubstr("byte")) << name;
    }
    // Corrupt bytes in the middle.
    std::string corrupt = compressed;
    for (size_t i = corrupt.size() / 3; i < corrupt.size() / 3 + 16; ++i) corrupt[i] ^= 0x5a;
    absl::StatusOr<InputFile> file = ReadInputBytes(Buffer::FromString(corrupt));
    EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss) << name << file.status();
  }
}

TEST(InputFileTest, TruncatedGzipNamesTheMemberAndFileEnd) {
  std::string compressed;
  WriteFile(TempPath("small"), std::string(1000, 'x'));
  RunTool("gzip -c " + TempPath("small") + " > " + TempPath("small.gz"));
  compressed = ReadFile(TempPath("small.gz"));
  absl::StatusOr<InputFile> file =
      ReadInputBytes(Buffer::FromString(compressed.substr(0, compressed.size() - 4)));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Message(file.status()),
              HasSubstr(std::to_string(compressed.size() - 4)));  // the end of the file
}

TEST(InputFileTest, ExpansionBombIsRefusedAtTheLimit) {
  // 100 MB of zeros compresses to a few kilobytes.
  std::string zeros(100 << 20, '\0');
  std::string bomb(ZSTD_compressBound(zeros.size()), '\0');
  bomb.resize(ZSTD_compress(bomb.data(), bomb.size(), zeros.data(), zeros.size(), 1));
  // Streamed: no content size in the header, so the limit must stop the decoder itself.
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 0);
  std::string streamed(ZSTD_compressBound(zeros.size()), '\0');
  ZSTD_inBuffer in{zeros.data(), zeros.size(), 0};
  ZSTD_outBuffer out{streamed.data(), streamed.size(), 0};
  ASSERT_EQ(ZSTD_compressStream2(context, &out, &in, ZSTD_e_end), 0u);
  streamed.resize(out.pos);
  ZSTD_freeCCtx(context);
  zeros.clear();
  zeros.shrink_to_fit();
  ASSERT_LT(bomb.size(), 100000u);

  ReadOptions options;
  options.max_decompressed_bytes = 10 << 20;
  options.max_expansion_ratio = 1000000;  // only the size limit applies
  for (const std::string& data : {bomb, streamed}) {
    absl::StatusOr<InputFile> file = ReadInputBytes(Buffer::FromString(data), options);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kResourceExhausted) << file.status();
    EXPECT_THAT(Message(file.status()), HasSubstr("max_decompressed_bytes"));
  }
  // The expansion ratio alone (default 100x) refuses it as well.
  absl::StatusOr<InputFile> file = ReadInputBytes(Buffer::FromString(streamed));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(file.status()), HasSubstr("max_expansion_ratio"));

  // gzip too (through the Decompress entry point).
  std::string gzip_zeros(20 << 20, '\0');
  WriteFile(TempPath("zeros"), gzip_zeros);
  RunTool("gzip -c " + TempPath("zeros") + " > " + TempPath("zeros.gz"));
  std::string gz = ReadFile(TempPath("zeros.gz"));
  options.max_decompressed_bytes = 1 << 20;
  absl::StatusOr<std::shared_ptr<const Buffer>> bytes = Decompress(gz, Compression::kGzip, options);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kResourceExhausted);
}

// A 216 KB .gz of "{}," (955x) was decompressed to 216 MB of JSON, which the decoder then read
// into 3.4 GB before refusing it. Real dumps compress 6-25x: the ratio now stops such a file
// after 100x its size, before any decoding.
TEST(InputFileTest, GzipBombIsRefusedWithinAHundredTimesItsSize) {
  std::string json = "{\"version\": \"2.10\", \"entries\": [";
  uint64_t state = 1;  // a little noise keeps the ratio under gzip's maximum (~1030x)
  while (json.size() < (216u << 20)) {
    for (int i = 0; i < 333'333; ++i) json += "{},";
    json += "{\"x\": \"";
    for (int i = 0; i < 96; ++i) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      json += "0123456789abcdef"[state >> 60];
    }
    json += "\"},";
  }
  json += "{}]}";
  const uint64_t json_size = json.size();
  WriteFile(TempPath("bomb.json"), json);
  RunTool("gzip -9 -c " + TempPath("bomb.json") + " > " + TempPath("bomb.json.gz"));
  std::remove(TempPath("bomb.json").c_str());
  json.clear();
  json.shrink_to_fit();
  std::string gz = ReadFile(TempPath("bomb.json.gz"));
  std::remove(TempPath("bomb.json.gz").c_str());
  ASSERT_LT(gz.size(), 300u << 10);
  // Under the old 1000x, over the new 100x.
  ASSERT_GT(json_size / gz.size(), 500u);
  ASSERT_LT(json_size / gz.size(), 1000u);
  absl::StatusOr<InputFile> file = ReadInputBytes(Buffer::FromString(gz));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kResourceExhausted) << file.status();
  EXPECT_THAT(Message(file.status()), HasSubstr("expands more than 100x"));
  // What a real dump compresses to is read.
  std::string dump = "{\"version\": \"2.10\", \"entries\": []}";
  WriteFile(TempPath("small.json"), dump);
  RunTool("gzip -9 -c " + TempPath("small.json") + " > " + TempPath("small.json.gz"));
  EXPECT_TRUE(ReadInputBytes(Buffer::FromString(ReadFile(TempPath("small.json.gz")))).ok());
}

TEST(InputFileTest, JsonIsDetectedAfterWhitespaceAndBom) {
  for (std::string json :
       {std::string("  \n\t{\"a\":1}"), std::string("[1]"), std::string("\xef\xbb\xbf\r\n[]")}) {
    absl::StatusOr<InputFile> file = ReadInputBytes(Buffer::FromString(json));
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(file->encoding, Encoding::kJson);
    EXPECT_EQ(file->compression, Compression::kNone);
  }
}

TEST(InputFileTest, FilesThatAreNotDumpsSayWhatKindTheyAreAndQuoteNothing) {
  struct Case {
    std::string bytes;
    std::string message;
  } cases[] = {
      {std::string("\x7f"
                   "ELF\x02\x01\x01\x00",
                   8),
       "not a flight-recorder dump: an ELF core file or executable"},
      {"root:$y$j9T$secret:19000:0:99999:7:::\n",
       "not a flight-recorder dump: text (a log or configuration file?)"},
      {std::string("PK\x03\x04\x14\x00", 6),
       "not a flight-recorder dump: a zip archive (a torch.save checkpoint?)"},
      {std::string("\xfd"
                   "7zXZ\x00\x00",
                   7),
       "not a flight-recorder dump: an xz archive (decompress it first)"},
      {std::string("\x01\x02\xf0\x9f\x00", 5),
       "not a flight-recorder dump: binary data of an unknown kind"},
      {"   \n", "not a flight-recorder dump: 4 bytes of whitespace only"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    std::string path = TempPath("not_a_dump");
    WriteFile(path, c.bytes);
    absl::StatusOr<InputFile> file = ReadInputFile(path);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << file.status();
    EXPECT_TRUE(IsNotADump(file.status()));
    EXPECT_EQ(Message(file.status()), c.message);
  }
  // A log line starting with '[' looks like JSON here; the JSON decoder rejects it.
  WriteFile(TempPath("log"), "[rank0]:[E ProcessGroupNCCL.cpp:616] Watchdog caught\n");
  absl::StatusOr<InputFile> log = ReadInputFile(TempPath("log"));
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->encoding, Encoding::kJson);
}

TEST(InputFileTest, CompressedNonDumpSaysWhichLayer) {
  WriteFile(TempPath("core"), std::string("\x7f"
                                          "ELF\x02\x01\x01\x00 core",
                                          13));
  RunTool("zstd -q -f " + TempPath("core") + " -o " + TempPath("core.zst"));
  absl::StatusOr<InputFile> file = ReadInputFile(TempPath("core.zst"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsNotADump(file.status()));
  EXPECT_EQ(Message(file.status()),
            "after zstd decompression: not a flight-recorder dump: an ELF core file or executable");
}

TEST(InputFileTest, DamagedDumpsAreNotCalledOtherFiles) {
  WriteFile(TempPath("cut"), kPickle.substr(0, 1));
  EXPECT_TRUE(ReadInputFile(TempPath("cut")).ok());  // the decoder finds where it breaks
  WriteFile(TempPath("empty_dump"), "");
  EXPECT_FALSE(IsNotADump(ReadInputFile(TempPath("empty_dump")).status()));
  WriteFile(TempPath("bad.zst"), std::string("\x28\xb5\x2f\xfd\x00\x00", 6));
  absl::StatusOr<InputFile> bad_zstd = ReadInputFile(TempPath("bad.zst"));
  EXPECT_FALSE(bad_zstd.ok());
  EXPECT_FALSE(IsNotADump(bad_zstd.status()));
  EXPECT_FALSE(IsNotADump(absl::OkStatus()));
}

TEST(InputFileTest, AFifoIsRefusedAtOnceInsteadOfBlocking) {
  std::string path = TempPath("fifo_rank_3");
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // With no writer, a blocking open() of a FIFO never returns: reaching the check is the test.
  absl::StatusOr<InputFile> file = ReadInputFile(path);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(file.status()), "a FIFO, not a regular file: not read");
  absl::StatusOr<InputFile> device = ReadInputFile("/dev/zero");
  EXPECT_EQ(Message(device.status()), "a character device, not a regular file: not read");
  std::filesystem::remove(path);
}

TEST(InputFileTest, TheReadAheadHintNeverBlocksAndLeavesTheFileAsItWas) {
  // A FIFO with no writer, a missing file, a device: the hint returns at once and reads nothing
  // from them (reaching the checks is the test); a regular file reads the same after it.
  std::string fifo = TempPath("fifo_hint");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  HintWillRead(fifo);
  HintWillRead(TempPath("never_written"));
  HintWillRead("/dev/zero");
  WriteFile(TempPath("hinted_dump"), kPickle);
  HintWillRead(TempPath("hinted_dump"));
  absl::StatusOr<InputFile> file = ReadInputFile(TempPath("hinted_dump"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->bytes->bytes(), kPickle);
  std::filesystem::remove(fifo);
}

TEST(InputFileTest, ALinkIsRefusedWhenLinksAreNotFollowed) {
  WriteFile(TempPath("real_dump"), kPickle);
  std::string link = TempPath("link_dump");
  std::filesystem::remove(link);
  std::filesystem::create_symlink(TempPath("real_dump"), link);
  EXPECT_TRUE(ReadInputFile(link).ok());
  ReadOptions no_links;
  no_links.follow_symlinks = false;
  absl::StatusOr<InputFile> file = ReadInputFile(link, no_links);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Message(file.status()), "is a symbolic link now (not followed)");
  EXPECT_TRUE(ReadInputFile(TempPath("real_dump"), no_links).ok());
}

TEST(InputFileTest, MissingFileErrorsDoNotRepeatThePath) {
  absl::StatusOr<InputFile> file = ReadInputFile(TempPath("does_not_exist_either"));
  EXPECT_EQ(Message(file.status()), "cannot open: No such file or directory");
}

TEST(InputFileTest, EmptyFilesAreRejected) {
  WriteFile(TempPath("empty"), "");
  absl::StatusOr<InputFile> file = ReadInputFile(TempPath("empty"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(file.status()), "empty file (0 bytes)");

  RunTool("zstd -q -f " + TempPath("empty") + " -o " + TempPath("empty.zst"));
  file = ReadInputFile(TempPath("empty.zst"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(file.status()), HasSubstr("empty after zstd decompression"));
}

TEST(InputFileTest, MissingFileIsNotFound) {
  absl::StatusOr<InputFile> file = ReadInputFile(TempPath("does_not_exist"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
}

TEST(InputFileTest, NamesAndDetection) {
  EXPECT_EQ(CompressionName(Compression::kZstd), "zstd");
  EXPECT_EQ(CompressionName(Compression::kGzip), "gzip");
  EXPECT_EQ(CompressionName(Compression::kNone), "none");
  EXPECT_EQ(EncodingName(Encoding::kPickle), "pickle");
  EXPECT_EQ(EncodingName(Encoding::kJson), "json");
  EXPECT_EQ(*DetectCompression(std::string("\x28\xb5\x2f\xfd", 4)), Compression::kZstd);
  // pzstd output opens with a skippable frame.
  EXPECT_EQ(*DetectCompression(std::string("\x50\x2a\x4d\x18", 4)), Compression::kZstd);
  EXPECT_EQ(*DetectCompression("\x1f\x8b"), Compression::kGzip);
  EXPECT_EQ(*DetectCompression(kPickle), Compression::kNone);
  EXPECT_FALSE(DetectCompression("hello").ok());
  EXPECT_EQ(*DetectEncoding(kPickle), Encoding::kPickle);
  EXPECT_EQ(DetectEncoding("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fr
