// The pickle opcodes of protocols 0 to 5 (CPython's Lib/pickletools.py lists them), with their
// names for error messages and the decision whether the flight-recorder decoder accepts them.
//
//   if (PickleOpcodeInfo(0x63).policy == PickleOpcodePolicy::kRefusedCode) { ... }  // GLOBAL
//   std::string_view name = PickleOpcodeInfo(0x93).name;                           //
//   "STACK_GLOBAL"
//
// Internal to fr_decode: the decoder switches on PickleOpcode, error messages use the table.
#ifndef FR_DECODE_PICKLE_OPCODES_H_
#define FR_DECODE_PICKLE_OPCODES_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace fr {

enum class PickleOpcode : uint8_t {
  // Protocol 0 and 1.
  kMark = 0x28,            // (
  kStop = 0x2e,            // .
  kPop = 0x30,             // 0
  kPopMark = 0x31,         // 1
  kDup = 0x32,             // 2
  kFloat = 0x46,           // F
  kInt = 0x49,             // I
  kBinInt = 0x4a,          // J
  kBinInt1 = 0x4b,         // K
  kLong = 0x4c,            // L
  kBinInt2 = 0x4d,         // M
  kNone = 0x4e,            // N
  kPersId = 0x50,          // P
  kBinPersId = 0x51,       // Q
  kReduce = 0x52,          // R
  kString = 0x53,          // S
  kBinString = 0x54,       // T
  kShortBinString = 0x55,  // U
  kUnicode = 0x56,         // V
  kBinUnicode = 0x58,      // X
  kEmptyList = 0x5d,       // ]
  kAppend = 0x61,          // a
  kBuild = 0x62,           // b
  kGlobal = 0x63,          // c
  kDict = 0x64,            // d
  kAppends = 0x65,         // e
  kGet = 0x67,             // g
  kBinGet = 0x68,          // h
  kInst = 0x69,            // i
  kLongBinGet = 0x6a,      // j
  kList = 0x6c,            // l
  kObj = 0x6f,             // o
  kPut = 0x70,             // p
  kBinPut = 0x71,          // q
  kLongBinPut = 0x72,      // r
  kSetItem = 0x73,         // s
  kTuple = 0x74,           // t
  kEmptyTuple = 0x29,      // )
  kSetItems = 0x75,        // u
  kBinFloat = 0x47,        // G
  kEmptyDict = 0x7d,       // }
  // Protocol 2.
  kProto = 0x80,
  kNewObj = 0x81,
  kExt1 = 0x82,
  kExt2 = 0x83,
  kExt4 = 0x84,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  // Protocol 3.
  kBinBytes = 0x42,       // B
  kShortBinBytes = 0x43,  // C
  // Protocol 4.
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kAddItems = 0x90,
  kFrozenSet = 0x91,
  kNewObjEx = 0x92,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
  // Protocol 5.
  kByteArray8 = 0x96,
  kNextBuffer = 0x97,
  kReadOnlyBuffer = 0x98,
};

enum class PickleOpcodePolicy : uint8_t {
  kUnknown,      // not a pickle opcode at all
  kAllowed,      // decoded
  kRefusedCode,  // imports or calls Python code (or asks the caller to resolve an object)
  kRefusedType,  // builds a type that dumps never hold (bytes, sets, out-of-band buffers)
  kRefusedText,  // protocol 0/1 text form that neither PyTorch nor CPython (protocol >= 2) writes
};

struct PickleOpcodeDescription {
  std::string_view name;  // pickletools' name, "" when unknown
  PickleOpcodePolicy policy = PickleOpcodePolicy::kUnknown;
};

namespace pickle_opcodes_internal {

constexpr std::array<PickleOpcodeDescription, 256> MakeTable() {
  using P = PickleOpcodePolicy;
  std::array<PickleOpcodeDescription, 256> t{};
  auto set = [&t](PickleOpcode op, std::string_view name, P policy) {
    t[static_cast<uint8_t>(op)] = {name, policy};
  };
  using O = PickleOpcode;
  // The opcodes of genuine torch::jit::Pickler dumps and of CPython's protocol 2-5 re-pickles of
  // them; PUT/GET text forms are accepted too because they are as harmless as BINPUT/BINGET.
  set(O::kMark, "MARK", P::kAllowed);
  set(O::kStop, "STOP", P::kAllowed);
  set(O::kBinInt, "BININT", P::kAllowed);
  set(O::kBinInt1, "BININT1", P::kAllowed);
  set(O::kBinInt2, "BININT2", P::kAllowed);
  set(O::kNone, "NONE", P::kAllowed);
  set(O::kBinUnicode, "BINUNICODE", P::kAllowed);
  set(O::kEmptyList, "EMPTY_LIST", P::kAllowed);
  set(O::kAppend, "APPEND", P::kAllowed);
  set(O::kAppends, "APPENDS", P::kAllowed);
  set(O::kGet, "GET", P::kAllowed);
  set(O::kBinGet, "BINGET", P::kAllowed);
  set(O::kLongBinGet, "LONG_BINGET", P::kAllowed);
  set(O::kPut, "PUT", P::kAllowed);
  set(O::kBinPut, "BINPUT", P::kAllowed);
  set(O::kLongBinPut, "LONG_BINPUT", P::kAllowed);
  set(O::kSetItem, "SETITEM", P::kAllowed);
  set(O::kTuple, "TUPLE", P::kAllowed);
  set(O::kEmptyTuple, "EMPTY_TUPLE", P::kAllowed);
  set(O::kSetItems, "SETITEMS", P::kAllowed);
  set(O::kBinFloat, "BINFLOAT", P::kAllowed);
  set(O::kEmptyDict, "EMPTY_DICT", P::kAllowed);
  set(O::kProto, "PROTO", P::kAllowed);
  set(O::kTuple1, "TUPLE1", P::kAllowed);
  set(O::kTuple2, "TUPLE2", P::kAllowed);
  set(O::kTuple3, "TUPLE3", P::kAllowed);
  set(O::kNewTrue, "NEWTRUE", P::kAllowed);
  set(O::kNewFalse, "NEWFALSE", P::kAllowed);
  set(O::kLong1, "LONG1", P::kAllowed);
  set(O::kLong4, "LONG4", P::kAllowed);
  set(O::kShortBinUnicode, "SHORT_BINUNICODE", P::kAllowed);
  set(O::kBinUnicode8, "BINUNICODE8", P::kAllowed);
  set(O::kMemoize, "MEMOIZE", P::kAllowed);
  set(O::kFrame, "FRAME", P::kAllowed);

  set(O::kPersId, "PERSID", P::kRefusedCode);
  set(O::kBinPersId, "BINPERSID", P::kRefusedCode);
  set(O::kReduce, "REDUCE", P::kRefusedCode);
  set(O::kBuild, "BUILD", P::kRefusedCode);
  set(O::kGlobal, "GLOBAL", P::kRefusedCode);
  set(O::kInst, "INST", P::kRefusedCode);
  set(O::kObj, "OBJ", P::kRefusedCode);
  set(O::kNewObj, "NEWOBJ", P::kRefusedCode);
  set(O::kExt1, "EXT1", P::kRefusedCode);
  set(O::kExt2, "EXT2", P::kRefusedCode);
  set(O::kExt4, "EXT4", P::kRefusedCode);
  set(O::kNewObjEx, "NEWOBJ_EX", P::kRefusedCode);
  set(O::kStackGlobal, "STACK_GLOBAL", P::kRefusedCode);

  set(O::kString, "STRING", P::kRefusedType);
  set(O::kBinString, "BINSTRING", P::kRefusedType);
  set(O::kShortBinString, "SHORT_BINSTRING", P::kRefusedType);
  set(O::kBinBytes, "BINBYTES", P::kRefusedType);
  set(O::kShortBinBytes, "SHORT_BINBYTES", P::kRefusedType);
  set(O::kBinBytes8, "BINBYTES8", P::kRefusedType);
  set(O::kEmptySet, "EMPTY_SET", P::kRefusedType);
  set(O::kAddItems, "ADDITEMS", P::kRefusedType);
  set(O::kFrozenSet, "FROZENSET", P::kRefusedType);
  set(O::kByteArray8, "BYTEARRAY8", P::kRefusedType);
  set(O::kNextBuffer, "NEXT_BUFFER", P::kRefusedType);
  set(O::kReadOnlyBuffer, "READONLY_BUFFER", P::kRefusedType);

  set(O::kPop, "POP", P::kRefusedText);
  set(O::kPopMark, "POP_MARK", P::kRefusedText);
  set(O::kDup, "DUP", P::kRefusedText);
  set(O::kFloat, "FLOAT", P::kRefusedText);
  set(O::kInt, "INT", P::kRefusedText);
  set(O::kLong, "LONG", P::kRefusedText);
  set(O::kUnicode, "UNICODE", P::kRefusedText);
  set(O::kDict, "DICT", P::kRefusedText);
  set(O::kList, "LIST", P::kRefusedText);
  return t;
}

inline constexpr std::array<PickleOpcodeDescription, 256> kTable = MakeTable();

}  // namespace pickle_opcodes_internal

// The name and policy of the byte `op`; {"", kUnknown} when it is no pickle opcode.
constexpr const PickleOpcodeDescription& PickleOpcodeInfo(uint8_t op) {
  return pickle_opcodes_internal::kTable[op];
}

}  // namespace fr

#endif  // FR_DECODE_PICKLE_OPCODES_H_
