// Normalization of every dump version: write a dump with the torch-exact writer, decode it, and
// check that the RankDump says what the spec said. Expectations come from the spec, never from
// the normalizer's own output.
#include "fr/normalize/normalize.h"

#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"
#include "fr/write/pickle_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<RankDump> NormalizeBytes(std::string bytes, bool json, int64_t rank = 3) {
  auto buffer = Buffer::FromString(std::move(bytes));
  absl::StatusOr<Document> doc = json ? DecodeJson(buffer) : DecodePickle(buffer);
  if (!doc.ok()) return doc.status();
  return NormalizeDump(*doc, rank);
}

struct VersionCase {
  std::string version;
  bool has_groups_by_name;  // process_group in entries (>= 2.0)
  bool has_dtypes;
  bool time_in_us;  // before 1.1
};

class EveryVersionTest : public ::testing::TestWithParam<VersionCase> {};

TEST_P(EveryVersionTest, EntriesGroupsAndStacksSurvive) {
  const VersionCase& c = GetParam();
  ExampleJobOptions options;
  options.world_size = 8;
  options.entries_per_rank = 40;
  options.version = c.version;
  options.stuck_rank = 5;
  const int64_t rank = 3;
  DumpSpec spec = MakeExampleRankDump(options, rank);
  absl::StatusOr<RankDump> dump = NormalizeBytes(WriteDumpPickle(spec), /*json=*/false, rank);
  ASSERT_TRUE(dump.ok()) << dump.status();

  EXPECT_EQ(dump->version, c.version);
  EXPECT_EQ(dump->rank, rank);
  ASSERT_EQ(dump->entries.size(), spec.entries.size());
  for (size_t i = 0; i < spec.entries.size(); ++i) {
    const EntrySpec& want = spec.entries[i];
    const Entry& got = dump->entries[i];
    SCOPED_TRACE("entry " + std::to_string(i));
    EXPECT_EQ(got.collective_seq_id, want.collective_seq_id);
    EXPECT_EQ(dump->strings.view(got.profiling_name), want.profiling_name);
    EXPECT_EQ(EntryStateName(got.state), want.state);
    EXPECT_EQ(dump->Shapes(got.input_sizes), want.input_sizes);
    EXPECT_EQ(dump->Shapes(got.output_sizes), want.output_sizes);
    int64_t want_time = c.time_in_us ? want.time_created_ns / 1000 * 1000 : want.time_created_ns;
    EXPECT_EQ(got.time_created_ns, want_time);
    if (c.has_dtypes) {
      std::vector<std::string> dtypes;
      for (StringId s : dump->DtypeList(got.input_dtypes))
        dtypes.emplace_back(dump->strings.view(s));
      ASSERT_EQ(dtypes.size(), want.input_dtypes.size());
    }
    // Stacks resolve to the very frames the spec named, innermost first.
    if (spec.include_stacks && got.stack != kNoStack) {
      std::span<const uint32_t> frames = dump->Stack(got.stack);
      ASSERT_EQ(frames.size(), want.frames.size());
      for (size_t f = 0; f < frames.size(); ++f) {
        EXPECT_EQ(dump->strings.view(dump->frames[frames[f]].name),
                  spec.frames[want.frames[f]].name);
        EXPECT_EQ(dump->frames[frames[f]].line, spec.frames[want.frames[f]].line);
      }
    }
    if (c.has_groups_by_name) {
      EXPECT_EQ(dump->strings.view(dump->groups[got.group].name), want.pg_name);
      // A send/recv names its peer by group-local rank; the model holds the global rank.
      if (want.profiling_name == "nccl:send 0->1") {
        EXPECT_EQ(got.peer_rank, rank / 2 * 2 + 1);
      }
      if (want.profiling_name == "nccl:recv 1<-0") {
        EXPECT_EQ(got.peer_rank, rank / 2 * 2);
      }
    }
  }
  if (c.has_groups_by_name) {
    for (const ProcessGroupSpec& want : spec.process_groups) {
      StringId name = dump->strings.Find(want.name);
      ASSERT_NE(name, kNoString) << want.name;
      auto group = std::find_if(dump->groups.begin(), dump->groups.end(),
                                [&](const ProcessGroup& g) { return g.name == name; });
      ASSERT_NE(group, dump->groups.end());
      EXPECT_TRUE(group->ranks_known);
      EXPECT_EQ(group->ranks, want.ranks);
      EXPECT_EQ(dump->strings.view(group->desc), want.desc);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Versions, EveryVersionTest,
    ::testing::Values(VersionCase{"", false, false, true}, VersionCase{"1.0", false, false, true},
                      VersionCase{"1.1", false, false, false},
                      VersionCase{"1.4", false, false, false},
                      VersionCase{"2.0", true, true, false}, VersionCase{"2.2", true, true, false},
                      VersionCase{"2.3", true, true, false}, VersionCase{"2.5", true, true, false},
                      VersionCase{"2.6", true, true, false}, VersionCase{"2.9", true, true, false},
                      VersionCase{"2.10", true, true, false}),
    [](const auto& info) {
      std::string name = info.param.version.empty() ? "bare_list" : "v" + info.param.version;
      for (char& ch : name) {
        if (ch == '.') ch = '_';
      }
      return name;
    });

TEST(NormalizeTest, PgStatusIsAttachedToItsGroup) {
  ExampleJobOptions options;
  options.stuck_rank = 5;
  DumpSpec spec = MakeExampleRankDump(options, 1);  // rank 1 shares the data-parallel group with 5
  for (bool json : {false, true}) {
    SCOPED_TRACE(json ? "json" : "pickle");
    absl::StatusOr<RankDump> dump =
        NormalizeBytes(json ? WriteDumpJson(spec) : WriteDumpPickle(spec), json);
    ASSERT_TRUE(dump.ok()) << dump.status();
    for (const ProcessGroupSpec& want : spec.process_groups) {
      const PgStatusSpec& status = spec.pg_status.at(want.pg_id);
      auto group = std::find_if(
          dump->groups.begin(), dump->groups.end(),
          [&](const ProcessGroup& g) { return dump->strings.view(g.name) == want.name; });
      ASSERT_NE(group, dump->groups.end());
      ASSERT_TRUE(group->has_status) << want.name;
      EXPECT_EQ(group->status.last_enqueued_collective, status.last_enqueued_collective);
      EXPECT_EQ(group->status.last_completed_collective, status.last_completed_collective);
    }
  }
}

TEST(NormalizeTest, JsonAndPickleGiveTheSameEntries) {
  ExampleJobOptions options;
  DumpSpec spec = MakeExampleRankDump(options, 2);
  absl::StatusOr<RankDump> from_pickle = NormalizeBytes(WriteDumpPickle(spec), false);
  absl::StatusOr<RankDump> from_json = NormalizeBytes(WriteDumpJson(spec), true);
  ASSERT_TRUE(from_pickle.ok()) << from_pickle.status();
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  ASSERT_EQ(from_pickle->entries.size(), from_json->entries.size());
  EXPECT_TRUE(from_pickle->has_stacks);
  EXPECT_FALSE(from_json->has_stacks);  // JSON dumps carry no frames
  for (size_t i = 0; i < from_pickle->entries.size(); ++i) {
    const Entry& a = from_pickle->entries[i];
    const Entry& b = from_json->entries[i];
    EXPECT_EQ(a.collective_seq_id, b.collective_seq_id);
    EXPECT_EQ(a.p2p_seq_id, b.p2p_seq_id);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.peer_rank, b.peer_rank);
    EXPECT_EQ(a.time_discovered_started_ns, b.time_discovered_started_ns);
    EXPECT_EQ(a.time_discovered_completed_ns, b.time_discovered_completed_ns);
    EXPECT_EQ(from_pickle->Shapes(a.input_sizes), from_json->Shapes(b.input_sizes));
  }
}

TEST(NormalizeTest, MissingEntriesKeyIsNotAnError) {
  DumpSpec spec = MakeExampleRankDump(ExampleJobOptions{}, 0);
  spec.has_entries = false;
  absl::StatusOr<RankDump> dump = NormalizeBytes(WriteDumpPickle(spec), false);
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_FALSE(dump->has_entries_key);
  EXPECT_TRUE(dump->entries.empty());
  EXPECT_FALSE(dump->groups.empty());
}

TEST(NormalizeTest, NewerMinorVersionsCountUnknownKeysInsteadOfFailing) {
  std::string text =
      R"({"version":"2.14","future_top":{"x":1},"entries":[{"record_id":0,"pg_id":0,)"
      R"("process_group":["0","default_pg"],"collective_seq_id":1,"profiling_name":"nccl:all_reduce",)"
      R"("state":"completed","future_field":[1,2],"input_sizes":[[4]],"output_sizes":[[4]]}],)"
      R"("pg_config":{"0":{"name":"0","desc":"default_pg","ranks":"[0,1]"}}})";
  absl::StatusOr<RankDump> dump = NormalizeBytes(text, true);
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_EQ(dump->version_minor, 14);
  EXPECT_EQ(dump->OddityCount("unknown_top_level_key:future_top"), 1);
  EXPECT_EQ(dump->OddityCount("unknown_entry_key:future_field"), 1);
  ASSERT_EQ(dump->entries.size(), 1u);
  EXPECT_EQ(dump->entries[0].op, OpKind::kAllReduce);
  EXPECT_EQ(dump->groups[dump->entries[0].group].ranks, (std::vector<int64_t>{0, 1}));
}

TEST(NormalizeTest, WrongTypesNameTheKeyPathAndByteOffset) {
  std::string text = R"({"version":"2.10","entries":[{"record_id":0},{"record_id":"seven"}]})";
  absl::StatusOr<RankDump> dump = NormalizeBytes(text, true);
  ASSERT_FALSE(dump.ok());
  EXPECT_EQ(dump.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dump.status().message(), HasSubstr("entries[1]['record_id']"));
  EXPECT_THAT(dump.status().message(), HasSubstr("byte " + std::to_string(text.find("\"seven\""))));
  EXPECT_THAT(dump.status().message(), HasSubstr("expected an int, got str"));
}

// A 2.10 dump whose entries are given as JSON objects, re-encoded as a torch pickle: its key
// strings are memoized, so every entry after the first lists the same key values, as in real
// dumps (the case the normalizer reads by a learned layout).
std::string PickleOfEntries(const std::vector<std::string>& entries) {
  std::string text =
      R"({"version":"2.10","pg_config":{"0":{"name":"0","desc":"default_pg","ranks":"[0, 1]"}},)"
      R"("entries":[)";
  for (size_t i = 0; i < entries.size(); ++i) text += (i ? "," : "") + entries[i];
  text += "]}";
  absl::StatusOr<Document> doc = DecodeJson(Buffer::FromString(text));
  EXPECT_TRUE(doc.ok()) << doc.status();
  return doc.ok() ? PickleDocument(*doc) : std::string();
}

std::string EntryJson(int seq, std::string_view input_sizes = "[[4, 8]]",
                      std::string_view extra = "") {
  return fmt::format(
      R"({{"record_id":{0},"pg_id":0,"process_group":["0","default_pg"],)"
      R"("collective_seq_id":{0},"p2p_seq_id":0,"op_id":{0},"profiling_name":"nccl:all_reduce",)"
      R"("time_created_ns":{1},"input_sizes":{2},"input_dtypes":["Float"],)"
      R"("output_sizes":[[4, 8]],"output_dtypes":["Float"],"state":"completed",)"
      R"("time_discovered_started_ns":null,"time_discovered_completed_ns":{1},)"
      R"("retired":true,"timeout_ms":600000,"is_p2p":false{3}}})",
      seq, 1000 + seq, input_sizes, extra);
}

TEST(NormalizeTest, WrongTypeInALaterPickledEntryIsNamed) {
  std::vector<std::string> entries;
  for (int seq = 1; seq <= 5; ++seq) {
    entries.push_back(EntryJson(seq, seq == 4 ? R"([[4, "8"]])" : "[[4, 8]]"));
  }
  absl::StatusOr<RankDump> dump = NormalizeBytes(PickleOfEntries(entries), false);
  ASSERT_FALSE(dump.ok());
  EXPECT_EQ(dump.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dump.status().message(), HasSubstr("entries[3]['input_sizes']"));
  EXPECT_THAT(dump.status().message(), HasSubstr("expected an int size, got str"));
}

TEST(NormalizeTest, PickledEntriesWhoseKeysChangeMidDumpAreAllRead) {
  std::vector<std::string> entries = {EntryJson(1), EntryJson(2),
                                      EntryJson(3, "[[4, 8]]", R"(,"future_field":1)"),
                                      EntryJson(4, "[[2]]"), EntryJson(5, "[[4, 8], []]")};
  // An entry without a state and with its keys in another order.
  entries.push_back(
      R"({"pg_id":0,"record_id":6,"collective_seq_id":6,"process_group":["0","default_pg"],)"
      R"("profiling_name":"nccl:all_gather","input_sizes":[[3]],"output_sizes":[[6]]})");
  entries.push_back(EntryJson(7));
  absl::StatusOr<RankDump> dump = NormalizeBytes(PickleOfEntries(entries), false);
  ASSERT_TRUE(dump.ok()) << dump.status();
  ASSERT_EQ(dump->entries.size(), 7u);
  EXPECT_EQ(dump->OddityCount("unknown_entry_key:future_field"), 1);
  ASSERT_EQ(dump->groups.size(), 1u);
  EXPECT_EQ(dump->groups[0].entry_count, 7);
  for (size_t i = 0; i < dump->entries.size(); ++i) {
    const Entry& entry = dump->entries[i];
    int64_t seq = static_cast<int64_t>(i) + 1;
    EXPECT_EQ(entry.record_id, seq);
    EXPECT_EQ(entry.collective_seq_id, seq);
    EXPECT_EQ(dump->strings.view(dump->groups[entry.group].name), "0");
    if (seq == 6) {
      EXPECT_EQ(entry.op, OpKind::kAllGather);
      EXPECT_EQ(entry.state, EntryState::kUnknown);
      EXPECT_EQ(entry.time_created_ns, kUnknown);
      EXPECT_EQ(dump->Shapes(entry.input_sizes), (std::vector<std::vector<int64_t>>{{3}}));
      continue;
    }
    EXPECT_EQ(entry.op, OpKind::kAllReduce);
    EXPECT_EQ(entry.state, EntryState::kCompleted);
    EXPECT_EQ(entry.time_created_ns, 1000 + seq);
    EXPECT_EQ(entry.time_discovered_started_ns, kUnknown);
    EXPECT_EQ(entry.time_discovered_completed_ns, 1000 + seq);
    EXPECT_EQ(entry.timeout_ms, 600000);
    EXPECT_TRUE(entry.retired);
    std::vector<std::vector<int64_t>> expected_input =
        seq == 4   ? std::vector<std::vector<int64_t>>{{2}}
        : seq == 5 ? std::vector<std::vector<int64_t>>{{4, 8}, {}}
                   : std::vector<std::vector<int64_t>>{{4, 8}};
    EXPECT_EQ(dump->Shapes(entry.input_sizes), expected_input) << "entry " << i;
    EXPECT_EQ(dump->Shapes(entry.output_sizes), (std::vector<std::vector<int64_t>>{{4, 8}}));
    ASSERT_EQ(dump->DtypeList(entry.input_dtypes).size(), 1u);
    EXPECT_EQ(dump->strings.view(dump->DtypeList(entry.input_dtypes)[0]), "Float");
  }
}

TEST(NormalizeTest, EntriesThatAreNotDictsAreRejected) {
  absl::StatusOr<RankDump> dump = NormalizeBytes(R"({"version":"2.10","entries":[1,2]})", true);
  ASSERT_FALSE(dump.ok());
  EXPECT_THAT(dump.status().message(), HasSubstr("entries[0]"));
  EXPECT_THAT(dump.status().message(), HasSubstr("expected a dict, got int"));
  absl::StatusOr<RankDump> scalar = NormalizeBytes(R"("just a string")", true);
  ASSERT_FALSE(scalar.ok());
  EXPECT_THAT(scalar.status().message(), HasSubstr("top level"));
}

TEST(ParseRanksStringTest, BothSpellingsAndNoEval) {
  std::vector<int64_t> ranks;
  EXPECT_TRUE(ParseRanksString("[0, 1, 2]", &ranks));
  EXPECT_EQ(ranks, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(ParseRanksString("[4,5,6]", &ranks));
  EXPECT_EQ(ranks, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_TRUE(ParseRanksString("[]", &ranks));
  EXPECT_TRUE(ranks.empty());
  EXPECT_FALSE(ParseRanksString("[0, 1", &ranks));
  EXPECT_FALSE(ParseRanksString("__import__('os').system('x')", &ranks));
  EXPECT_FALSE(ParseRanksString("[0, -1]", &ranks));
  EXPECT_FALSE(ParseRanksString("[0,,1]", &ranks));
  EXPECT_TRUE(ParseRanksString("[999999999999999999]", &ranks));  // 18 digits
  EXPECT_EQ(ranks, (std::vector<int64_t>{999999999999999999}));
  EXPECT_FALSE(ParseRanksString("[9999999999999999999]", &ranks));  // beyond int64
}

}  // namespace
}  // namespace fr
