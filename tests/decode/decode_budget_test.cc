// What decoding a hostile file may cost: at most one value and one child reference per input byte
// (the decoders' budget, see DocumentBuilder), shared containers marked so that consumers expand
// them once, a clear error for JSON over its size limit, and running out of memory reported as
// this file's error instead of ending the process.
#include <cstdint>
#include <string>

#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/decode/pickle_opcodes.h"
#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/decode/hostile_dumps.h"

namespace fr {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

absl::StatusOr<Document> Decode(std::string bytes) {
  return DecodePickle(Buffer::FromString(std::move(bytes)));
}

TEST(DecodeBudgetTest, HostileFilesDecodeToAtMostOneValuePerInputByte) {
  for (const std::string& bytes :
       {hostile::PgConfigSharingOneRankList(2000, 3000), hostile::DoublingLists(40),
        hostile::EntriesSharingOneShapeList(1, 10000, 10000),
        hostile::EntriesOfOneSharedDict(100000), hostile::ListOfNones(1 << 20, false)}) {
    absl::StatusOr<Document> doc = Decode(bytes);
    ASSERT_TRUE(doc.ok()) << doc.status();
    EXPECT_LE(doc->value_count(), bytes.size());
  }
}

TEST(DecodeBudgetTest, ContainersWithSeveralParentsAreMarkedShared) {
  // Each list holds the previous one twice: all but the root are reached along several paths.
  absl::StatusOr<Document> doubling = Decode(hostile::DoublingLists(3));
  ASSERT_TRUE(doubling.ok()) << doubling.status();
  ValueId list = doubling->root();
  EXPECT_FALSE(doubling->shared(list));
  for (int depth = 0; depth < 3; ++depth) {
    list = doubling->items(list)[0];
    EXPECT_TRUE(doubling->shared(list)) << depth;
  }

  // One entry dict named by both items of "entries": the dict is shared; what it holds has one
  // parent, and consumers treat it as shared for being inside a shared value.
  hostile::Dag dag;
  ValueId shapes = dag.List({dag.List({dag.Int(8)})});
  ValueId entry = dag.Dict({dag.Str("input_sizes"), shapes});
  ValueId entries = dag.List({entry, entry});
  absl::StatusOr<Document> doc = Decode(dag.Pickle(dag.Dict({dag.Str("entries"), entries})));
  ASSERT_TRUE(doc.ok()) << doc.status();
  ValueId decoded_entries = doc->Find(doc->root(), "entries");
  EXPECT_FALSE(doc->shared(decoded_entries));
  ValueId decoded_entry = doc->items(decoded_entries)[0];
  EXPECT_TRUE(doc->shared(decoded_entry));
  ValueId decoded_shapes = doc->Find(decoded_entry, "input_sizes");
  EXPECT_FALSE(doc->shared(decoded_shapes));
  EXPECT_FALSE(doc->shared(doc->items(decoded_shapes)[0]));
  EXPECT_FALSE(doc->shared(doc->root()));
}

TEST(DecodeBudgetTest, MemoizedButUsedOnceIsNotShared) {
  // CPython memoizes every container (MEMOIZE right after EMPTY_LIST); only a memo hit shares.
  auto op = [](PickleOpcode code) { return static_cast<char>(code); };
  std::string bytes = {op(PickleOpcode::kProto),     '\x04',
                       op(PickleOpcode::kEmptyList), op(PickleOpcode::kMemoize),
                       op(PickleOpcode::kEmptyList), op(PickleOpcode::kMemoize),
                       op(PickleOpcode::kAppend),    op(PickleOpcode::kStop)};
  absl::StatusOr<Document> once = Decode(bytes);
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_FALSE(once->shared(once->items(once->root())[0]));
  // [[], x] where x is a memo hit on the first list: now it has two parents.
  bytes.insert(bytes.size() - 1, {op(PickleOpcode::kBinGet), '\x01', op(PickleOpcode::kAppend)});
  absl::StatusOr<Document> twice = Decode(bytes);
  ASSERT_TRUE(twice.ok()) << twice.status();
  ASSERT_EQ(twice->size(twice->root()), 2u);
  EXPECT_TRUE(twice->shared(twice->items(twice->root())[0]));
  EXPECT_FALSE(twice->shared(twice->root()));
}

TEST(DecodeBudgetTest, RealDumpsShareOnlyTheirFrameDicts) {
  ExampleJobOptions options;
  options.world_size = 8;
  options.entries_per_rank = 50;
  options.stuck_rank = 5;
  absl::StatusOr<Document> doc = Decode(WriteDumpPickle(MakeExampleRankDump(options, 3)));
  ASSERT_TRUE(doc.ok()) << doc.status();
  int shared_frames = 0;
  for (ValueId entry : doc->items(doc->Find(doc->root(), "entries"))) {
    EXPECT_FALSE(doc->shared(entry));
    EXPECT_FALSE(doc->shared(doc->Find(entry, "input_sizes")));
    ValueId frames = doc->Find(entry, "frames");
    if (frames == kNoValue) continue;
    for (ValueId frame : doc->items(frames)) shared_frames += doc->shared(frame) ? 1 : 0;
  }
  EXPECT_GT(shared_frames, 0);
}

TEST(DecodeBudgetTest, JsonOverItsSizeLimitNamesTheSizeAndTheLimit) {
  JsonLimits limits;
  limits.max_input_bytes = 100;
  std::string json = R"({"version": "2.10", "entries": [)" + std::string(200, ' ') + "]}";
  absl::StatusOr<Document> doc = DecodeJson(Buffer::FromString(json), limits);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(doc.status()),
              HasSubstr(fmt::format("JSON input of {} bytes is larger than the limit of 100 bytes "
                                    "(JsonLimits::max_input_bytes",
                                    json.size())));
  // The default limit is documented and generous for real dumps.
  EXPECT_EQ(JsonLimits().max_input_bytes, kMaxJsonInputSize);
  EXPECT_TRUE(DecodeJson(Buffer::FromString(json)).ok());
}

// A process whose memory runs out while decoding gets this file's error, not an abort.
TEST(DecodeBudgetTest, RunningOutOfMemoryIsAnErrorOfTheFile) {
  if (hostile::kSanitized) GTEST_SKIP() << "address-space limits do not apply under sanitizers";
  constexpr uint64_t kLimit = uint64_t{512} << 20;
  int pickle = hostile::RunWithAddressSpaceLimit(kLimit, [] {
    // 24 bytes of document per None byte: about 1.5 GB.
    absl::StatusOr<Document> doc = Decode(hostile::ListOfNones(size_t{64} << 20, false));
    if (doc.ok()) return 1;
    bool named =
        doc.status().code() == absl::StatusCode::kResourceExhausted &&
        Message(doc.status()).find("out of memory decoding a pickle of") != std::string::npos;
    return named ? 0 : 2;
  });
  EXPECT_EQ(pickle, 0);
  int json = hostile::RunWithAddressSpaceLimit(kLimit, [] {
    std::string text = "[" + std::string(size_t{64} << 20, ' ') + "0]";
    absl::StatusOr<Document> doc = DecodeJson(Buffer::FromString(std::move(text)));
    if (doc.ok()) return 1;
    bool named = doc.status().code() == absl::StatusCode::kResourceExhausted &&
                 Message(doc.status()).find("out of memory decoding") != std::string::npos;
    return named ? 0 : 2;
  });
  EXPECT_EQ(json, 0);
}

}  // namespace
}  // namespace fr
