#include "fr/decode/pickle_decoder.h"

#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Writes pickle bytes the way torch::jit::Pickler does (protocol 2): every string memoized by
// value and fetched with BINGET afterwards, ints in the narrowest of BININT1/BININT2/BININT or an
// 8-byte LONG1, containers as EMPTY_x MARK ... SETITEMS/APPENDS, memoized only when asked (after
// their content).
class TorchPickleWriter {
 public:
  TorchPickleWriter() { Byte(0x80).Byte(0x02); }

  TorchPickleWriter& Byte(uint8_t b) {
    bytes_.push_back(static_cast<char>(b));
    return *this;
  }
  TorchPickleWriter& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) Byte(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  TorchPickleWriter& Put(uint32_t id) {
    return id < 256 ? Byte(0x71).Byte(static_cast<uint8_t>(id)) : Byte(0x72).Le(id, 4);
  }
  TorchPickleWriter& Get(uint32_t id) {
    return id < 256 ? Byte(0x68).Byte(static_cast<uint8_t>(id)) : Byte(0x6a).Le(id, 4);
  }
  // Memoizes the value on top of the stack; returns its memo id.
  uint32_t Memoize() {
    Put(next_id_);
    return next_id_++;
  }
  TorchPickleWriter& Str(std::string_view s) {
    auto it = strings_.find(std::string(s));
    if (it != strings_.end()) return Get(it->second);
    Byte(0x58).Le(s.size(), 4);
    bytes_.append(s);
    strings_[std::string(s)] = Memoize();
    return *this;
  }
  TorchPickleWriter& Int(int64_t v) {
    if (v >= 0 && v <= 0xff) return Byte(0x4b).Le(v, 1);
    if (v >= 0 && v <= 0xffff) return Byte(0x4d).Le(v, 2);
    if (v >= INT32_MIN && v <= INT32_MAX) return Byte(0x4a).Le(static_cast<uint32_t>(v), 4);
    return Byte(0x8a).Byte(8).Le(static_cast<uint64_t>(v), 8);
  }
  TorchPickleWriter& Float(double v) {
    uint64_t bits = std::bit_cast<uint64_t>(v);
    Byte(0x47);  // BINFLOAT, big-endian
    for (int i = 7; i >= 0; --i) Byte(static_cast<uint8_t>(bits >> (8 * i)));
    return *this;
  }
  TorchPickleWriter& Bool(bool v) { return Byte(v ? 0x88 : 0x89); }
  TorchPickleWriter& None() { return Byte(0x4e); }
  TorchPickleWriter& BeginDict() { return Byte(0x7d).Byte(0x28); }
  TorchPickleWriter& EndDict() { return Byte(0x75); }
  TorchPickleWriter& BeginList() { return Byte(0x5d).Byte(0x28); }
  TorchPickleWriter& EndList() { return Byte(0x65); }
  TorchPickleWriter& Stop() { return Byte(0x2e); }

  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  std::map<std::string, uint32_t> strings_;
  uint32_t next_id_ = 0;
};

absl::StatusOr<Document> Decode(std::string bytes, const PickleLimits& limits = {}) {
  return DecodePickle(Buffer::FromString(std::move(bytes)), limits);
}

std::string Hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// Debian's absl::Status::message() is an absl::string_view, which gmock's string matchers refuse.
std::string Message(const absl::Status& status) { return std::string(status.message()); }

std::string HexOf(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out += fmt::format("{:02x}", static_cast<uint8_t>(c));
  return out;
}

// A text file that is no pickle, of exactly `size` bytes.
std::string LogLine(size_t size) {
  std::string line =
      "[rank3]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout!";
  line.resize(size, '.');
  return line;
}

// A canonical rendering, also produced by the Python script below: N T F i<int> f<hex bits>
// s<len>:<utf-8 bytes> (...) [...] {k:v,...}. Exact for every bit of every value.
std::string Render(const Document& doc, ValueId id) {
  switch (doc.kind(id)) {
    case ValueKind::kNone:
      return "N";
    case ValueKind::kBool:
      return doc.bool_value(id) ? "T" : "F";
    case ValueKind::kInt:
      return fmt::format("i{}", doc.int_value(id));
    case ValueKind::kFloat:
      return fmt::format("f{:016x}", std::bit_cast<uint64_t>(doc.float_value(id)));
    case ValueKind::kString:
      return fmt::format("s{}:{}", doc.string_value(id).size(), doc.string_value(id));
    case ValueKind::kList:
    case ValueKind::kTuple:
    case ValueKind::kDict: {
      ValueKind kind = doc.kind(id);
      std::string out(1, kind == ValueKind::kList ? '[' : kind == ValueKind::kTuple ? '(' : '{');
      auto items = doc.items(id);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += (kind == ValueKind::kDict && i % 2 == 1) ? ":" : ",";
        out += Render(doc, items[i]);
      }
      out += kind == ValueKind::kList ? ']' : kind == ValueKind::kTuple ? ')' : '}';
      return out;
    }
  }
  return "?";
}

// --- Hand-assembled torch::jit::Pickler streams ---

// A small dump as PyTorch 2.10 writes it: two entries sharing a frame dict.
std::string TorchStyleDump(bool memoize_top_level) {
  TorchPickleWriter w;
  w.BeginDict();
  w.Str("version").Str("2.10");
  w.Str("pg_config").BeginDict();
  w.Str("0").BeginDict();
  w.Str("name").Str("0").Str("desc").Str("default_pg").Str("ranks").Str("[0, 1]");
  w.EndDict().EndDict();
  w.Str("entries").BeginList();
  uint32_t frame_id = 0;
  for (int i = 0; i < 2; ++i) {
    w.BeginDict();
    w.Str("frames").BeginList();
    if (i == 0) {
      w.BeginDict();
      w.Str("name").Str("all_reduce").Str("filename").Str("/torch/distributed/c10d.py");
      w.Str("line").Int(2501);
      w.EndDict();
      frame_id = w.Memoize();  // shared: memoized after its content
    } else {
      w.Get(frame_id);
    }
    w.EndList();
    w.Str("record_id").Int(i);
    w.Str("process_group").Str("0").Str("default_pg").Byte(0x86);  // TUPLE2
    w.Str("time_created_ns").Int(int64_t{1718000000123456789} + i);
    w.Str("duration_ms").Float(1.25);
    w.Str("state").Str("completed");
    w.Str("time_discovered_started_ns").None();
    w.Str("retired").Bool(i == 0);
    w.Str("is_p2p").Bool(false);
    w.EndDict();
  }
  w.EndList();
  w.EndDict();
  if (memoize_top_level) w.Memoize();
  w.Stop();
  return w.bytes();
}

TEST(PickleDecoderTest, DecodesATorchStyleDump) {
  for (bool memoized : {false, true}) {
    SCOPED_TRACE(memoized ? "top-level dict memoized" : "top-level dict not memoized");
    std::string bytes = TorchStyleDump(memoized);
    if (memoized) {
      ASSERT_EQ(bytes.substr(bytes.size() - 4, 2), "\x75\x71");  // ... SETITEMS BINPUT nn STOP
    }
    absl::StatusOr<Document> doc = Decode(bytes);
    ASSERT_TRUE(doc.ok()) << doc.status();
    ValueId root = doc->root();
    ASSERT_EQ(doc->kind(root), ValueKind::kDict);
    EXPECT_EQ(doc->size(root), 3u);  // version, pg_config, entries
    EXPECT_EQ(doc->string_value(doc->Find(root, "version")), "2.10");
    ValueId pg0 = doc->Find(doc->Find(root, "pg_config"), "0");
    EXPECT_EQ(doc->string_value(doc->Find(pg0, "ranks")), "[0, 1]");
    ValueId entries = doc->Find(root, "entries");
    ASSERT_EQ(doc->kind(entries), ValueKind::kList);
    ASSERT_EQ(doc->size(entries), 2u);
    ValueId e0 = doc->items(entries)[0];
    ValueId e1 = doc->items(entries)[1];

    // The frame dict is stored once and referenced by both entries.
    ValueId f0 = doc->items(doc->Find(e0, "frames"))[0];
    ValueId f1 = doc->items(doc->Find(e1, "frames"))[0];
    EXPECT_EQ(f0, f1);
    EXPECT_EQ(doc->int_value(doc->Find(f0, "line")), 2501);
    EXPECT_EQ(doc->string_value(doc->Find(f0, "filename")), "/torch/distributed/c10d.py");

    ValueId pg = doc->Find(e1, "process_group");
    ASSERT_EQ(doc->kind(pg), ValueKind::kTuple);
    ASSERT_EQ(doc->size(pg), 2u);
    EXPECT_EQ(doc->string_value(doc->items(pg)[0]), "0");
    EXPECT_EQ(doc->string_value(doc->items(pg)[1]), "default_pg");
    EXPECT_EQ(doc->int_value(doc->Find(e1, "time_created_ns")), 1718000000123456790);
    EXPECT_EQ(doc->float_value(doc->Find(e1, "duration_ms")), 1.25);
    EXPECT_EQ(doc->kind(doc->Find(e1, "time_discovered_started_ns")), ValueKind::kNone);
    EXPECT_TRUE(doc->bool_value(doc->Find(e0, "retired")));
    EXPECT_FALSE(doc->bool_value(doc->Find(e1, "retired")));
    // Strings memoized by value are one shared node too.
    EXPECT_EQ(doc->Find(e0, "state"), doc->Find(e1, "state"));
    // Strings point into the input: zero copy.
    std::string_view state = doc->string_value(doc->Find(e0, "state"));
    EXPECT_GE(state.data(), doc->input().data());
    EXPECT_LT(state.data(), doc->input().data() + doc->input().size());
    // A value remembers where its opcode is.
    EXPECT_EQ(doc->source_offset(root), 2u);
    EXPECT_EQ(static_cast<uint8_t>(doc->input()[doc->source_offset(pg)]), 0x86);
  }
}

TEST(PickleDecoderTest, LongMemoIdsBeyond255) {
  TorchPickleWriter w;
  w.BeginList();
  for (int i = 0; i < 300; ++i) w.Str(fmt::format("s{}", i));   // BINPUT 0..255, then LONG_BINPUT
  for (int i = 299; i >= 0; --i) w.Str(fmt::format("s{}", i));  // BINGET / LONG_BINGET
  w.EndList().Stop();
  ASSERT_NE(w.bytes().find("\x72\x2b\x01\x00\x00"), std::string::npos);  // LONG_BINPUT 299
  ASSERT_NE(w.bytes().find("\x6a\x2b\x01\x00\x00"), std::string::npos);  // LONG_BINGET 299
  absl::StatusOr<Document> doc = Decode(w.bytes());
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto items = doc->items(doc->root());
  ASSERT_EQ(items.size(), 600u);
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(doc->string_value(items[i]), fmt::format("s{}", i));
    EXPECT_EQ(items[599 - i], items[i]) << i;
  }
}

TEST(PickleDecoderTest, BareListAtTopLevel) {
  TorchPickleWriter w;
  w.BeginList().BeginDict().Str("state").Str("scheduled").EndDict().EndList().Stop();
  absl::StatusOr<Document> doc = Decode(w.bytes());
  ASSERT_TRUE(doc.ok()) << doc.status();
  ASSERT_EQ(doc->kind(doc->root()), ValueKind::kList);
  EXPECT_EQ(Render(*doc, doc->root()), "[{s5:state:s9:scheduled}]");
}

TEST(PickleDecoderTest, ExactIntegers) {
  struct Case {
    std::string bytes;  // the int opcode and its argument
    int64_t expected;
  };
  std::vector<Case> cases = {
      {Hex("4b00"), 0},
      {Hex("4bff"), 255},
      {Hex("4d0001"), 256},
      {Hex("4dffff"), 65535},
      {Hex("4affffffff"), -1},
      {Hex("4a00000080"), INT32_MIN},
      {Hex("4affffff7f"), INT32_MAX},
      {Hex("8a08ffffffffffffff7f"), INT64_MAX},
      {Hex("8a080000000000000080"), INT64_MIN},
      {Hex("8a08ffffff7fffffffff"), -int64_t{2147483649}},
      {Hex("8a00"), 0},  // CPython writes 0 as an empty LONG1 (not for protocol 2 ints)
      {Hex("8a01ff"), -1},
      {Hex("8a0180"), -128},
      {Hex("8a02ff00"), 255},
      {Hex("8a020080"), -32768},
      {Hex("8a05ffffff7fff"), -int64_t{2147483649}},  // CPython's minimal form
      {Hex("8a0500000080ff"), INT32_MIN},
      {Hex("8a09ffffffffffffff7f00"), INT64_MAX},  // longer than needed, still in range
      {Hex("8a090000000000000080ff"), INT64_MIN},
      {Hex("8b0100000005"), 5},  // LONG4
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(HexOf(c.bytes));
    absl::StatusOr<Document> doc = Decode("\x80\x02" + c.bytes + ".");
    ASSERT_TRUE(doc.ok()) << doc.status();
    ASSERT_EQ(doc->kind(doc->root()), ValueKind::kInt);
    EXPECT_EQ(doc->int_value(doc->root()), c.expected);
  }
}

TEST(PickleDecoderTest, IntegersBeyond64BitsAreRefused) {
  for (std::string arg : {Hex("8a090000000000000080"
                              "00"),
                          Hex("8a09ffffffffffffff7fff"), Hex("8a09000000000000000001")}) {
    absl::StatusOr<Document> doc = Decode("\x80\x02" + arg + ".");
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(doc.status()), "byte 2: integer does not fit in 64 bits");
  }
}

TEST(PickleDecoderTest, FloatsKeepEveryBit) {
  for (uint64_t bits :
       {uint64_t{0x3ff4000000000000}, uint64_t{0x8000000000000000}, uint64_t{0x7ff8000000000123},
        uint64_t{0xfff0000000000000}, uint64_t{0x0000000000000001}, uint64_t{0x3fb999999999999a}}) {
    TorchPickleWriter w;
    w.Float(std::bit_cast<double>(bits)).Stop();
    absl::StatusOr<Document> doc = Decode(w.bytes());
    ASSERT_TRUE(doc.ok()) << doc.status();
    ASSERT_EQ(doc->kind(doc->root()), ValueKind::kFloat);
    EXPECT_EQ(std::bit_cast<uint64_t>(doc->float_value(doc->root())), bits);
  }
}

TEST(PickleDecoderTest, TupleForms) {
  // EMPTY_TUPLE, TUPLE1, TUPLE3 and MARK ... TUPLE, inside a list.
  absl::StatusOr<Document> doc =
      Decode(Hex("80025d28294b01854b014b024b0387284b014b024b034b047465") + ".");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(Render(*doc, doc->root()), "[(),(i1),(i1,i2,i3),(i1,i2,i3,i4)]");
}

TEST(PickleDecoderTest, SparseAndTextMemoIds) {
  // LONG_BINPUT 0xfffffff0, LONG_BINGET it back; PUT/GET text forms; MEMOIZE numbering after them.
  absl::StatusOr<Document> doc =
      Decode(Hex("80045d28") + "\x8c\x01" + "a" + Hex("72f0ffffff6af0ffffff") + "\x8c\x01" + "b" +
             "p7\ng7\n" + "\x8c\x01" + "c" + Hex("946802") + "e.");
  ASSERT_TRUE(doc.ok()) << doc.status();
  // Memo ids 0xfffffff0 and 7 are taken, so MEMOIZE uses id 2, fetched by BINGET 2.
  EXPECT_EQ(Render(*doc, doc->root()), "[s1:a,s1:a,s1:b,s1:b,s1:c,s1:c]");
  auto items = doc->items(doc->root());
  EXPECT_EQ(items[0], items[1]);
  EXPECT_EQ(items[2], items[3]);
}

TEST(PickleDecoderTest, MaxDepthIsHonouredExactly) {
  // Five levels, as real dumps have: dict > list > dict > list > dict.
  TorchPickleWriter w;
  w.BeginDict().Str("entries").BeginList().BeginDict().Str("frames").BeginList().BeginDict();
  w.Str("line").Int(1).EndDict().EndList().EndDict().EndList().EndDict().Stop();
  PickleLimits five;
  five.max_depth = 5;
  EXPECT_TRUE(Decode(w.bytes(), five).ok());
  PickleLimits four;
  four.max_depth = 4;
  absl::StatusOr<Document> doc = Decode(w.bytes(), four);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(doc.status()), HasSubstr("nesting deeper than 4 levels"));
}

TEST(PickleDecoderTest, BuilderScratchIsReusedSafely) {
  absl::StatusOr<Document> first = Decode(TorchStyleDump(false));
  ASSERT_TRUE(first.ok());
  std::string before = Render(*first, first->root());
  EXPECT_FALSE(Decode("\x80\x02\x63").ok());  // a failure in between
  absl::StatusOr<Document> second = Decode(TorchStyleDump(true));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Render(*first, first->root()), before);
  EXPECT_EQ(Render(*second, second->root()), before);
}

// --- Errors ---

struct ErrorCase {
  std::string name;
  std::string bytes;
  absl::StatusCode code;
  std::string message;  // a prefix of the expected message
};

class PickleErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(PickleErrorTest, IsRefusedWithOffsetAndReason) {
  const ErrorCase& c = GetParam();
  absl::StatusOr<Document> doc = Decode(c.bytes);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), c.code) << doc.status();
  EXPECT_THAT(Message(doc.status()), StartsWith(c.message));
}

const absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
const absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;

INSTANTIATE_TEST_SUITE_P(
    Errors, PickleErrorTest,
    ::testing::Values(
        ErrorCase{"Global", "cos\nsystem\n(S'echo hi'\ntR.", kInvalid,
                  "byte 0: opcode GLOBAL (0x63) is not allowed: it imports or calls Python code"},
        ErrorCase{"GlobalAfterProto",
                  "\x80\x02\x63"
                  "builtins\neval\n",
                  kInvalid, "byte 2: opcode GLOBAL (0x63) is not allowed"},
        ErrorCase{"StackGlobal", Hex("80048c026f73948c0673797374656d9493"), kInvalid,
                  "byte 16: opcode STACK_GLOBAL (0x93) is not allowed"},
        ErrorCase{"Reduce", Hex("80025d2952"), kInvalid,
                  "byte 4: opcode REDUCE (0x52) is not allowed"},
        ErrorCase{"Build", Hex("80027d7d62"), kInvalid,
                  "byte 4: opcode BUILD (0x62) is not allowed"},
        ErrorCase{"NewObj", Hex("80024e2981"), kInvalid,
                  "byte 4: opcode NEWOBJ (0x81) is not allowed"},
        ErrorCase{"BinPersId", Hex("80024b0151"), kInvalid,
                  "byte 4: opcode BINPERSID (0x51) is not allowed"},
        ErrorCase{"Ext1", Hex("80028201"), kInvalid, "byte 2: opcode EXT1 (0x82) is not allowed"},
        ErrorCase{"Bytes", Hex("8003430161"), kInvalid,
                  "byte 2: opcode SHORT_BINBYTES (0x43) is not allowed: flight-recorder dumps "
                  "hold no bytes"},
        ErrorCase{"TextInt", "I42\n.", kInvalid, "byte 0: opcode INT (0x49) is not allowed"},
        ErrorCase{"Unknown", Hex("8002ff"), kInvalid, "byte 2: unknown opcode 0xff"},
        ErrorCase{"Empty", "", kDataLoss, "byte 0: truncated"},
        ErrorCase{"NoStop", Hex("80025d"), kDataLoss,
                  "byte 3: truncated: the stream ends without STOP"},
        ErrorCase{"ShortString", Hex("800258d20400006162636465666768696a"), kDataLoss,
                  "byte 2: truncated: BINUNICODE needs 1234 bytes, 10 left"},
        ErrorCase{"ShortLength", Hex("8002580100"), kDataLoss,
                  "byte 2: truncated: BINUNICODE needs 4 bytes, 2 left"},
        ErrorCase{"AbsurdBinUnicode8", Hex("80048dffffffffffffff7f61"), kInvalid,
                  "byte 2: BINUNICODE8 length 9223372036854775807 is absurd"},
        ErrorCase{"ShortLong1", Hex("80028a0801"), kDataLoss,
                  "byte 2: truncated: LONG1 needs 8 bytes, 1 left"},
        ErrorCase{"FrameTooLong", Hex("80049510000000000000004e2e"), kDataLoss,
                  "byte 2: truncated: FRAME needs 16 bytes, 2 left"},
        ErrorCase{"MemoNeverPut", Hex("80025d28680765"), kInvalid,
                  "byte 4: BINGET of memo id 7, which was never put"},
        ErrorCase{"LongMemoNeverPut", Hex("80026a000100002e"), kInvalid,
                  "byte 2: LONG_BINGET of memo id 256, which was never put"},
        ErrorCase{"PutOnEmptyStack", Hex("800271002e"), kInvalid,
                  "byte 2: stack underflow: BINPUT needs 1 value above the last MARK, 0 there"},
        ErrorCase{"PutAcrossMark", Hex("80025d2871002e"), kInvalid,
                  "byte 4: stack underflow: BINPUT needs 1 value"},
        ErrorCase{"Tuple2Underflow", Hex("80024e862e"), kInvalid,
                  "byte 3: stack underflow: TUPLE2 needs 2 values above the last MARK, 1 there"},
        ErrorCase{"AppendUnderflow", Hex("80025d612e"), kInvalid,
                  "byte 3: stack underflow: APPEND needs 2 values"},
        ErrorCase{"SetItemsWithoutMark", Hex("80027d75"), kInvalid,
                  "byte 3: SETITEMS without a MARK"},
        ErrorCase{"SetItemsWithoutDict", Hex("8002284b014b0275"), kInvalid,
                  "byte 7: stack underflow: SETITEMS has no dict below its MARK"},
        ErrorCase{"SetItemsOnList", Hex("80025d284b014b02752e"), kInvalid,
                  "byte 8: SETITEMS on a list, not a dict"},
        ErrorCase{"AppendsOnDict", Hex("80027d284b0165"), kInvalid,
                  "byte 6: APPENDS on a dict, not a list"},
        ErrorCase{"SetItemOnTuple", Hex("8002294b014b02732e"), kInvalid,
                  "byte 7: SETITEM on a tuple, not a dict"},
        ErrorCase{"OddSetItems", Hex("80027d284b014b024b03752e"), kInvalid,
                  "byte 10: SETITEMS with an odd number of items (3)"},
        ErrorCase{"ListKey", Hex("80027d285d4b0175"), kInvalid,
                  "byte 7: unhashable dict key of type list"},
        ErrorCase{"DictKey", Hex("80027d7d4b0173"), kInvalid,
                  "byte 6: unhashable dict key of type dict"},
        ErrorCase{"TupleWithListKey", Hex("80027d5d854b01732e"), kInvalid,
                  "byte 7: unhashable dict key of type tuple"},
        ErrorCase{"ListInsideItself", Hex("80025d710068006128"), kInvalid,
                  "byte 7: APPEND would put a list inside itself"},
        ErrorCase{"FillAfterUse", Hex("80025d5d7100616800284b01652e"), kInvalid,
                  "byte 12: APPENDS on a list that is already inside another container"},
        ErrorCase{"InvalidUtf8", Hex("8002580200000061ff2e"), kInvalid,
                  "byte 2: BINUNICODE string at byte 7 is not valid UTF-8"},
        ErrorCase{"Surrogate", Hex("80048c03eda0802e"), kInvalid,
                  "byte 2: SHORT_BINUNICODE string at byte 4 is not valid UTF-8"},
        ErrorCase{"Protocol6", Hex("80064e2e"), kInvalid, "byte 0: unsupported pickle protocol 6"},
        ErrorCase{"Trailing", Hex("80024e2e00"), kInvalid, "byte 4: 1 trailing byte after STOP"},
        ErrorCase{"TwoPickles", Hex("80024e2e80024e2e"), kInvalid,
                  "byte 4: 4 trailing bytes after STOP"},
        ErrorCase{"StopWithMark", Hex("80025d282e"), kInvalid, "byte 4: STOP with 1 MARK"},
        ErrorCase{"StopWithTwoValues", Hex("80024e4e2e"), kInvalid,
                  "byte 4: STOP leaves 2 values on the stack"},
        ErrorCase{"StopOnEmptyStack", Hex("80022e"), kInvalid, "byte 2: stack underflow: STOP"},
        ErrorCase{"NegativeLong4", Hex("80028bffffffff2e"), kInvalid,
                  "byte 2: LONG4 with negative length -1"},
        ErrorCase{"BadTextPut", "\x80\x02Np-1\n.", kInvalid,
                  "byte 3: PUT needs a memo id from 0 to 4294967295"},
        ErrorCase{"TextGetWithoutNewline", "\x80\x02g12", kDataLoss,
                  "byte 2: truncated: GET has no newline"},
        ErrorCase{"Log87Bytes", LogLine(87), kInvalid, "byte 0: unknown opcode 0x5b"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(PickleDecoderTest, ClassicExploitRunsNothing) {
  std::filesystem::path marker =
      std::filesystem::temp_directory_path() / fmt::format("fr_pickle_pwned_{}", getpid());
  std::filesystem::remove(marker);
  std::string payload = fmt::format("cos\nsystem\n(S'touch {}'\ntR.", marker.string());
  absl::StatusOr<Document> doc = Decode(payload);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(doc.status()), StartsWith("byte 0: opcode GLOBAL (0x63) is not allowed"));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(PickleDecoderTest, EveryTruncationIsDataLoss) {
  std::string bytes = TorchStyleDump(true);
  for (size_t length = 0; length < bytes.size(); ++length) {
    absl::StatusOr<Document> doc = Decode(bytes.substr(0, length));
    ASSERT_FALSE(doc.ok()) << length;
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kDataLoss) << length << ": " << doc.status();
    EXPECT_THAT(Message(doc.status()), StartsWith("byte ")) << length;
  }
}

TEST(PickleDecoderTest, DeepNestingIsRefused) {
  std::string marks = "\x80\x02";
  for (int i = 0; i < 100000; ++i) marks += "\x5d\x28";  // EMPTY_LIST MARK
  absl::StatusOr<Document> doc = Decode(marks);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(doc.status()), "byte 515: nesting deeper than 256 levels");

  // Nesting without MARKs: lists piled on the stack, then appended into each other.
  std::string piled = "\x80\x02" + std::string(100000, '\x5d') + std::string(99999, 'a') + ".";
  doc = Decode(piled);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(doc.status()), HasSubstr("nesting deeper than 256 levels"));

  // Nesting with a constant stack: ((((...),),),).
  std::string tuples = "\x80\x02\x29" + std::string(100000, '\x85') + ".";
  doc = Decode(tuples);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(doc.status()), "byte 258: nesting deeper than 256 levels");
}

TEST(PickleDecoderTest, HugeMemoIdsDoNotAllocate) {
  // A few puts with ids spread over the 32-bit range: the memo must not grow to match them.
  std::string bytes = "\x80\x02\x4e";
  for (uint32_t id : {0xffffffffu, 0x80000000u, 0x10000000u, 12345678u}) {
    bytes += '\x72';
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>(id >> (8 * i));
  }
  bytes += std::string("\x6a\x4e\x61\xbc\x00\x86.", 7);  // LONG_BINGET 12345678, TUPLE2
  absl::StatusOr<Document> doc = Decode(bytes);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(Render(*doc, doc->root()), "(N,N)");
}

TEST(PickleDecoderTest, RefusesInputsLargerThanTheDecoderAllows) {
  // A sparse file: mapping it costs nothing, and the size check comes before any byte is read.
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / fmt::format("fr_pickle_huge_{}", getpid());
  { std::ofstream(path.string()).put('\x80'); }
  std::error_code error;
  std::filesystem::resize_file(path, kMaxPickleInputSize + 1, error);
  if (error) GTEST_SKIP() << "cannot make a sparse file: " << error.message();
  absl::StatusOr<std::shared_ptr<const Buffer>> buffer = Buffer::MapFile(path.string());
  std::filesystem::remove(path);
  if (!buffer.ok()) GTEST_SKIP() << buffer.status();
  absl::StatusOr<Document> doc = DecodePickle(*buffer);
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(doc.status()), StartsWith("byte 0: input of 2147483648 bytes is larger"));
}

// --- Differential tests against CPython's own pickler ---

// Builds an FR-like object with every kind of value and edge case, pickles it with protocols 2-5
// and writes the canonical rendering of the object (see Render).
constexpr std::string_view kPythonScript = R"py(
import pickle, struct, sys
out = sys.argv[1]

def render(o):
    if o is None: return b"N"
    if o is True: return b"T"
    if o is False: return b"F"
    if isinstance(o, int): return b"i%d" % o
    if isinstance(o, float): return b"f" + struct.pack(">d", o).hex().encode()
    if isinstance(o, str):
        b = o.encode("utf-8")
        return b"s%d:" % len(b) + b
    if isinstance(o, tuple): return b"(" + b",".join(render(x) for x in o) + b")"
    if isinstance(o, list): return b"[" + b",".join(render(x) for x in o) + b"]"
    if isinstance(o, dict):
        return b"{" + b",".join(render(k) + b":" + render(v) for k, v in o.items()) + b"}"
    raise TypeError(type(o))

frames = [{"name": "fn_%d" % i, "filename": "/src/pkg/mod_%d.py" % (i % 3), "line": 10 * i}
          for i in range(6)]
entries = []
for i in range(60):
    entries.append({
        "frames": [frames[i % 6], frames[(i + 1) % 6]] if i % 5 else [],
        "record_id": i, "pg_id": i % 3,
        "process_group": (str(i % 3), "default_pg" if i % 3 == 0 else "DP"),
        "thread_name": "pt_nccl_watchdg", "thread_id": "140123456789",
        "collective_seq_id": i, "p2p_seq_id": 0, "op_id": i,
        "profiling_name": "nccl:all_reduce", "time_created_ns": 1718000000000000000 + i * 1234567,
        "duration_ms": 1.25 * i if i % 2 else None,
        "input_sizes": [[3, 4], []], "input_dtypes": ["Float"],
        "output_sizes": [[3, 4]], "output_dtypes": ["BFloat16"],
        "state": "completed" if i < 50 else "scheduled",
        "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
        "retired": i < 40, "timeout_ms": 600000, "is_p2p": False})
shared = [1, "two", 3.0]
dump = {
    "version": "2.10",
    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}},
    "comm_lib_version": "2.21.5",
    "pg_status": {"0": {"last_enqueued_collective": 59, "last_started_collective": -1,
                        "last_completed_collective": 49}},
    "entries": entries,
    "extras": {
        "ints": [0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 2**31 - 1, 2**31,
                 2**32, 2**40, -2**40, 2**63 - 1, -2**63, -1, -128, -129, -2**31, -2**31 - 1],
        "floats": [0.0, -0.0, 1.5, 0.1, 1e300, -1e-300, 5e-324, float("inf"), float("-inf"),
                   float("nan")],
        "strings": ["", "a", "x" * 255, "y" * 256, "\u00fcn\u00efc\u00f8d\u00e9 \u2713 \U0001f680",
                    "line\nbreak\t\"quote\" \\ \x00"],
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), ((1, 2), ("a",))],
        "big_list": list(range(2500)),
        "big_dict": {"k%d" % i: i for i in range(1500)},
        "int_keys": {0: [0, 1, 2], 1: [0, 1], -5: []},
        "tuple_key": {(1, "a"): True, 2.5: False, None: None},
        "nested": [[[[]]]], "bools": [True, False, None],
        "shared_list": shared, "shared_again": shared,
    },
}
with open(out + "/expected.txt", "wb") as f:
    f.write(render(dump))
for protocol in (2, 3, 4, 5):
    with open(out + "/p%d.pkl" % protocol, "wb") as f:
        pickle.dump(dump, f, protocol=protocol)
with open(out + "/huge_int.pkl", "wb") as f:
    pickle.dump({"x": [2**64]}, f, protocol=2)
)py";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class CPythonDifferentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/python3"));
    char dir_template[] = "/tmp/fr_pickle_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    std::ofstream(dir_ / "make.py") << kPythonScript;
    std::string command =
        fmt::format("/usr/bin/python3 {} {} 2>&1", (dir_ / "make.py").string(), dir_.string());
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char chunk[256];
    while (size_t n = fread(chunk, 1, sizeof(chunk), pipe)) output.append(chunk, n);
    int status = pclose(pipe);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
};

TEST_F(CPythonDifferentialTest, EveryProtocolDecodesToWhatPythonPickled) {
  std::string expected = ReadFile(dir_ / "expected.txt");
  ASSERT_GT(expected.size(), 10000u);
  for (int protocol = 2; protocol <= 5; ++protocol) {
    SCOPED_TRACE(fmt::format("protocol {}", protocol));
    absl::StatusOr<std::shared_ptr<const Buffer>> buffer =
        Buffer::MapFile((dir_ / fmt::format("p{}.pkl", protocol)).string());
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    absl::StatusOr<Document> doc = DecodePickle(*buffer);
    ASSERT_TRUE(doc.ok()) << doc.status();
    std::string actual = Render(*doc, doc->root());
    size_t diff = 0;
    while (diff < actual.size() && diff < expected.size() && actual[diff] == expected[diff]) {
      ++diff;
    }
    EXPECT_EQ(actual.size(), expected.size());
    EXPECT_EQ(diff, expected.size())
        << "first difference at " << diff << ": expected ..."
        << expected.substr(diff > 40 ? diff - 40 : 0, 80) << "... got ..."
        << actual.substr(diff > 40 ? diff - 40 : 0, 80);

    // Objects CPython memoized come back as one shared node.
    ValueId root = doc->root();
    ValueId entries = doc->Find(root, "entries");
    auto frames_of = [&](size_t entry) {
      return doc->items(doc->Find(doc->items(entries)[entry], "frames"));
    };
    EXPECT_EQ(frames_of(1)[0], frames_of(7)[0]);
    EXPECT_EQ(frames_of(1)[1], frames_of(2)[0]);
    ValueId extras = doc->Find(root, "extras");
    EXPECT_EQ(doc->Find(extras, "shared_list"), doc->Find(extras, "shared_again"));
  }
}

TEST_F(CPythonDifferentialTest, IntegersPastInt64AreRefused) {
  absl::StatusOr<Document> doc = Decode(ReadFile(dir_ / "huge_int.pkl"));
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(doc.status()), HasSubstr("integer does not fit in 64 bits"));
}

TEST_F(CPythonDifferentialTest, EveryTruncationOfACPythonPickleIsDataLoss) {
  std::string bytes = ReadFile(dir_ / "p4.pkl");
  ASSERT_GT(bytes.size(), 1000u);
  // Every prefix near the ends and a stride through the middle: all of them would take seconds.
  for (size_t length = 0; length < bytes.size(); length += (length < 300 ? 1 : 37)) {
    absl::StatusOr<Document> doc = Decode(bytes.substr(0, length));
    ASSERT_FALSE(doc.ok()) << length;
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kDataLoss) << length << ": " << doc.status();
  }
}

}  // namespace
}  // namespace fr
