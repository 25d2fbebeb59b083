// Normalization of every dump version: write a dump with the torch-exact writer, decode it, and
// check that the RankDump says what the spec said. Expectations come from the spec, never from
// the normalizer's own output.
#include "fr/normalize/normalize.h"

#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"
#include "fr/write/pickle_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/decode/hostile_dumps.h"

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

// Hostile dumps (tests/decode/hostile_dumps.h): small pickles whose shared references would
// expand to gigabytes or minutes if normalized once per reference.
struct Normalized {
  absl::StatusOr<RankDump> dump;
  NormalizeCost cost;
  size_t input_size = 0;
};

Normalized NormalizeWithCost(std::string bytes, const NormalizeLimits& limits = {},
                             bool json = false) {
  Normalized out{absl::UnknownError(""), {}, bytes.size()};
  auto buffer = Buffer::FromString(std::move(bytes));
  absl::StatusOr<Document> doc = json ? DecodeJson(buffer) : DecodePickle(buffer);
  if (!doc.ok()) {
    out.dump = doc.status();
    return out;
  }
  out.dump = NormalizeDump(*doc, 0, limits, &out.cost);
  return out;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// The error names the place, the limit and the budget's constants; the cost stopped there.
void ExpectOverBudget(const Normalized& result, std::string_view where, bool memory) {
  ASSERT_FALSE(result.dump.ok());
  EXPECT_EQ(result.dump.status().code(), absl::StatusCode::kResourceExhausted);
  std::string message = Message(result.dump.status());
  EXPECT_THAT(message, HasSubstr(where));
  EXPECT_THAT(message, HasSubstr("(byte "));
  uint64_t limit = memory ? result.cost.max_kept_bytes : result.cost.max_visits;
  EXPECT_THAT(message,
              HasSubstr(fmt::format("normalizing would {} more than {} {}",
                                    memory ? "keep" : "read", limit, memory ? "bytes" : "values")));
  EXPECT_THAT(message, HasSubstr(fmt::format("the budget for a {}-byte input (16 per input byte, "
                                             "at least {}: NormalizeLimits)",
                                             result.input_size, uint64_t{64} << 20)));
  // Over by at most what one step wanted, which was checked before it was taken.
  EXPECT_GT(memory ? result.cost.kept_bytes : result.cost.visits, limit);
  EXPECT_LE(result.cost.kept_bytes, result.cost.max_kept_bytes + (uint64_t{1} << 30));
}

TEST(NormalizeBudgetTest, RealDumpsStayFarBelowTheirBudgets) {
  ExampleJobOptions options;
  options.world_size = 16;
  options.entries_per_rank = 400;
  options.stuck_rank = 5;
  for (bool json : {false, true}) {
    DumpSpec spec = MakeExampleRankDump(options, 3);
    Normalized result =
        NormalizeWithCost(json ? WriteDumpJson(spec) : WriteDumpPickle(spec), {}, json);
    ASSERT_TRUE(result.dump.ok()) << result.dump.status();
    SCOPED_TRACE(json ? "json" : "pickle");
    // About as many bytes kept as read, and about one value read per 3 input bytes or fewer: the
    // budgets' factor of 16 leaves a wide margin.
    EXPECT_LT(result.cost.kept_bytes, 2 * result.input_size);
    EXPECT_LT(result.cost.visits, result.input_size / 2);
  }
}

TEST(NormalizeBudgetTest, GroupsSharingOneRankListAreRefusedPastTheBudget) {
  // 9000 groups naming one list of 3000 ranks: some 200 KB that would keep 216 MB of ranks.
  Normalized list = NormalizeWithCost(hostile::PgConfigSharingOneRankList(9000, 3000));
  ExpectOverBudget(list, "['ranks'] (byte ", /*memory=*/true);
  EXPECT_THAT(Message(list.dump.status()), HasSubstr("pg_config['"));
  // The same with the ranks as the string PyTorch writes, memoized by value.
  Normalized text = NormalizeWithCost(hostile::PgConfigSharingOneRanksString(9000, 3000));
  ExpectOverBudget(text, "['ranks'] (byte ", /*memory=*/true);
}

TEST(NormalizeBudgetTest, ASharedRankListIsReadOncePerDocument) {
  Normalized result = NormalizeWithCost(hostile::PgConfigSharingOneRanksString(200, 3000));
  ASSERT_TRUE(result.dump.ok()) << result.dump.status();
  ASSERT_EQ(result.dump->groups.size(), 200u);
  for (const ProcessGroup& group : result.dump->groups) {
    EXPECT_TRUE(group.ranks_known);
    ASSERT_EQ(group.ranks.size(), 3000u);
    EXPECT_EQ(group.ranks.back(), 2999);
  }
  // Kept once per group (that is what the model holds), read once: the string's 17 KB count
  // as a few hundred visits, not 200 times that.
  EXPECT_GE(result.cost.kept_bytes, 200u * 3000 * sizeof(int64_t));
  EXPECT_LT(result.cost.visits, 2000u);
}

TEST(NormalizeBudgetTest, EntriesSharingOneShapeListReadItOnce) {
  // 10^4 entries naming one list of 1000 references to one 1000-dim shape (a 26 KB file): read
  // once, 10^6 dims, rather than 10^10 (seconds of CPU per file before).
  Normalized result = NormalizeWithCost(hostile::EntriesSharingOneShapeList(10000, 1000, 1000));
  ASSERT_TRUE(result.dump.ok()) << result.dump.status();
  ASSERT_EQ(result.dump->entries.size(), 10000u);
  ShapeListId shapes = result.dump->entries[0].input_sizes;
  for (const Entry& entry : result.dump->entries) EXPECT_EQ(entry.input_sizes, shapes);
  std::vector<std::vector<int64_t>> decoded = result.dump->Shapes(shapes);
  ASSERT_EQ(decoded.size(), 1000u);
  EXPECT_EQ(decoded[999], std::vector<int64_t>(1000, 7));
  EXPECT_LT(result.cost.visits, 3'000'000u);
}

TEST(NormalizeBudgetTest, ASharedEntryDictIsReadOnce) {
  // One entry dict named 10^4 times, holding (once) a list of 1000 memo hits on a 1000-dim shape:
  // what the dict holds is reached 10^4 times though only the dict is shared.
  hostile::Dag dag;
  std::vector<ValueId> dims(1000, dag.Int(7));
  ValueId shape = dag.List(dims);
  ValueId entry = dag.Dict({dag.Str("profiling_name"), dag.Str("nccl:all_reduce"),
                            dag.Str("input_sizes"), dag.List(std::vector<ValueId>(1000, shape))});
  Normalized result = NormalizeWithCost(
      dag.Pickle(dag.Dict({dag.Str("version"), dag.Str("2.10"), dag.Str("entries"),
                           dag.List(std::vector<ValueId>(10000, entry))})));
  ASSERT_TRUE(result.dump.ok()) << result.dump.status();
  ASSERT_EQ(result.dump->entries.size(), 10000u);
  for (const Entry& e : result.dump->entries) {
    EXPECT_EQ(e.input_sizes, result.dump->entries[0].input_sizes);
    EXPECT_EQ(result.dump->strings.view(e.profiling_name), "nccl:all_reduce");
  }
  ASSERT_EQ(result.dump->groups.size(), 1u);
  EXPECT_EQ(result.dump->groups[0].entry_count, 10000);
  EXPECT_LT(result.cost.visits, 3'000'000u);
}

TEST(NormalizeBudgetTest, ShapeListsExpandingPastTheBudgetAreRefused) {
  // One entry whose shapes are 10^4 references to one 10^4-dim shape: 10^8 dims from 50 KB.
  Normalized huge = NormalizeWithCost(hostile::EntriesSharingOneShapeList(1, 10000, 10000));
  ExpectOverBudget(huge, "entries[0]['input_sizes'] (byte ", /*memory=*/false);
  // Distinct lists, each repeating one shared shape: every list is read, and the reading adds up.
  Normalized repeated = NormalizeWithCost(hostile::EntriesRepeatingOneShape(1000, 100, 1000));
  ExpectOverBudget(repeated, "]['input_sizes'] (byte ", /*memory=*/false);
}

TEST(NormalizeBudgetTest, EntriesAreCheckedBeforeTheirStorageIsCommitted) {
  // 5 MB of Nones under "entries": refused at the first item, before 680 MB of entries would be
  // committed (and pre-faulted), and nothing was kept.
  Normalized nones = NormalizeWithCost(hostile::ListOfNones(5 << 20, /*under_entries=*/true));
  ASSERT_FALSE(nones.dump.ok());
  EXPECT_EQ(nones.dump.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(nones.dump.status()), HasSubstr("entries[0] (byte "));
  EXPECT_THAT(Message(nones.dump.status()), HasSubstr("expected a dict, got none"));
  EXPECT_EQ(nones.cost.kept_bytes, 0u);
  // The same at the top level (the 2023 bare list of entries).
  Normalized bare = NormalizeWithCost(hostile::ListOfNones(5 << 20, /*under_entries=*/false));
  ASSERT_FALSE(bare.dump.ok());
  EXPECT_THAT(Message(bare.dump.status()), HasSubstr("entries[0] (byte 4)"));

  // Three million memo hits on one entry dict (6 MB) would need 400 MB of entries.
  Normalized shared = NormalizeWithCost(hostile::EntriesOfOneSharedDict(3'000'000));
  ExpectOverBudget(shared, "'entries' (3000000 entries) (byte ", /*memory=*/true);
}

TEST(NormalizeBudgetTest, SharedCommStateIsRefusedPastTheBudget) {
  hostile::Dag dag;
  std::vector<ValueId> pairs;
  for (int k = 0; k < 1000; ++k) {
    pairs.push_back(dag.Str(fmt::format("key{}", k)));
    pairs.push_back(dag.Str(std::string(100, 'v')));
  }
  ValueId state = dag.Dict(pairs);
  std::vector<ValueId> comms;
  for (int c = 0; c < 2000; ++c) {
    comms.push_back(dag.Str(fmt::format("comm{}", c)));
    comms.push_back(state);
  }
  Normalized result = NormalizeWithCost(dag.Pickle(dag.Dict(
      {dag.Str("version"), dag.Str("2.10"), dag.Str("nccl_comm_state"), dag.Dict(comms)})));
  ExpectOverBudget(result, "'nccl_comm_state' (byte ", /*memory=*/true);
}

TEST(NormalizeBudgetTest, OdditiesAreCountedWithoutAScanPerOddity) {
  // 100k distinct unknown keys and one very long one: the kinds are capped and the names short.
  hostile::Dag dag;
  std::vector<ValueId> pairs = {dag.Str("version"), dag.Str("2.10")};
  for (int k = 0; k < 100000; ++k) {
    pairs.push_back(dag.Str(fmt::format("k{}", k)));
    pairs.push_back(dag.Int(k));
  }
  pairs.push_back(dag.Str(std::string(1 << 20, 'x')));
  pairs.push_back(dag.Int(0));
  Normalized result = NormalizeWithCost(dag.Pickle(dag.Dict(pairs)));
  ASSERT_TRUE(result.dump.ok()) << result.dump.status();
  EXPECT_EQ(result.dump->OddityCount("unknown_top_level_key:k0"), 1);
  EXPECT_EQ(result.dump->oddities.size(), 257u);
  EXPECT_EQ(result.dump->OddityCount("more_oddity_kinds"), 100001 - 256);
  for (const auto& [name, count] : result.dump->oddities) EXPECT_LE(name.size(), 100u);
}

TEST(NormalizeBudgetTest, LimitsAreTheCallersToSet) {
  NormalizeLimits tight;
  tight.min_visits = 100;
  tight.visits_per_input_byte = 0;
  ExampleJobOptions options;
  options.world_size = 8;
  options.entries_per_rank = 40;
  options.stuck_rank = 5;
  Normalized result = NormalizeWithCost(WriteDumpPickle(MakeExampleRankDump(options, 3)), tight);
  ASSERT_FALSE(result.dump.ok());
  EXPECT_EQ(result.dump.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(result.dump.status()), HasSubstr("read more than 100 values"));
}

TEST(NormalizeBudgetTest, RunningOutOfMemoryIsAnErrorOfTheFile) {
  if (hostile::kSanitized) GTEST_SKIP() << "address-space limits do not apply under sanitizers";
  // With the budgets lifted, 8 M references to one entry dict want 8 M entries (over 1 GB) from
  // 16 MB of input. (Groups sharing one rank list no longer serve: they share it in memory too.)
  std::string bytes = hostile::EntriesOfOneSharedDict(8'000'000);
  int status = hostile::RunWithAddressSpaceLimit(uint64_t{768} << 20, [&] {
    NormalizeLimits unbounded;
    unbounded.kept_bytes_per_input_byte = uint64_t{1} << 20;
    unbounded.visits_per_input_byte = uint64_t{1} << 20;
    Normalized result = NormalizeWithCost(bytes, unbounded);
    if (result.dump.ok()) return 1;
    bool named = result.dump.status().code() == absl::StatusCode::kResourceExhausted &&
                 Message(result.dump.status()).find("out of memory normalizing") == 0;
    return named ? 0 : 2;
  });
  EXPECT_EQ(status, 0);
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

TEST(ParseRanksStringTest, LongListsSeenAgainAreSharedNotParsedAgainAndStayRight) {
  // A world list and 40 data-parallel lists, read in rank order as a loader reads dumps (cycling
  // through the groups), three times over: every read gives its own list back, and a list read
  // before is the same shared list (far more groups than a few remembered slots).
  auto list = [](int64_t first, int64_t stride, int64_t count) {
    std::vector<int64_t> ranks;
    for (int64_t i = 0; i < count; ++i) ranks.push_back(first + i * stride);
    return ranks;
  };
  auto text = [](const std::vector<int64_t>& ranks) {
    return fmt::format("[{}]", fmt::join(ranks, ", "));
  };
  const std::vector<int64_t> world = list(0, 1, 5000);
  std::vector<SharedRanks> first_seen(40);
  for (int round = 0; round < 3; ++round) {
    for (int64_t group = 0; group < 40; ++group) {
      SharedRanks world_ranks, dp_ranks, again;
      ASSERT_TRUE(ParseRanksStringShared(text(world), &world_ranks));
      EXPECT_TRUE(world_ranks == world);
      ASSERT_TRUE(ParseRanksStringShared(text(list(group, 40, 125)), &dp_ranks));
      EXPECT_TRUE(dp_ranks == list(group, 40, 125)) << "group " << group;
      if (round == 0) {
        first_seen[group] = dp_ranks;
      } else {
        EXPECT_TRUE(dp_ranks.SharesStorageWith(first_seen[group])) << "group " << group;
      }
      ASSERT_TRUE(ParseRanksStringShared(text(world), &again));
      EXPECT_TRUE(again.SharesStorageWith(world_ranks));
    }
  }
  // A bad long list stays bad when seen again.
  std::string bad = text(world) + ",";
  SharedRanks out;
  EXPECT_FALSE(ParseRanksStringShared(bad, &out));
  EXPECT_FALSE(ParseRanksStringShared(bad, &out));
}

}  // namespace
}  // namespace fr
