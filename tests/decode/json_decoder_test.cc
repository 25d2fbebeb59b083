#include "fr/decode/json_decoder.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

absl::StatusOr<Document> Decode(std::string json, const JsonLimits& limits = {}) {
  return DecodeJson(Buffer::FromString(std::move(json)), limits);
}

// One dump in the shape torch's JSON dumper writes: keys sorted, compact, process_group as a
// 2-element array, pg_status values as strings, times 0 instead of null.
constexpr std::string_view kTorchJsonDump =
    R"({"comm_lib_version":"2.21.5","entries":[{"collective_seq_id":7,"duration_ms":1.25,)"
    R"("input_dtypes":["Float"],"input_sizes":[[3,4],[]],"is_p2p":false,"op_id":9,)"
    R"("output_dtypes":["Float"],"output_sizes":[[3,4],[]],"p2p_seq_id":0,"pg_id":0,)"
    R"("process_group":["0","default_pg"],"profiling_name":"nccl:all_reduce","record_id":12,)"
    R"("retired":true,"state":"completed","thread_id":"140245","thread_name":"pt_main_thread",)"
    R"("time_created_ns":1712345678901234567,"time_discovered_completed_ns":0,)"
    R"("time_discovered_started_ns":0,"timeout_ms":600000}],"nccl_comm_state":{},)"
    R"("pg_config":{"0":{"desc":"default_pg","name":"0","ranks":"[0, 1]"}},)"
    R"("pg_status":{"0":{"last_completed_collective":"7","last_enqueued_collective":"7",)"
    R"("last_started_collective":"-1"}},"version":"2.10"})";

std::vector<std::string> Keys(const Document& doc, ValueId dict) {
  std::vector<std::string> keys;
  auto items = doc.items(dict);
  for (size_t i = 0; i < items.size(); i += 2) keys.emplace_back(doc.string_value(items[i]));
  return keys;
}

TEST(JsonDecoderTest, DecodesATorchJsonDumpWithKeysInFileOrder) {
  absl::StatusOr<Document> doc = Decode(std::string(kTorchJsonDump));
  ASSERT_TRUE(doc.ok()) << doc.status();
  ValueId root = doc->root();
  ASSERT_EQ(doc->kind(root), ValueKind::kDict);
  EXPECT_THAT(Keys(*doc, root),
              testing::ElementsAre("comm_lib_version", "entries", "nccl_comm_state", "pg_config",
                                   "pg_status", "version"));
  EXPECT_EQ(doc->string_value(doc->Find(root, "version")), "2.10");
  ValueId entries = doc->Find(root, "entries");
  ASSERT_EQ(doc->kind(entries), ValueKind::kList);
  ASSERT_EQ(doc->size(entries), 1u);
  ValueId entry = doc->items(entries)[0];
  EXPECT_EQ(doc->int_value(doc->Find(entry, "time_created_ns")), 1712345678901234567);
  EXPECT_EQ(doc->kind(doc->Find(entry, "duration_ms")), ValueKind::kFloat);
  EXPECT_EQ(doc->float_value(doc->Find(entry, "duration_ms")), 1.25);
  EXPECT_EQ(doc->kind(doc->Find(entry, "retired")), ValueKind::kBool);
  EXPECT_TRUE(doc->bool_value(doc->Find(entry, "retired")));
  EXPECT_FALSE(doc->bool_value(doc->Find(entry, "is_p2p")));
  EXPECT_EQ(doc->int_value(doc->Find(entry, "time_discovered_started_ns")), 0);

  ValueId group = doc->Find(entry, "process_group");
  ASSERT_EQ(doc->kind(group), ValueKind::kList);  // JSON has no tuples: the normalizer copes
  ASSERT_EQ(doc->size(group), 2u);
  EXPECT_EQ(doc->string_value(doc->items(group)[1]), "default_pg");

  ValueId sizes = doc->Find(entry, "input_sizes");
  ASSERT_EQ(doc->size(sizes), 2u);
  ValueId shape = doc->items(sizes)[0];
  ASSERT_EQ(doc->size(shape), 2u);
  EXPECT_EQ(doc->int_value(doc->items(shape)[0]), 3);
  EXPECT_EQ(doc->int_value(doc->items(shape)[1]), 4);
  EXPECT_EQ(doc->kind(doc->items(sizes)[1]), ValueKind::kList);
  EXPECT_EQ(doc->size(doc->items(sizes)[1]), 0u);

  ValueId status = doc->Find(doc->Find(root, "pg_status"), "0");
  EXPECT_EQ(doc->string_value(doc->Find(status, "last_started_collective")), "-1");
  ValueId comm_state = doc->Find(root, "nccl_comm_state");
  EXPECT_EQ(doc->kind(comm_state), ValueKind::kDict);
  EXPECT_EQ(doc->size(comm_state), 0u);
}

TEST(JsonDecoderTest, SourceOffsetsPointAtEachToken) {
  std::string json = R"( {"a": [1, "x\n", null], "b\u0041": -2.5e3})";
  absl::StatusOr<Document> doc = Decode(json);
  ASSERT_TRUE(doc.ok()) << doc.status();
  ValueId root = doc->root();
  EXPECT_EQ(doc->source_offset(root), json.find('{'));
  auto pairs = doc->items(root);
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(doc->source_offset(pairs[0]), json.find("\"a\""));
  EXPECT_EQ(doc->source_offset(pairs[1]), json.find('['));
  auto list = doc->items(pairs[1]);
  EXPECT_EQ(doc->source_offset(list[0]), json.find('1'));
  EXPECT_EQ(doc->source_offset(list[1]), json.find("\"x"));
  EXPECT_EQ(doc->source_offset(list[2]), json.find("null"));
  EXPECT_EQ(doc->string_value(list[1]), "x\n");
  EXPECT_EQ(doc->source_offset(pairs[2]), json.find("\"b"));
  EXPECT_EQ(doc->string_value(pairs[2]), "bA");
  EXPECT_EQ(doc->source_offset(pairs[3]), json.find("-2.5"));
  EXPECT_EQ(doc->float_value(pairs[3]), -2500.0);
}

TEST(JsonDecoderTest, IntegersAndFloatsAreExact) {
  absl::StatusOr<Document> doc = Decode(
      "[-9223372036854775808,9223372036854775807,0.1,1e300,-0.0,-0,1E2,5e-324,"
      "2.2250738585072014e-308,123456789012345678901234567890.0]");
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto items = doc->items(doc->root());
  ASSERT_EQ(items.size(), 10u);
  EXPECT_EQ(doc->kind(items[0]), ValueKind::kInt);
  EXPECT_EQ(doc->int_value(items[0]), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(doc->int_value(items[1]), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(doc->kind(items[2]), ValueKind::kFloat);
  EXPECT_EQ(std::bit_cast<uint64_t>(doc->float_value(items[2])), std::bit_cast<uint64_t>(0.1));
  EXPECT_EQ(doc->float_value(items[3]), 1e300);
  EXPECT_EQ(doc->kind(items[4]), ValueKind::kFloat);
  EXPECT_TRUE(std::signbit(doc->float_value(items[4])));
  // Python: json.loads("-0") == 0, an int.
  EXPECT_EQ(doc->kind(items[5]), ValueKind::kInt);
  EXPECT_EQ(doc->int_value(items[5]), 0);
  EXPECT_EQ(doc->kind(items[6]), ValueKind::kFloat);
  EXPECT_EQ(doc->float_value(items[6]), 100.0);
  EXPECT_EQ(doc->float_value(items[7]), 5e-324);
  EXPECT_EQ(doc->float_value(items[8]), 2.2250738585072014e-308);
  EXPECT_EQ(doc->float_value(items[9]), 123456789012345678901234567890.0);
}

TEST(JsonDecoderTest, UnicodeEscapesAndRawUtf8DecodeAlike) {
  absl::StatusOr<Document> doc = Decode(
      "[\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t\", \"caf\xc3\xa9 "
      "\xf0\x9f\x98\x80 \\\"q\\\" \\\\ / \\b\\f\\n\\r\\t\", \"\xe7\xba\xbf\xe7\xa8\x8b\"]");
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto items = doc->items(doc->root());
  std::string expected = "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" \\ / \b\f\n\r\t";
  EXPECT_EQ(doc->string_value(items[0]), expected);
  EXPECT_EQ(doc->string_value(items[1]), expected);
  EXPECT_EQ(doc->string_value(items[2]), "\xe7\xba\xbf\xe7\xa8\x8b");  // "线程"
}

TEST(JsonDecoderTest, ScalarAndEmptyContainerDocuments) {
  absl::StatusOr<Document> doc = Decode(" 42 ");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->int_value(doc->root()), 42);
  EXPECT_EQ(doc->source_offset(doc->root()), 1u);
  doc = Decode("\"s\"");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->string_value(doc->root()), "s");
  doc = Decode("[]");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->size(doc->root()), 0u);
  doc = Decode("{\"k\":{}}");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->size(doc->Find(doc->root(), "k")), 0u);
}

TEST(JsonDecoderTest, DuplicateKeysAreKeptAndTheLastWins) {
  absl::StatusOr<Document> doc = Decode(R"({"a":1,"b":2,"a":3})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_THAT(Keys(*doc, doc->root()), testing::ElementsAre("a", "b", "a"));
  EXPECT_EQ(doc->int_value(doc->Find(doc->root(), "a")), 3);
}

TEST(JsonDecoderTest, ByteOrderMarkIsSkippedAndOffsetsStayInTheFile) {
  absl::StatusOr<Document> doc = Decode("\xef\xbb\xbf[true]");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->source_offset(doc->root()), 3u);
  EXPECT_EQ(doc->source_offset(doc->items(doc->root())[0]), 4u);
  absl::StatusOr<Document> bad = Decode("\xef\xbb\xbf[tru]");
  EXPECT_THAT(std::string(bad.status().message()), StartsWith("byte 4: "));
}

TEST(JsonDecoderTest, DepthLimitIsExact) {
  JsonLimits limits;
  limits.max_depth = 5;
  EXPECT_TRUE(Decode("[[[[[1]]]]]", limits).ok());
  absl::StatusOr<Document> doc = Decode("[[[[[[1]]]]]]", limits);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(doc.status().message()), StartsWith("byte 5: nesting deeper than 5"));
  doc = Decode(R"({"a":{"b":[{"c":[[1]]}]}})", limits);
  EXPECT_THAT(std::string(doc.status().message()), StartsWith("byte 17: nesting deeper than 5"));
}

TEST(JsonDecoderTest, DeepNestingIsRejected) {
  absl::StatusOr<Document> doc = Decode(std::string(100000, '['));
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(doc.status().message()), StartsWith("byte 256: nesting deeper than 256"));
  doc = Decode(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_THAT(std::string(doc.status().message()), StartsWith("byte 256: nesting deeper than 256"));
}

TEST(JsonDecoderTest, ADeepLimitDoesNotRecurse) {
  // With a limit raised by the caller, deep but valid input decodes without deep C++ recursion.
  JsonLimits limits;
  limits.max_depth = 200000;
  constexpr int kDepth = 100000;
  absl::StatusOr<Document> doc =
      Decode(std::string(kDepth, '[') + "7" + std::string(kDepth, ']'), limits);
  ASSERT_TRUE(doc.ok()) << doc.status();
  ValueId value = doc->root();
  for (int i = 0; i < kDepth; ++i) value = doc->items(value)[0];
  EXPECT_EQ(doc->int_value(value), 7);
}

struct ErrorCase {
  std::string json;
  absl::StatusCode code;
  std::string message_start;  // "byte N: ..."
};

TEST(JsonDecoderTest, ErrorsNameTheirCodeAndOffset) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const auto kDataLoss = absl::StatusCode::kDataLoss;
  std::vector<ErrorCase> cases = {
      {"", kInvalid, "byte 0: empty document"},
      {"   ", kInvalid, "byte 3: empty document"},
      {"[1,]", kInvalid, "byte 3: expected a JSON value, found ']'"},
      {"[1 2]", kInvalid, "byte 3: expected ',' or ']', found '2'"},
      {R"({"a":1,})", kInvalid, "byte 7: expected a string key, found '}'"},
      {R"({"a" 1})", kInvalid, "byte 5: expected ':' after an object key"},
      {R"({1:2})", kInvalid, "byte 1: expected a string key"},
      {"[1,2]x", kInvalid, "byte 5: trailing content after the top-level value: 'x'"},
      {"[1,2] ]", kInvalid, "byte 6: trailing content"},
      {"{} {}", kInvalid, "byte 3: trailing content"},
      {"[truex]", kInvalid, "byte 1: invalid literal (expected 'true')"},
      {"[nul]", kInvalid, "byte 1: invalid literal (expected 'null')"},
      {"[01]", kInvalid, "byte 2: invalid number: unexpected '1' after the number"},
      {"[1.]", kInvalid, "byte 3: invalid number: expected a digit after '.'"},
      {"[-]", kInvalid, "byte 2: invalid number: expected a digit"},
      {"[+1]", kInvalid, "byte 1: expected a JSON value, found '+'"},
      {"[NaN]", kInvalid, "byte 1: expected a JSON value, found 'N'"},
      {"[1e400]", kInvalid, "byte 1: number 1e400 is out of the range of a double"},
      {"[9223372036854775808]", kInvalid,
       "byte 1: integer 9223372036854775808 does not fit in int64"},
      {"[18446744073709551615]", kInvalid, "byte 1: integer 18446744073709551615 does not fit"},
      {"[18446744073709551616]", kInvalid,
       "byte 1: integer 18446744073709551616 does not fit in 64 bits"},
      {"[-9223372036854775809]", kInvalid, "byte 1: integer -9223372036854775809 does not fit"},
      {"[\"a\x01\"]", kInvalid, "byte 3: unescaped control character 0x01"},
      {"[\"\\x\"]", kInvalid, "byte 2: invalid escape '\\x'"},
      {"[\"\\u12g4\"]", kInvalid, "byte 2: invalid \\u escape"},
      {"[\"\\ud800\"]", kInvalid, "byte 2: high surrogate not followed by a low surrogate"},
      {"[\"\\udc00\"]", kInvalid, "byte 2: lone low surrogate"},
      {"[\"\xff\"]", kInvalid, "byte 2: invalid UTF-8 in a string"},
      {"[\"\xc0\xaf\"]", kInvalid, "byte 2: invalid UTF-8"},
      {"[\"\xed\xa0\x80\"]", kInvalid, "byte 2: invalid UTF-8"},
      {"\x7f"
       "ELF",
       kInvalid, "byte 0: expected a JSON value, found byte 0x7f"},
      {"[1,2", kDataLoss, "byte 4: truncated JSON"},
      {R"({"a":1)", kDataLoss, "byte 6: truncated JSON"},
      {R"({"a":tr)", kDataLoss, "byte 7: truncated JSON: the document ends inside 'true'"},
      {R"(["abc)", kDataLoss, "byte 5: truncated JSON: the string starting at byte 1"},
      {"[1.", kDataLoss, "byte 3: truncated JSON: the document ends inside a number"},
      {"[\"\\u00", kDataLoss, "byte 6: truncated JSON"},
      {"[\"\xe7\xba", kDataLoss, "byte 4: truncated JSON"},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<Document> doc = Decode(c.json);
    EXPECT_EQ(doc.status().code(), c.code) << c.json << " -> " << doc.status();
    EXPECT_THAT(std::string(doc.status().message()), StartsWith(c.message_start)) << c.json;
  }
}

TEST(JsonDecoderTest, EveryPrefixOfADumpIsTruncationNotACrash) {
  std::string json(kTorchJsonDump);
  // Escapes and UTF-8 make the cut points more varied.
  json.insert(json.size() - 1, ",\"z\":[\"\\u00e9\\ud83d\\ude00\",\"\xc3\xa9\",-1.5e-7,null]");
  ASSERT_TRUE(Decode(json).ok());
  for (size_t length = 1; length < json.size(); ++length) {
    absl::StatusOr<Document> doc = Decode(json.substr(0, length));
    ASSERT_EQ(doc.status().code(), absl::StatusCode::kDataLoss)
        << length << ": " << json.substr(0, length) << " -> " << doc.status();
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr("truncated JSON"));
    EXPECT_THAT(std::string(doc.status().message()), StartsWith("byte ")) << length;
  }
}

// Runs Debian's CPython (as a user's script would) and returns its stdout.
std::string RunPython(const std::string& script_path) {
  std::string command = "/usr/bin/python3 " + script_path;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), pipe)) > 0) out.append(chunk, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::string Hex(std::string_view bytes) {
  std::string hex;
  for (char c : bytes) hex += fmt::format("{:02x}", static_cast<uint8_t>(c));
  return hex;
}

// One line per value in document order, in the same notation the Python script prints.
void Flatten(const Document& doc, ValueId id, std::vector<std::string>& lines) {
  switch (doc.kind(id)) {
    case ValueKind::kNone:
      lines.push_back("none");
      break;
    case ValueKind::kBool:
      lines.push_back(fmt::format("bool {}", doc.bool_value(id) ? 1 : 0));
      break;
    case ValueKind::kInt:
      lines.push_back(fmt::format("int {}", doc.int_value(id)));
      break;
    case ValueKind::kFloat:
      lines.push_back(fmt::format("float {:016x}", std::bit_cast<uint64_t>(doc.float_value(id))));
      break;
    case ValueKind::kString:
      lines.push_back(fmt::format("str {}", Hex(doc.string_value(id))));
      break;
    case ValueKind::kList:
    case ValueKind::kTuple:
    case ValueKind::kDict:
      lines.push_back(fmt::format("{} {}", ValueKindName(doc.kind(id)), doc.size(id)));
      for (ValueId child : doc.items(id)) Flatten(doc, child, lines);
      break;
  }
}

constexpr std::string_view kPythonScript = R"PY(
import json, random, struct, sys
out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
random.seed(7)
dtypes = ["Float", "BFloat16", "Half", "Long"]
ops = ["nccl:all_reduce", "nccl:_all_gather_base", "nccl:reduce_scatter_tensor_coalesced",
       "nccl:send 0->1", "nccl:recv 1<-0", "nccl:coalesced"]
entries = []
for i in range(300):
    shape = [[random.randint(1, 8192) for _ in range(random.randint(0, 3))]
             for _ in range(random.randint(1, 3))]
    entries.append({
        "record_id": i, "pg_id": i % 3, "process_group": [str(i % 3), "dp" if i % 2 else "tp"],
        "thread_name": "pt_main_thread" if i % 5 else "\u7ebf\u7a0b \"w\"\n\t\\ \U0001F600",
        "thread_id": str(140000000000 + i), "collective_seq_id": i // 2, "p2p_seq_id": i % 4,
        "op_id": i, "profiling_name": random.choice(ops),
        "time_created_ns": 1712345678901234567 + i * 123456789,
        "duration_ms": random.random() * 10 ** random.randint(-8, 8),
        "input_sizes": shape, "input_dtypes": [random.choice(dtypes) for _ in shape],
        "output_sizes": shape, "output_dtypes": [random.choice(dtypes) for _ in shape],
        "state": random.choice(["scheduled", "started", "completed"]),
        "time_discovered_started_ns": 0, "time_discovered_completed_ns": random.randint(0, 2**62),
        "retired": bool(i % 2), "timeout_ms": 600000, "is_p2p": i % 6 in (3, 4),
        "extra": [None, -2**63, 2**63 - 1, -0.0, 1e300, 5e-324, 0.1, -7, "\x01\x7f"],
    })
dump = {
    "version": "2.10", "comm_lib_version": "2.21.5", "nccl_comm_state": {},
    "pg_config": {str(g): {"name": str(g), "desc": "dp", "ranks": "[0, 1, 2, 3]"} for g in range(3)},
    "pg_status": {str(g): {"last_enqueued_collective": str(g), "last_started_collective": "-1",
                           "last_completed_collective": "-1"} for g in range(3)},
    "entries": entries,
}
for name, ascii_only in (("ascii.json", True), ("utf8.json", False)):
    with open(out_dir + "/" + name, "w", encoding="utf-8") as f:
        f.write(json.dumps(dump, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii_only))
with open(out_dir + "/ascii.json", encoding="utf-8") as f:
    loaded = json.load(f)
def flatten(value):
    if value is None: print("none")
    elif isinstance(value, bool): print("bool", int(value))
    elif isinstance(value, int): print("int", value)
    elif isinstance(value, float): print("float", struct.pack(">d", value).hex())
    elif isinstance(value, str): print("str", value.encode("utf-8").hex())
    elif isinstance(value, list):
        print("list", len(value))
        for item in value: flatten(item)
    else:
        print("dict", len(value))
        for key, item in value.items():
            flatten(key)
            flatten(item)
flatten(loaded)
)PY";

TEST(JsonDecoderTest, MatchesCPythonJsonLoadsOnAnFrLikeDump) {
  std::string dir = testing::TempDir();
  std::string script = dir + "/fr_json_differential.py";
  {
    std::ofstream file(script);
    file << kPythonScript;
  }
  std::string expected = RunPython(script + " " + dir);
  ASSERT_FALSE(expected.empty());
  std::vector<std::string> expected_lines;
  std::istringstream stream(expected);
  for (std::string line; std::getline(stream, line);) expected_lines.push_back(line);

  for (std::string name : {"ascii.json", "utf8.json"}) {
    std::string json = ReadFile(dir + "/" + name);
    ASSERT_GT(json.size(), 10000u);
    absl::StatusOr<Document> doc = Decode(json);
    ASSERT_TRUE(doc.ok()) << doc.status();
    std::vector<std::string> lines;
    Flatten(*doc, doc->root(), lines);
    ASSERT_EQ(lines.size(), expected_lines.size()) << name;
    for (size_t i = 0; i < lines.size(); ++i) {
      ASSERT_EQ(lines[i], expected_lines[i]) << name << " value #" << i;
    }
  }
}

TEST(JsonDecoderTest, ReusesItsParserAcrossManyDocuments) {
  // A large document followed by small ones (thread-local state keeps its buffers).
  std::string big = "[";
  for (int i = 0; i < 100000; ++i) big += fmt::format("{}\"s{}\",", i == 0 ? "" : "", i);
  big.back() = ']';
  absl::StatusOr<Document> doc = Decode(big);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->size(doc->root()), 100000u);
  EXPECT_EQ(doc->string_value(doc->items(doc->root())[99999]), "s99999");
  for (int i = 0; i < 100; ++i) {
    doc = Decode(fmt::format("[{}]", i));
    ASSERT_TRUE(doc.ok());
    EXPECT_EQ(doc->int_value(doc->items(doc->root())[0]), i);
  }
  // A document outlives the next decode on the same thread.
  absl::StatusOr<Document> first = Decode(R"(["first\n"])");
  absl::StatusOr<Document> second = Decode(R"(["second\n"])");
  EXPECT_EQ(first->string_value(first->items(first->root())[0]), "first\n");
  EXPECT_EQ(second->string_value(second->items(second->root())[0]), "second\n");
}

// Not a benchmark (bench/ has those), but it prints the throughput on a ~2 MB dump shaped like
// torch's JSON output and fails if decoding gets pathologically slow.
// A realistic 2 MB dump decodes completely (its speed is measured by bench/, not here).
TEST(JsonDecoderTest, DecodesATwoMegabyteDump) {
  std::string entries;
  std::string_view dump(kTorchJsonDump);
  size_t begin = dump.find("[{") + 1;
  size_t end = dump.find("}]") + 1;
  std::string entry(dump.substr(begin, end - begin));
  std::string json(dump.substr(0, begin));
  int count = 0;
  while (json.size() < (2 << 20)) {
    json += (count++ ? "," : "") + entry;
  }
  json += dump.substr(end);
  absl::StatusOr<Document> doc = DecodeJson(Buffer::FromString(json));
  ASSERT_TRUE(doc.ok()) << doc.status();
  ValueId list = doc->Find(doc->root(), "entries");
  ASSERT_EQ(doc->size(list), static_cast<size_t>(count));
  // The last entry is as complete as the first.
  ValueId last = doc->items(list).back();
  ValueId first = doc->items(list).front();
  EXPECT_EQ(doc->size(last), doc->size(first));
}

}  // namespace
}  // namespace fr
