// Tests of the job writer: file names for every naming scheme, encodings and compressions
// recognisable by their magic bytes, and a decode round trip of what was written.
#include "fr/simulate/job_writer.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "fmt/format.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Decompress(const std::string& bytes, DumpCompression compression) {
  if (compression == DumpCompression::kZstd) {
    unsigned long long size = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
    std::string out(size, '\0');
    size_t n = ZSTD_decompress(out.data(), out.size(), bytes.data(), bytes.size());
    EXPECT_FALSE(ZSTD_isError(n));
    out.resize(n);
    return out;
  }
  if (compression == DumpCompression::kGzip) {
    z_stream z{};
    EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
    std::string out;
    char chunk[1 << 16];
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = static_cast<uInt>(bytes.size());
    int rc = Z_OK;
    while (rc == Z_OK) {
      z.next_out = reinterpret_cast<Bytef*>(chunk);
      z.avail_out = sizeof(chunk);
      rc = inflate(&z, Z_NO_FLUSH);
      out.append(chunk, sizeof(chunk) - z.avail_out);
    }
    EXPECT_EQ(rc, Z_STREAM_END);
    inflateEnd(&z);
    return out;
  }
  return bytes;
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("fr_job_writer_test_{}_{}", getpid(), counter_++);
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// A small job with a crashed rank: every surviving rank gets a file, the crashed one none.
const SimulatedJob& SmallCrashedJob() {
  static const SimulatedJob* job = [] {
    JobSimulatorOptions o;
    o.steps = 12;
    o.buffer_size = 200;
    o.ranks_per_host = 4;
    o.fault = {.kind = FaultKind::kCrashedRank, .rank = 3, .step = 9};
    return new SimulatedJob(*SimulateJob(o));
  }();
  return *job;
}

TEST(JobWriterTest, FileNamesPerNamingScheme) {
  const SimulatedJob& job = SmallCrashedJob();
  JobWriteOptions o;
  EXPECT_EQ(DumpFileName(job, 5, o), "nccl_trace_rank_5");
  o.naming = DumpNaming::kHostInName;
  EXPECT_EQ(DumpFileName(job, 5, o), "nccl_trace_rank_node01_5");
  o.naming = DumpNaming::kHostSubdirectory;
  o.compression = DumpCompression::kZstd;
  EXPECT_EQ(DumpFileName(job, 5, o), "node01/nccl_trace_rank_5.zst");
  o.naming = DumpNaming::kRankJson;
  o.encoding = DumpEncoding::kJson;
  o.compression = DumpCompression::kGzip;
  EXPECT_EQ(DumpFileName(job, 5, o), "rank_5.json.gz");
}

using Combination = std::tuple<DumpNaming, DumpEncoding, DumpCompression>;
class JobWriterCombinationTest : public ::testing::TestWithParam<Combination> {};

TEST_P(JobWriterCombinationTest, WritesEverySurvivingRankDecodably) {
  auto [naming, encoding, compression] = GetParam();
  const SimulatedJob& job = SmallCrashedJob();
  TempDir dir;
  JobWriteOptions o;
  o.naming = naming;
  o.encoding = encoding;
  o.compression = compression;
  o.threads = 2;
  absl::StatusOr<JobWriteStats> stats = WriteSimulatedJob(job, dir.path().string(), o);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->files, 7);
  // Exactly the expected files, nothing else.
  std::set<std::string> found, expected;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (e.is_regular_file()) found.insert(e.path().lexically_relative(dir.path()).string());
  }
  for (int64_t r = 0; r < 8; ++r) {
    if (r != 3) expected.insert(DumpFileName(job, r, o));
  }
  EXPECT_EQ(found, expected);
  uint64_t on_disk = 0;
  for (int64_t r : {0, 7}) {
    std::string bytes = ReadFile(dir.path() / DumpFileName(job, r, o));
    ASSERT_GE(bytes.size(), 4u);
    switch (compression) {
      case DumpCompression::kZstd:
        EXPECT_EQ(bytes.substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4));
        break;
      case DumpCompression::kGzip:
        EXPECT_EQ(bytes.substr(0, 2), std::string("\x1f\x8b", 2));
        break;
      case DumpCompression::kNone:
        break;
    }
    // The file looks written at the dump time, on the rank's host clock.
    struct stat st;
    ASSERT_EQ(stat((dir.path() / DumpFileName(job, r, o)).c_str(), &st), 0);
    EXPECT_EQ(st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec,
              job.ground_truth().dump_time_ns + job.HostClockSkewNs(r));
    std::string plain = Decompress(bytes, compression);
    // Byte-identical to the writer's output for the same spec.
    DumpSpec spec = *job.RankDump(r);
    EXPECT_EQ(plain, encoding == DumpEncoding::kJson ? WriteDumpJson(spec) : WriteDumpPickle(spec));
    if (encoding == DumpEncoding::kJson) {
      EXPECT_EQ(plain.front(), '{');
    } else {
      EXPECT_EQ(plain.substr(0, 2), std::string("\x80\x02", 2));
    }
    auto buffer = Buffer::FromString(plain);
    absl::StatusOr<Document> doc =
        encoding == DumpEncoding::kJson ? DecodeJson(buffer) : DecodePickle(buffer);
    ASSERT_TRUE(doc.ok()) << doc.status();
    ValueId entries = doc->Find(doc->root(), "entries");
    ASSERT_NE(entries, kNoValue);
    EXPECT_EQ(doc->size(entries), spec.entries.size());
    on_disk += bytes.size();
  }
  EXPECT_GT(on_disk, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    All, JobWriterCombinationTest,
    ::testing::Combine(::testing::Values(DumpNaming::kPrefix, DumpNaming::kHostInName,
                                         DumpNaming::kHostSubdirectory, DumpNaming::kRankJson),
                       ::testing::Values(DumpEncoding::kPickle, DumpEncoding::kJson),
                       ::testing::Values(DumpCompression::kNone, DumpCompression::kZstd,
                                         DumpCompression::kGzip)));

TEST(JobWriterTest, WritesTheRequestedVersion) {
  const SimulatedJob& job = SmallCrashedJob();
  TempDir dir;
  JobWriteOptions o;
  o.version = "1.4";
  ASSERT_TRUE(WriteSimulatedJob(job, dir.path().string(), o).ok());
  std::string bytes = ReadFile(dir.path() / "nccl_trace_rank_0");
  DumpSpec spec = *job.RankDump(0);
  spec.version = "1.4";
  EXPECT_EQ(bytes, WriteDumpPickle(spec));
  EXPECT_NE(bytes.find("1.4"), std::string::npos);
}

}  // namespace
}  // namespace fr
