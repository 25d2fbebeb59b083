// Tests of the writer stage: golden bytes worked out by hand from the format notes
// (docs/dump-format.md) and torch's pickler rules, differential checks against Debian's
// CPython, and round trips through the decoders once they exist.
#include "fr/write/dump_writer.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fr/decode/document_equal.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/write/dump_document.h"
#include "fr/write/json_writer.h"
#include "fr/write/pickle_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;

// Spells expected pickle bytes opcode by opcode, so that each golden below reads as a derivation.
class Expect {
 public:
  Expect& Raw(std::string_view bytes) {
    s_.append(bytes);
    return *this;
  }
  Expect& Byte(uint8_t b) {
    s_.push_back(static_cast<char>(b));
    return *this;
  }
  Expect& U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) Byte((v >> (8 * i)) & 0xff);
    return *this;
  }
  // BINUNICODE of `text`, then the BINPUT (or LONG_BINPUT) the pickler adds for a new string.
  Expect& Str(std::string_view text, uint32_t memo) {
    Byte('X').U32(static_cast<uint32_t>(text.size())).Raw(text);
    return Put(memo);
  }
  Expect& Put(uint32_t memo) { return memo <= 255 ? Byte('q').Byte(memo) : Byte('r').U32(memo); }
  Expect& Get(uint32_t memo) { return memo <= 255 ? Byte('h').Byte(memo) : Byte('j').U32(memo); }
  Expect& Int1(uint8_t v) { return Byte('K').Byte(v); }
  Expect& Long8(std::string_view little_endian_hex) {
    return Byte(0x8a).Byte(8).Hex(little_endian_hex);
  }
  Expect& Hex(std::string_view hex) {
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      Byte(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    }
    return *this;
  }
  Expect& Dict() { return Raw("}("); }
  Expect& List() { return Raw("]("); }
  Expect& SetItems() { return Raw("u"); }
  Expect& Appends() { return Raw("e"); }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

std::string ToHex(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
    out.push_back(' ');
  }
  return out;
}

#define EXPECT_BYTES(actual, expected) EXPECT_EQ(ToHex(actual), ToHex(expected))

// One group, one frame, one scheduled all_reduce: the smallest realistic dump.
DumpSpec SmallSpec(std::string version) {
  DumpSpec spec;
  spec.version = std::move(version);
  spec.process_groups = {{"0", "default_pg", {0, 1}, 0}};
  spec.pg_status[0] = {3, 3, 2};
  spec.frames = {{"main", "t.py", 7}};
  EntrySpec e;
  e.record_id = 0;
  e.pg_id = 0;
  e.pg_name = "0";
  e.pg_desc = "default_pg";
  e.collective_seq_id = 1;
  e.op_id = 1;
  e.profiling_name = "nccl:all_reduce";
  e.time_created_ns = 1700000000000000000;
  e.input_sizes = {{4}};
  e.input_dtypes = {"Float"};
  e.output_sizes = {{4}};
  e.output_dtypes = {"Float"};
  e.frames = {0};
  spec.entries = {e};
  return spec;
}

// Newest layout. Memo ids count every new string in order of appearance; "0" (id 3),
// "name" (4), "default_pg" (6) and "Float" (36) come back as BINGETs. The lone frame dict is held
// by one list only, so it is not memoized; 2.10 pickles a temporary, so no BINPUT before STOP.
TEST(WriteDumpPickleTest, Version2_10GoldenBytes) {
  Expect x;
  x.Raw("\x80\x02").Dict();
  x.Str("version", 0).Str("2.10", 1);
  x.Str("pg_config", 2).Dict().Str("0", 3);
  x.Dict().Str("name", 4).Get(3).Str("desc", 5).Str("default_pg", 6).Str("ranks", 7);
  x.Str("[0, 1]", 8).SetItems().SetItems();
  x.Str("comm_lib_version", 9).Str("2.21.5", 10);
  x.Str("pg_status", 11).Dict().Get(3).Dict();
  x.Str("last_enqueued_collective", 12).Int1(3);
  x.Str("last_started_collective", 13).Int1(3);
  x.Str("last_completed_collective", 14).Int1(2).SetItems().SetItems();
  x.Str("entries", 15).List().Dict();
  x.Str("frames", 16).List().Dict().Get(4).Str("main", 17).Str("filename", 18).Str("t.py", 19);
  x.Str("line", 20).Int1(7).SetItems().Appends();
  x.Str("record_id", 21).Int1(0).Str("pg_id", 22).Int1(0);
  x.Str("process_group", 23).Get(3).Get(6).Byte(0x86);
  x.Str("thread_name", 24).Str("pt_main_thread", 25);
  x.Str("thread_id", 26).Str("140000000000000", 27);
  x.Str("collective_seq_id", 28).Int1(1).Str("p2p_seq_id", 29).Int1(0).Str("op_id", 30).Int1(1);
  x.Str("profiling_name", 31).Str("nccl:all_reduce", 32);
  x.Str("time_created_ns", 33).Long8("00002a36fe9c9717");  // 1700000000000000000
  x.Str("input_sizes", 34).List().List().Int1(4).Appends().Appends();
  x.Str("input_dtypes", 35).List().Str("Float", 36).Appends();
  x.Str("output_sizes", 37).List().List().Int1(4).Appends().Appends();
  x.Str("output_dtypes", 38).List().Get(36).Appends();
  x.Str("state", 39).Str("scheduled", 40);
  x.Str("time_discovered_started_ns", 41).Raw("N");
  x.Str("time_discovered_completed_ns", 42).Raw("N");
  x.Str("retired", 43).Byte(0x89);
  x.Str("timeout_ms", 44).Byte('J').Hex("c0270900");  // 600000 needs BININT
  x.Str("is_p2p", 45).Byte(0x89);
  x.SetItems().Appends().SetItems().Raw(".");
  EXPECT_BYTES(WriteDumpPickle(SmallSpec("2.10")), x.str());
}

// A frame dict used by two entries is memoized after its SETITEMS and fetched with BINGET.
TEST(WriteDumpPickleTest, SharedFrameBecomesBinGet) {
  DumpSpec spec = SmallSpec("2.10");
  spec.entries.push_back(spec.entries[0]);
  std::string bytes = WriteDumpPickle(spec);
  // First entry: "line" (20) K 7 SETITEMS, BINPUT 21 for the frame dict, APPENDS.
  EXPECT_THAT(bytes,
              HasSubstr(Expect().Str("line", 20).Int1(7).SetItems().Put(21).Appends().str()));
  // Second entry: "frames" is string 16, its own new list holds BINGET 21.
  EXPECT_THAT(bytes, HasSubstr(Expect().Get(16).List().Get(21).Appends().str()));
  // Frame lists are per entry: no list is memoized, so id 21 is the only container BINPUT.
  EXPECT_EQ(bytes.substr(bytes.size() - 3), "eu.");
}

// Versions before 2.10 pickle a local dict: one more reference, so a BINPUT before STOP.
TEST(WriteDumpPickleTest, TopLevelMemoDependsOnVersion) {
  EXPECT_EQ(
      WriteDumpPickle(SmallSpec("2.10")).substr(WriteDumpPickle(SmallSpec("2.10")).size() - 2),
      "u.");
  for (std::string v : {"2.2", "2.3", "2.5", "2.6", "2.9"}) {
    std::string bytes = WriteDumpPickle(SmallSpec(v));
    ASSERT_GE(bytes.size(), 4u);
    EXPECT_EQ(bytes.substr(bytes.size() - 4, 2), "uq") << v;
    EXPECT_EQ(bytes.back(), '.') << v;
  }
}

// The 2023 format: a bare list; the single dump() function still holds the frame cache and the
// list while pickling, so the frame dict (16) and the list (17) are memoized although used once.
TEST(WriteDumpPickleTest, BareListGoldenBytes) {
  Expect x;
  x.Raw("\x80\x02").List().Dict();
  x.Str("pg_id", 0).Int1(0).Str("seq_id", 1).Int1(1);
  x.Str("profiling_name", 2).Str("nccl:all_reduce", 3);
  x.Str("time_created_us", 4).Long8("00401e18240a0600");  // 1700000000000000 us
  x.Str("input_sizes", 5).List().List().Int1(4).Appends().Appends();
  x.Str("output_sizes", 6).List().List().Int1(4).Appends().Appends();
  x.Str("state", 7).Str("scheduled", 8).Str("retired", 9).Byte(0x89);
  x.Str("frames", 10).List().Dict().Str("name", 11).Str("main", 12).Str("filename", 13);
  x.Str("t.py", 14).Str("line", 15).Int1(7).SetItems().Put(16).Appends();
  x.SetItems().Appends().Put(17).Raw(".");
  EXPECT_BYTES(WriteDumpPickle(SmallSpec("")), x.str());
}

// 1.1: {entries, version}, time_created_ns and discovery times, frames last; the entries list
// (20) and top-level dict (23) are locals of dump() and so memoized.
TEST(WriteDumpPickleTest, Version1_1GoldenBytes) {
  Expect x;
  x.Raw("\x80\x02").Dict().Str("entries", 0).List().Dict();
  x.Str("pg_id", 1).Int1(0).Str("seq_id", 2).Int1(1);
  x.Str("profiling_name", 3).Str("nccl:all_reduce", 4);
  x.Str("time_created_ns", 5).Long8("00002a36fe9c9717");
  x.Str("input_sizes", 6).List().List().Int1(4).Appends().Appends();
  x.Str("output_sizes", 7).List().List().Int1(4).Appends().Appends();
  x.Str("state", 8).Str("scheduled", 9);
  x.Str("time_discovered_started_ns", 10).Raw("N");
  x.Str("time_discovered_completed_ns", 11).Raw("N");
  x.Str("retired", 12).Byte(0x89);
  x.Str("frames", 13).List().Dict().Str("name", 14).Str("main", 15).Str("filename", 16);
  x.Str("t.py", 17).Str("line", 18).Int1(7).SetItems().Put(19).Appends();
  x.SetItems().Appends().Put(20);
  x.Str("version", 21).Str("1.1", 22).SetItems().Put(23).Raw(".");
  EXPECT_BYTES(WriteDumpPickle(SmallSpec("1.1")), x.str());
}

// 1.4: int-keyed pg_config of rank lists, itself a memoized local.
TEST(WriteDumpPickleTest, Version1_4PgConfigHasIntKeys) {
  DumpSpec spec = SmallSpec("1.4");
  spec.process_groups.push_back({"1", "sub", {1}, 300});
  std::string bytes = WriteDumpPickle(spec);
  // pg_config: {0: [0, 1], 300: [1]} then its BINPUT, then SETITEMS of the top level and its
  // BINPUT.
  std::string tail = Expect()
                         .Dict()
                         .Int1(0)
                         .List()
                         .Int1(0)
                         .Int1(1)
                         .Appends()
                         .Byte('M')
                         .Hex("2c01")
                         .List()
                         .Int1(1)
                         .Appends()
                         .SetItems()
                         .str();
  EXPECT_THAT(bytes, HasSubstr(tail + "q"));
  EXPECT_EQ(bytes.substr(bytes.size() - 4, 2), "uq");
}

Document MakeDocument(const std::function<ValueId(DocumentBuilder&)>& build) {
  DocumentBuilder b;
  b.Reset(nullptr);
  ValueId root = build(b);
  return b.Finish(root);
}

ValueId AddList(DocumentBuilder& b, const std::vector<ValueId>& items,
                ValueKind kind = ValueKind::kList) {
  ValueId list = b.AddContainer(kind, 0);
  b.Append(list, items);
  return list;
}

// 300 distinct strings: ids 256 and up need LONG_BINPUT, and fetching them LONG_BINGET.
TEST(PickleDocumentTest, LongMemoIds) {
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) names.push_back(fmt::format("s{:03}", i));
  Document doc = MakeDocument([&](DocumentBuilder& b) {
    std::vector<ValueId> items;
    for (const auto& n : names) items.push_back(b.AddOwnedString(n, 0));
    items.push_back(b.AddOwnedString("s000", 0));
    items.push_back(b.AddOwnedString("s299", 0));
    return AddList(b, items);
  });
  Expect x;
  x.Raw("\x80\x02").List();
  for (int i = 0; i < 300; ++i) x.Str(names[i], i);
  x.Get(0).Get(299).Appends().Raw(".");
  std::string bytes = PickleDocument(doc);
  EXPECT_BYTES(bytes, x.str());
  EXPECT_THAT(bytes, HasSubstr(std::string("s256r\x00\x01\x00\x00", 9)));
  EXPECT_THAT(bytes, HasSubstr(std::string("j\x2b\x01\x00\x00", 5)));
}

TEST(PickleDocumentTest, IntegerAndScalarEncodings) {
  std::vector<int64_t> ints = {0,         255,       256,        65535,       65536,     -1,
                               INT32_MIN, INT32_MAX, 2147483648, -2147483649, INT64_MIN, INT64_MAX};
  Document doc = MakeDocument([&](DocumentBuilder& b) {
    std::vector<ValueId> items;
    for (int64_t v : ints) items.push_back(b.AddInt(v, 0));
    items.push_back(b.AddFloat(1.5, 0));
    items.push_back(b.AddNone(0));
    items.push_back(b.AddBool(true, 0));
    items.push_back(b.AddBool(false, 0));
    ValueId one = b.AddOwnedString("a", 0);
    items.push_back(AddList(b, {one}, ValueKind::kTuple));
    items.push_back(AddList(b, {}, ValueKind::kTuple));
    items.push_back(AddList(b, {one, one, one, one}, ValueKind::kTuple));
    return AddList(b, items);
  });
  Expect x;
  x.Raw("\x80\x02").List();
  x.Hex("4b00").Hex("4bff").Hex("4d0001").Hex("4dffff");                      // BININT1, BININT2
  x.Hex("4a00000100").Hex("4affffffff").Hex("4a00000080").Hex("4affffff7f");  // BININT
  x.Long8("0000008000000000").Long8("ffffff7fffffffff");                      // 2^31, -2^31-1
  x.Long8("0000000000000080").Long8("ffffffffffffff7f");  // INT64_MIN, INT64_MAX
  x.Hex("473ff8000000000000");                            // BINFLOAT 1.5, big-endian
  x.Raw("N").Byte(0x88).Byte(0x89);
  x.Str("a", 0).Byte(0x85);                         // TUPLE1
  x.Raw(")");                                       // EMPTY_TUPLE
  x.Raw("(").Get(0).Get(0).Get(0).Get(0).Raw("t");  // MARK ... TUPLE
  x.Appends().Raw(".");
  EXPECT_BYTES(PickleDocument(doc), x.str());
}

TEST(WriteDumpJsonTest, GoldenText) {
  DumpSpec spec = SmallSpec("2.10");
  spec.entries[0].duration_ms = 1.5;
  EXPECT_EQ(WriteDumpJson(spec),
            R"({"comm_lib_version":"2.21.5","entries":[{"collective_seq_id":1,"duration_ms":1.5,)"
            R"("input_dtypes":["Float"],"input_sizes":[[4]],"is_p2p":false,"op_id":1,)"
            R"("output_dtypes":["Float"],"output_sizes":[[4]],"p2p_seq_id":0,"pg_id":0,)"
            R"("process_group":["0","default_pg"],"profiling_name":"nccl:all_reduce",)"
            R"("record_id":0,"retired":false,"state":"scheduled","thread_id":"140000000000000",)"
            R"("thread_name":"pt_main_thread","time_created_ns":1700000000000000000,)"
            R"("time_discovered_completed_ns":0,"time_discovered_started_ns":0,)"
            R"("timeout_ms":600000}],"nccl_comm_state":{},)"
            R"("pg_config":{"0":{"desc":"default_pg","name":"0","ranks":"[0, 1]"}},)"
            R"("pg_status":{"0":{"last_completed_collective":"2","last_enqueued_collective":"3",)"
            R"("last_started_collective":"3"}},"version":"2.10"})");
}

TEST(WriteDumpJsonTest, EmptyEntriesAreOmitted) {
  DumpSpec spec = SmallSpec("2.10");
  spec.entries.clear();
  EXPECT_THAT(WriteDumpJson(spec), ::testing::Not(HasSubstr("entries")));
  EXPECT_THAT(WriteDumpPickle(spec), HasSubstr("entries"));
}

TEST(FloatFormatTest, PythonReprAndNlohmann) {
  EXPECT_EQ(FormatPythonFloat(0.1), "0.1");
  EXPECT_EQ(FormatPythonFloat(1e300), "1e+300");
  EXPECT_EQ(FormatPythonFloat(5e-324), "5e-324");
  EXPECT_EQ(FormatPythonFloat(-0.0), "-0.0");
  EXPECT_EQ(FormatPythonFloat(1.0), "1.0");
  EXPECT_EQ(FormatPythonFloat(1e16), "1e+16");
  EXPECT_EQ(FormatPythonFloat(1e15), "1000000000000000.0");
  EXPECT_EQ(FormatPythonFloat(1e-5), "1e-05");
  EXPECT_EQ(FormatPythonFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatNlohmannFloat(1e15), "1e+15");
  EXPECT_EQ(FormatNlohmannFloat(1e14), "100000000000000.0");
  EXPECT_EQ(FormatNlohmannFloat(std::nan("")), "null");
}

// ---- Differential tests against Debian's CPython -------------------------------------------

constexpr char kPython[] = "/usr/bin/python3";

std::string TempPath(std::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return fmt::format("{}/fr_writer_{}_{}", dir ? dir : "/tmp", getpid(), name);
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs `script` with the pickle file as argv[1]; returns stdout.
std::string RunPython(std::string_view script, std::string_view pickle) {
  std::string script_path = TempPath("script.py");
  std::string data_path = TempPath("data.pkl");
  WriteFile(script_path, script);
  WriteFile(data_path, pickle);
  std::string command = fmt::format("{} {} {}", kPython, script_path, data_path);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "<popen failed>";
  std::string out;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  int status = pclose(pipe);
  std::remove(script_path.c_str());
  std::remove(data_path.c_str());
  if (status != 0) return fmt::format("<python exited with {}>{}", status, out);
  return out;
}

constexpr char kDumpsScript[] = R"(
import json, pickle, sys
with open(sys.argv[1], 'rb') as f:
    obj = pickle.load(f)
sys.stdout.buffer.write(json.dumps(obj, ensure_ascii=False).encode('utf-8', 'surrogatepass'))
)";

bool HavePython() { return access(kPython, X_OK) == 0; }

DumpSpec RichSpec(std::string version) {
  DumpSpec spec = SmallSpec(std::move(version));
  spec.process_groups.push_back({"1", "DP", {0, 2, 4}, 1});
  spec.process_groups.push_back({"1", "other", {1, 3}, 7});  // same name: the first wins
  spec.pg_status[1] = {-1, -1, -1};
  spec.pg_status[10] = {5, 4, 4};
  spec.frames.push_back({"f\u00e9\u4e2d\"\\\n", "/x/\U0001F600.py", -3});
  spec.frames.push_back({"<module>", "t.py", 1 << 20});
  EntrySpec e = spec.entries[0];
  e.record_id = 1;
  e.pg_id = 1;
  e.pg_name = "1";
  e.pg_desc = "DP";
  e.profiling_name = "nccl:send 0->1";
  e.is_p2p = true;
  e.state = "completed";
  e.duration_ms = 0.1;
  e.time_discovered_started_ns = 1700000000000000100;
  e.time_discovered_completed_ns = 1700000000000000200;
  e.retired = true;
  e.input_sizes = {{}, {3, 70000}};
  e.input_dtypes = {"BFloat16", "Float"};
  e.frames = {1, 0, 2};
  spec.entries.push_back(e);
  e.record_id = 2;
  e.frames = {2, 1};
  spec.entries.push_back(e);
  spec.nccl_comm_state =
      std::map<std::string, std::map<std::string, std::string>>{{"123", {{"a", "1"}, {"b", "x"}}}};
  return spec;
}

const char* const kAllVersions[] = {"",    "1.0", "1.1", "1.4", "2.0", "2.2", "2.3",
                                    "2.5", "2.6", "2.7", "2.8", "2.9", "2.10"};

TEST(PythonDifferentialTest, PickleLoadsToTheLogicalJson) {
  if (!HavePython()) GTEST_SKIP() << kPython << " not available";
  for (const char* version : kAllVersions) {
    DumpSpec spec = RichSpec(version);
    Document doc = BuildDumpDocument(spec, DumpFlavor::kPickle);
    EXPECT_EQ(RunPython(kDumpsScript, WriteDumpPickle(spec)), WriteLogicalJson(doc))
        << "version '" << version << "'";
  }
}

TEST(PythonDifferentialTest, SharedFramesAreOneObject) {
  if (!HavePython()) GTEST_SKIP() << kPython << " not available";
  constexpr char kScript[] = R"(
import pickle, sys
d = pickle.load(open(sys.argv[1], 'rb'))
e = d['entries']
# Entry frames: [0], [1, 0, 2], [2, 1].
print(e[1]['frames'][1] is e[0]['frames'][0], e[1]['frames'][2] is e[2]['frames'][0],
      e[0]['frames'] is e[1]['frames'], e[1]['frames'][0] is e[2]['frames'][1])
)";
  EXPECT_EQ(RunPython(kScript, WriteDumpPickle(RichSpec("2.10"))), "True True False True\n");
}

TEST(PythonDifferentialTest, JsonVariantIsSortedCompactJson) {
  if (!HavePython()) GTEST_SKIP() << kPython << " not available";
  constexpr char kScript[] = R"(
import json, sys
text = open(sys.argv[1], encoding='utf-8').read()
again = json.dumps(json.loads(text), sort_keys=True, separators=(',', ':'), ensure_ascii=False)
print(again == text)
)";
  for (const char* version : {"2.3", "2.7", "2.10"}) {
    EXPECT_EQ(RunPython(kScript, WriteDumpJson(RichSpec(version))), "True\n") << version;
  }
}

TEST(PythonDifferentialTest, ScalarsUnicodeAndKeys) {
  if (!HavePython()) GTEST_SKIP() << kPython << " not available";
  Document doc = MakeDocument([](DocumentBuilder& b) {
    std::vector<ValueId> items;
    for (double f :
         {0.1, 1e300, 5e-324, -0.0, 1.0, 123456789.125, 1e16, 1e15, 1e-5, 0.0001, -2.5e-7,
          std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity()}) {
      items.push_back(b.AddFloat(f, 0));
    }
    items.push_back(b.AddInt(INT64_MIN, 0));
    items.push_back(b.AddInt(INT64_MAX, 0));
    for (const char* s : {"", "plain", "quote\" backslash\\ tab\t nl\n cr\r bs\b ff\f",
                          "\x01\x1f\x7f", "caf\u00e9 \u4e2d\u6587 \U0001F600", "</script>"}) {
      items.push_back(b.AddOwnedString(s, 0));
    }
    // {1: 'a', 'x': 'b', 2.5: 'c', None: 'd', True: 'e' (same key as 1), False: 'f', -7: 'g'}
    ValueId dict = b.AddContainer(ValueKind::kDict, 0);
    std::vector<ValueId> kv = {b.AddInt(1, 0),
                               b.AddOwnedString("a", 0),
                               b.AddOwnedString("x", 0),
                               b.AddOwnedString("b", 0),
                               b.AddFloat(2.5, 0),
                               b.AddOwnedString("c", 0),
                               b.AddNone(0),
                               b.AddOwnedString("d", 0),
                               b.AddBool(true, 0),
                               b.AddOwnedString("e", 0),
                               b.AddBool(false, 0),
                               b.AddOwnedString("f", 0),
                               b.AddInt(-7, 0),
                               b.AddOwnedString("g", 0)};
    b.Append(dict, kv);
    items.push_back(dict);
    ValueId pair[2] = {b.AddInt(1, 0), b.AddOwnedString("t", 0)};
    ValueId tuple = b.AddContainer(ValueKind::kTuple, 0);
    b.Append(tuple, pair);
    items.push_back(tuple);
    return AddList(b, items);
  });
  EXPECT_EQ(RunPython(kDumpsScript, PickleDocument(doc)), WriteLogicalJson(doc));
}

// ---- Round trips through the decoders -------------------------------------------------------

TEST(RoundTripTest, DecodePickleOfWriteEqualsDocument) {
  for (const char* version : kAllVersions) {
    DumpSpec spec = RichSpec(version);
    Document expected = BuildDumpDocument(spec, DumpFlavor::kPickle);
    absl::StatusOr<Document> decoded = DecodePickle(Buffer::FromString(WriteDumpPickle(spec)));
    ASSERT_TRUE(decoded.ok()) << version << ": " << decoded.status();
    EXPECT_EQ(DescribeDifference(*decoded, decoded->root(), expected, expected.root()), "")
        << "version '" << version << "'";
    // Order and sharing matter too: the logical JSON keeps insertion order, and re-pickling the
    // decoded DAG reproduces the frame memo hits.
    EXPECT_EQ(WriteLogicalJson(*decoded), WriteLogicalJson(expected)) << version;
  }
}

TEST(RoundTripTest, DecodeJsonOfWriteEqualsDocument) {
  for (const char* version : {"2.3", "2.6", "2.10"}) {
    DumpSpec spec = RichSpec(version);
    Document expected = BuildDumpDocument(spec, DumpFlavor::kJson);
    absl::StatusOr<Document> decoded = DecodeJson(Buffer::FromString(WriteDumpJson(spec)));
    ASSERT_TRUE(decoded.ok()) << version << ": " << decoded.status();
    EXPECT_EQ(DescribeDifference(*decoded, decoded->root(), expected, expected.root()), "")
        << version;
    EXPECT_EQ(WriteLogicalJson(*decoded), WriteLogicalJson(expected)) << version;
  }
}

// ---- DescribeDifference ---------------------------------------------------------------------

TEST(DescribeDifferenceTest, NamesThePathToTheFirstDifference) {
  DumpSpec spec = RichSpec("2.10");
  Document a = BuildDumpDocument(spec, DumpFlavor::kPickle);
  EXPECT_EQ(DescribeDifference(a, a.root(), a, a.root()), "");
  spec.entries[1].state = "scheduled";
  Document b = BuildDumpDocument(spec, DumpFlavor::kPickle);
  EXPECT_EQ(DescribeDifference(a, a.root(), b, b.root()),
            "root['entries'][1]['state']: 'completed' != 'scheduled'");
  Document json = BuildDumpDocument(RichSpec("2.10"), DumpFlavor::kJson);
  EXPECT_EQ(DescribeDifference(a, a.root(), json, json.root()),
            "root['pg_status']['0']['last_enqueued_collective']: int 3 != str '3'");
}

TEST(DescribeDifferenceTest, PythonEqualitySemantics) {
  Document a = MakeDocument([](DocumentBuilder& b) {
    ValueId d = b.AddContainer(ValueKind::kDict, 0);
    ValueId kv[] = {b.AddOwnedString("k", 0), b.AddInt(1, 0), b.AddOwnedString("j", 0),
                    b.AddOwnedString("v", 0)};
    b.Append(d, kv);
    return AddList(b, {d, b.AddBool(true, 0), b.AddFloat(2.0, 0)});
  });
  Document b = MakeDocument([](DocumentBuilder& b) {
    ValueId d = b.AddContainer(ValueKind::kDict, 0);
    ValueId kv[] = {b.AddOwnedString("j", 0), b.AddOwnedString("v", 0), b.AddOwnedString("k", 0),
                    b.AddFloat(1.0, 0)};
    b.Append(d, kv);
    return AddList(b, {d, b.AddInt(1, 0), b.AddInt(2, 0)});
  });
  // Dicts compare regardless of order, numbers across int/float/bool, like Python's ==.
  EXPECT_EQ(DescribeDifference(a, a.root(), b, b.root()), "");
  Document t = MakeDocument([](DocumentBuilder& b) {
    ValueId d = b.AddContainer(ValueKind::kDict, 0);
    return AddList(b, {d, b.AddInt(1, 0), b.AddInt(2, 0)}, ValueKind::kTuple);
  });
  EXPECT_EQ(DescribeDifference(a, a.root(), t, t.root()),
            "root: list list of 3 != tuple tuple of 3");
}

TEST(WriteLogicalJsonTest, CyclesAndDuplicateKeys) {
  // A list that contains itself (possible in a pickle via its memo) must not hang the printer.
  Document doc = MakeDocument([](DocumentBuilder& b) {
    ValueId list = b.AddContainer(ValueKind::kList, 0);
    ValueId d = b.AddContainer(ValueKind::kDict, 0);
    ValueId kv[] = {b.AddOwnedString("a", 0), b.AddInt(1, 0),           b.AddOwnedString("b", 0),
                    b.AddInt(2, 0),           b.AddOwnedString("a", 0), b.AddInt(3, 0)};
    b.Append(d, kv);
    ValueId items[] = {d, list};
    b.Append(list, items);
    return list;
  });
  EXPECT_EQ(WriteLogicalJson(doc), R"([{"a": 3, "b": 2}, null])");
}

}  // namespace
}  // namespace fr
