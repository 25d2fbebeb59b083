// The direct pickle reader against the general path (DecodePickle + NormalizeDump) on the same
// bytes: every dump it accepts must normalize to the identical RankDump, and it must accept what
// PyTorch really writes (the captured dumps) and what the torch-exact writer writes for every
// version from 2.2 on, with and without stacks. Damaged, reordered and hostile inputs must be
// declined or, when still read, read identically.
#include "fr/normalize/direct_pickle_reader.h"

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/model/rank_dump_equal.h"
#include "fr/normalize/normalize.h"
#include "fr/read/input_file.h"
#include "fr/simulate/example_job.h"
#include "fr/simulate/job_simulator.h"
#include "fr/write/dump_writer.h"
#include "gtest/gtest.h"
#include "tests/decode/hostile_dumps.h"

namespace fr {
namespace {

absl::StatusOr<RankDump> GeneralPath(const std::string& bytes, int64_t rank,
                                     const NormalizeLimits& limits = {}) {
  absl::StatusOr<Document> doc = DecodePickle(Buffer::FromString(bytes));
  if (!doc.ok()) return doc.status();
  return NormalizeDump(*doc, rank, limits);
}

// Whether the direct reader accepted `bytes`; fails the test when what it read differs from the
// general path, or when it accepted bytes that the general path refuses.
bool AcceptedAndIdentical(const std::string& bytes, int64_t rank,
                          const NormalizeLimits& limits = {}) {
  DirectReadResult direct = ReadTorchPickleDirect(bytes, rank, limits);
  if (!direct.dump.has_value()) {
    EXPECT_FALSE(direct.decline_reason.empty());
    return false;
  }
  absl::StatusOr<RankDump> general = GeneralPath(bytes, rank, limits);
  if (!general.ok()) {
    ADD_FAILURE() << "direct reader accepted bytes the general path refuses: " << general.status();
    return true;
  }
  std::string diff = DescribeRankDumpDifference(*direct.dump, *general);
  EXPECT_EQ(diff, "");
  return true;
}

std::string Why(const std::string& bytes) {
  DirectReadResult direct = ReadTorchPickleDirect(bytes, 0);
  return fmt::format("{} at byte {}", direct.decline_reason, direct.decline_offset);
}

TEST(DirectPickleReaderTest, ReadsEveryCapturedPickleIdentically) {
  int pickles = 0;
  for (const auto& file :
       std::filesystem::recursive_directory_iterator(std::string(FR_TEST_DATA_DIR) + "/torch")) {
    if (!file.is_regular_file() || file.path().parent_path().filename() != "dumps") continue;
    absl::StatusOr<InputFile> input = ReadInputFile(file.path().string());
    ASSERT_TRUE(input.ok()) << file.path() << ": " << input.status();
    if (input->encoding != Encoding::kPickle) continue;
    SCOPED_TRACE(file.path().string());
    std::string bytes(input->bytes->bytes());
    EXPECT_TRUE(AcceptedAndIdentical(bytes, 5)) << Why(bytes);
    ++pickles;
  }
  EXPECT_GE(pickles, 40);
}

class WriterVersionTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(WriterVersionTest, SimulatedJobsReadIdentically) {
  const auto& [version, stacks] = GetParam();
  const FaultKind kinds[] = {FaultKind::kNone,          FaultKind::kStuckBeforeOp,
                             FaultKind::kOpMismatch,    FaultKind::kSizeMismatch,
                             FaultKind::kDtypeMismatch, FaultKind::kMissingSend,
                             FaultKind::kGpuStall,      FaultKind::kStraggler};
  for (FaultKind kind : kinds) {
    JobSimulatorOptions options;
    options.tensor_parallel = 2;
    options.pipeline_parallel = 2;
    options.data_parallel = 2;
    options.steps = 16;
    options.buffer_size = 300;
    options.version = version;
    options.include_stacks = stacks;
    options.fault.kind = kind;
    options.fault.rank = 5;
    options.fault.step = 10;
    if (kind == FaultKind::kMissingSend) options.fault.group = GroupKind::kPipeline;
    if (kind == FaultKind::kGpuStall) options.fault.group = GroupKind::kTensor;
    absl::StatusOr<SimulatedJob> job = SimulateJob(options);
    ASSERT_TRUE(job.ok()) << job.status();
    for (int64_t rank = 0; rank < job->world_size(); ++rank) {
      std::optional<DumpSpec> spec = job->RankDump(rank);
      if (!spec.has_value()) continue;
      SCOPED_TRACE(fmt::format("{} rank {}", FaultKindName(kind), rank));
      std::string bytes = WriteDumpPickle(*spec);
      EXPECT_TRUE(AcceptedAndIdentical(bytes, rank)) << Why(bytes);
    }
  }
}

TEST_P(WriterVersionTest, ExampleJobsReadIdentically) {
  const auto& [version, stacks] = GetParam();
  ExampleJobOptions options;
  options.world_size = 16;
  options.tensor_parallel = 4;
  options.entries_per_rank = 400;
  options.version = version;
  options.include_stacks = stacks;
  options.stuck_rank = 7;
  for (int64_t rank = 0; rank < options.world_size; ++rank) {
    SCOPED_TRACE(rank);
    std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, rank));
    EXPECT_TRUE(AcceptedAndIdentical(bytes, rank)) << Why(bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, WriterVersionTest,
                         ::testing::Combine(::testing::Values("2.2", "2.3", "2.5", "2.6", "2.7",
                                                              "2.8", "2.9", "2.10", "2.11"),
                                            ::testing::Bool()));

// The comparison the tests rely on notices a difference in string order or in any table.
TEST(DirectPickleReaderTest, DifferenceIsFound) {
  ExampleJobOptions options;
  std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, 1));
  RankDump a = *ReadTorchPickleDirect(bytes, 1).dump;
  RankDump b = *ReadTorchPickleDirect(bytes, 1).dump;
  EXPECT_EQ(DescribeRankDumpDifference(a, b), "");
  b.entries.mutable_entry(3).stack = a.entries[4].stack + 1;
  EXPECT_NE(DescribeRankDumpDifference(a, b), "");
  RankDump c = *ReadTorchPickleDirect(bytes, 1).dump;
  c.strings.Intern("an extra string");
  EXPECT_NE(DescribeRankDumpDifference(a, c), "");
  RankDump d = *ReadTorchPickleDirect(bytes, 1).dump;
  d.oddities.emplace_back("x", 1);
  EXPECT_NE(DescribeRankDumpDifference(a, d), "");
}

TEST(DirectPickleReaderTest, DeclinesOlderLayouts) {
  for (std::string version : {"", "1.0", "1.1", "1.4", "2.0", "2.1"}) {
    SCOPED_TRACE(version);
    ExampleJobOptions options;
    options.version = version;
    std::string bytes = WriteDumpPickle(MakeExampleRankDump(options, 1));
    EXPECT_FALSE(AcceptedAndIdentical(bytes, 1));
  }
}

TEST(DirectPickleReaderTest, DeclinesJsonAndGarbage) {
  ExampleJobOptions options;
  EXPECT_FALSE(AcceptedAndIdentical(WriteDumpJson(MakeExampleRankDump(options, 1)), 1));
  EXPECT_FALSE(AcceptedAndIdentical("", 1));
  EXPECT_FALSE(AcceptedAndIdentical(std::string("\x80\x02", 2), 1));
  EXPECT_FALSE(AcceptedAndIdentical(std::string("\x80\x02}(u.", 6), 1));  // no version
}

TEST(DirectPickleReaderTest, CommStateAndPgStatusAreRead) {
  ExampleJobOptions options;
  options.version = "2.9";
  DumpSpec spec = MakeExampleRankDump(options, 2);
  spec.nccl_comm_state = std::map<std::string, std::map<std::string, std::string>>{
      {"123", {{"abort", "0"}, {"health", "ok"}}}, {"456", {{"abort", "1"}}}};
  spec.pg_status[99] = PgStatusSpec{5, 4, 3};  // a group no entry names
  std::string bytes = WriteDumpPickle(spec);
  ASSERT_TRUE(AcceptedAndIdentical(bytes, 2)) << Why(bytes);
  RankDump dump = *ReadTorchPickleDirect(bytes, 2).dump;
  EXPECT_EQ(dump.comm_state.size(), 3u);
  ASSERT_EQ(dump.unmatched_pg_status.size(), 1u);
  EXPECT_EQ(dump.unmatched_pg_status[0].first, 99);
}

TEST(DirectPickleReaderTest, NoEntriesKeyAndEmptyEntries) {
  ExampleJobOptions options;
  DumpSpec spec = MakeExampleRankDump(options, 2);
  spec.has_entries = false;
  std::string bytes = WriteDumpPickle(spec);
  ASSERT_TRUE(AcceptedAndIdentical(bytes, 2)) << Why(bytes);
  EXPECT_FALSE(ReadTorchPickleDirect(bytes, 2).dump->has_entries_key);
  spec.has_entries = true;
  spec.entries.clear();
  bytes = WriteDumpPickle(spec);
  EXPECT_TRUE(AcceptedAndIdentical(bytes, 2)) << Why(bytes);
}

// Many distinct stacks: after 16 learned layouts the normalizer reads every entry by keys, which
// changes the order in which new strings are first seen.
TEST(DirectPickleReaderTest, ManyStacksAndAlternatingLayouts) {
  ExampleJobOptions options;
  options.entries_per_rank = 300;
  DumpSpec spec = MakeExampleRankDump(options, 3);
  for (size_t i = 0; i < spec.entries.size(); ++i) {
    EntrySpec& e = spec.entries[i];
    if (i % 3 == 0) e.duration_ms.reset();
    if (i % 5 == 0) e.duration_ms = 1.5;
    if (i % 7 == 0) e.state = i % 2 ? "started" : "weird_state";
    if (i % 11 == 0) e.input_dtypes = {"Float", fmt::format("Dtype{}", i)};
    if (i % 13 == 0) e.thread_name = fmt::format("thread{}", i);
    spec.frames.push_back(
        FrameSpec{fmt::format("f{}", i), fmt::format("file{}.py", i % 4), static_cast<int64_t>(i)});
    e.frames.insert(e.frames.begin(), static_cast<uint32_t>(spec.frames.size() - 1));
  }
  std::string bytes = WriteDumpPickle(spec);
  EXPECT_TRUE(AcceptedAndIdentical(bytes, 3)) << Why(bytes);
}

// Entries that name a learned layout's key another way (LONG_BINGET instead of BINGET) leave the
// reader's fast loop for that entry part way through: first, middle and last keys, in some entries.
TEST(DirectPickleReaderTest, LayoutKeysNamedByLongGetsReadIdentically) {
  ExampleJobOptions options;
  options.entries_per_rank = 40;
  const std::string original = WriteDumpPickle(MakeExampleRankDump(options, 1));
  for (const std::string key : {"frames", "record_id", "thread_name", "is_p2p"}) {
    SCOPED_TRACE(key);
    std::string put = fmt::format("X{}{}q", std::string(1, static_cast<char>(key.size())),
                                  std::string(3, '\0') + key);
    size_t at = original.find(put);
    ASSERT_NE(at, std::string::npos);
    char slot = original[at + put.size()];
    std::string bytes = original.substr(0, at + put.size() + 1);
    int replaced = 0, seen = 0;
    for (size_t i = bytes.size(); i < original.size(); ++i) {
      // A key is followed by its value's opcode: ']' (frames), an int, a string get, a bool.
      const std::string followers = "]KMJh\x88\x89";
      if (original[i] == 'h' && i + 2 < original.size() && original[i + 1] == slot &&
          followers.find(original[i + 2]) != std::string::npos && seen++ % 3 != 1) {
        bytes += 'j';
        bytes += slot;
        bytes += std::string(3, '\0');
        ++replaced;
        ++i;
        continue;
      }
      bytes += original[i];
    }
    EXPECT_GT(replaced, 10);
    EXPECT_TRUE(AcceptedAndIdentical(bytes, 1)) << Why(bytes);
  }
}

// Every byte of a small dump replaced by a few values: whatever the reader still accepts must be
// what the general path reads.
TEST(DirectPickleReaderTest, MutatedBytesAreDeclinedOrReadIdentically) {
  ExampleJobOptions options;
  options.world_size = 4;
  options.entries_per_rank = 6;
  options.version = "2.9";
  std::string original = WriteDumpPickle(MakeExampleRankDump(options, 1));
  const uint8_t values[] = {0x00, 0x01, 0x02, 0x05, 0x30, 'K', 'h', 'q', 'u', 'e', 0x88, 0xff};
  int accepted = 0;
  for (size_t at = 0; at < original.size(); ++at) {
    for (uint8_t value : values) {
      std::string bytes = original;
      if (static_cast<uint8_t>(bytes[at]) == value) continue;
      bytes[at] = static_cast<char>(value);
      SCOPED_TRACE(fmt::format("byte {} = {:#x}", at, value));
      accepted += AcceptedAndIdentical(bytes, 1);
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::mt19937 random(7);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = original;
    size_t at = random() % bytes.size();
    size_t length = 1 + random() % 16;
    if (i % 2 == 0) {
      bytes.erase(at, length);
    } else {
      bytes.insert(at, original.substr(random() % original.size(), length));
    }
    SCOPED_TRACE(fmt::format("mutation {}", i));
    accepted += AcceptedAndIdentical(bytes, 1);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(accepted, 0);
}

TEST(DirectPickleReaderTest, HostileDumpsAreDeclinedOrReadIdentically) {
  NormalizeLimits small;
  small.min_kept_bytes = 1 << 20;
  small.min_visits = 1 << 16;
  const std::string cases[] = {
      hostile::PgConfigSharingOneRankList(2000, 300),
      hostile::PgConfigSharingOneRanksString(2000, 300),
      hostile::EntriesSharingOneShapeList(200, 50, 50),
      hostile::EntriesRepeatingOneShape(200, 50, 50),
      hostile::EntriesOfOneSharedDict(1000),
      hostile::DoublingLists(30),
      hostile::ListOfNones(10000, true),
      hostile::ListOfNones(10000, false),
  };
  for (const std::string& bytes : cases) {
    for (const NormalizeLimits& limits : {NormalizeLimits{}, small}) {
      AcceptedAndIdentical(bytes, 0, limits);
    }
  }
  // Rank lists named by memo hits are copied into each group: past the budget the general path
  // refuses them, so the direct reader must decline.
  std::string many = hostile::PgConfigSharingOneRanksString(3000, 2000);
  EXPECT_FALSE(ReadTorchPickleDirect(many, 0, small).dump.has_value());
}

}  // namespace
}  // namespace fr
