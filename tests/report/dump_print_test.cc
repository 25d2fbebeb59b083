// `fr-analyze dump`: the printed size is known before printing, and a dump whose shared
// references would print more than the budget is refused with the size and the limit.
#include "fr/report/dump_print.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "fmt/format.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/read/input_file.h"
#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/decode/hostile_dumps.h"

namespace fr {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

InputFile PickleInput(std::string bytes) {
  InputFile input;
  input.bytes = Buffer::FromString(std::move(bytes));
  input.encoding = Encoding::kPickle;
  return input;
}

TEST(DumpPrintTest, SizeBoundIsTheExactSizeOfPlainDocuments) {
  // Shared lists are printed at every reference, as pickle.load returns them.
  for (int depth : {0, 1, 5, 12}) {
    absl::StatusOr<Document> doc = DecodePickle(Buffer::FromString(hostile::DoublingLists(depth)));
    ASSERT_TRUE(doc.ok()) << doc.status();
    EXPECT_EQ(PrintedJsonSizeBound(*doc), WriteLogicalJson(*doc).size()) << depth;
  }
  absl::StatusOr<Document> groups =
      DecodePickle(Buffer::FromString(hostile::PgConfigSharingOneRankList(20, 300)));
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_EQ(PrintedJsonSizeBound(*groups), WriteLogicalJson(*groups).size());
}

TEST(DumpPrintTest, RealDumpsPrintWellWithinTheBudget) {
  ExampleJobOptions options;
  options.world_size = 16;
  options.entries_per_rank = 400;
  options.stuck_rank = 5;
  std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, 3));
  absl::StatusOr<Document> doc = DecodeForPrinting(PickleInput(bytes));
  ASSERT_TRUE(doc.ok()) << doc.status();
  uint64_t printed = WriteLogicalJson(*doc).size();
  uint64_t bound = PrintedJsonSizeBound(*doc);
  // Floats are bounded at their widest; everything else is exact.
  EXPECT_GE(bound, printed);
  EXPECT_LE(bound, printed + printed / 10);
  // Repeated strings are memo hits in the pickle and printed in full: about ten times the input,
  // far from the budget's factor.
  EXPECT_LT(printed, bytes.size() * 16);
  EXPECT_LT(printed * 16, bytes.size() * kPrintedBytesPerInputByte);
}

TEST(DumpPrintTest, SharedReferencesOverTheBudgetAreRefusedWithSizeAndLimit) {
  // 40 levels of lists holding the previous one twice: a few hundred bytes printing 2^40 zeros.
  std::string bytes = hostile::DoublingLists(40);
  ASSERT_LT(bytes.size(), 1000u);
  absl::StatusOr<Document> doc = DecodeForPrinting(PickleInput(bytes));
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(doc.status()), HasSubstr(fmt::format("bytes of JSON, over the limit of {} "
                                                           "bytes",
                                                           PrintedSizeLimit(bytes.size()))));
  EXPECT_THAT(Message(doc.status()),
              HasSubstr("shared references (memo hits) are printed in full"));
  EXPECT_EQ(PrintedSizeLimit(bytes.size()), kMinPrintedBytes);

  // The value named is the smallest one over the limit: its size is under twice the limit.
  absl::StatusOr<Document> decoded = DecodePickle(Buffer::FromString(bytes));
  ASSERT_TRUE(decoded.ok());
  absl::Status status = CheckPrintedSize(*decoded, 1000);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("this value prints as up to 1"));
  EXPECT_THAT(Message(status), HasSubstr("over the limit of 1000 bytes"));
  EXPECT_EQ(PrintedJsonSizeBound(*decoded),
            (uint64_t{1} << 40) * 3 + ((uint64_t{1} << 41) - 2) * 2);

  // Sizes saturate, and say so.
  absl::StatusOr<Document> deeper = DecodePickle(Buffer::FromString(hostile::DoublingLists(70)));
  ASSERT_TRUE(deeper.ok());
  EXPECT_EQ(PrintedJsonSizeBound(*deeper), uint64_t{1} << 62);
  EXPECT_THAT(Message(CheckPrintedSize(*deeper, (uint64_t{1} << 62) - 1)),
              HasSubstr("prints as more than 4611686018427387904 bytes"));
}

TEST(DumpPrintTest, UnderTheBudgetSharedReferencesArePrintedInFull) {
  // 2^20 zeros, some 3 MB of JSON from a few hundred bytes: within the 64 MiB floor.
  std::string bytes = hostile::DoublingLists(20);
  absl::StatusOr<Document> doc = DecodeForPrinting(PickleInput(bytes));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(WriteLogicalJson(*doc).size(), PrintedJsonSizeBound(*doc));
}

// The command line, under an address-space limit, as a user would run it on hostile files: a
// per-file error, never an abort.
TEST(DumpPrintTest, CommandLineReportsHostileFilesWithinBoundedMemory) {
  if (hostile::kSanitized) GTEST_SKIP() << "address-space limits do not apply under sanitizers";
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("fr_dump_print_{}", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "job");
  auto write = [](const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  };
  write(dir / "doubling", hostile::DoublingLists(40));
  write(dir / "job" / "nccl_trace_rank_0", hostile::PgConfigSharingOneRankList(9000, 3000));
  write(dir / "job" / "nccl_trace_rank_1", hostile::EntriesSharingOneShapeList(1, 10000, 10000));
  write(dir / "job" / "nccl_trace_rank_2", hostile::EntriesOfOneSharedDict(3'000'000));
  auto run = [&](const std::string& args) {
    std::string command = fmt::format("ulimit -v 1000000; exec {} {} > {} 2>&1", FR_CLI_PATH, args,
                                      (dir / "out").string());
    int status = std::system(fmt::format("bash -c '{}'", command).c_str());
    std::ifstream in(dir / "out");
    std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output);
  };

  auto [dump_status, dump_output] = run(fmt::format("dump {}", (dir / "doubling").string()));
  EXPECT_EQ(dump_status, 2) << dump_output;
  EXPECT_THAT(dump_output, HasSubstr("bytes of JSON, over the limit of 67108864 bytes"));

  auto [load_status, load_output] = run(fmt::format("load {}", (dir / "job").string()));
  EXPECT_EQ(load_status, 2) << load_output;
  EXPECT_THAT(load_output, HasSubstr("pg_config['"));
  EXPECT_THAT(load_output, HasSubstr("entries[0]['input_sizes']"));
  EXPECT_THAT(load_output, HasSubstr("'entries' (3000000 entries)"));
  EXPECT_THAT(load_output, HasSubstr("NormalizeLimits"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fr
