#include "fr/decode/pickle_decoder.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/byte_order.h"
#include "fr/decode/pickle_opcodes.h"
#include "fr/decode/utf8_check.h"
#include "simdjson.h"

namespace fr {
namespace {

// Per-value facts the machine needs again after a value was created, kept in the builder's
// per-value flags (DocumentBuilder::flags), which stay 0 for scalars:
//   - height: 0 for scalars, 1 + the highest child for containers (so never 0 for a container).
//     Children are sealed (see below) before they are counted, so a height never changes after a
//     parent used it and the document's depth is known exactly without walking it.
//   - unhashable: lists, dicts and tuples holding one; Python refuses them as dict keys.
//   - sealed: the value is already a child of some container. Appending to a sealed container is
//     refused: no producer does it (both PyTorch and CPython fill a container before its parent
//     takes it), and refusing it makes cycles impossible, so every consumer can walk the
//     document without cycle checks and never deeper than PickleLimits::max_depth.
constexpr uint32_t kUnhashable = uint32_t{1} << 0;
constexpr uint32_t kSealed = uint32_t{1} << 1;
constexpr uint32_t kHeightShift = 2;
constexpr uint32_t kMaxHeight = (uint32_t{1} << (DocumentBuilder::kFlagBits - kHeightShift)) - 1;

// Set on the value stack (and in the memo) beside the id of every list, dict and tuple. Filling a
// container then finds its container children, the only ones with anything to check, seal or
// count, from the ids it already holds, without looking up the flags of every scalar child (most
// children: ints, and the strings of memo hits). Ids stay below kMaxPickleInputSize < 2^31, so
// the bit is free.
constexpr ValueId kContainerBit = ValueId{1} << 31;
static_assert(kMaxPickleInputSize < kContainerBit);
static_assert(kNoValue & kContainerBit);

// Scratch space reused across calls on one thread, so that decoding many files allocates the
// stack, marks and memo once.
struct Scratch {
  document_internal::PodArray<ValueId> stack;
  document_internal::PodArray<uint32_t> marks;  // stack sizes at each open MARK
  document_internal::PodArray<ValueId> memo;    // dense memo ids; kNoValue where never put
  DocumentBuilder builder;
};

// Memo ids are sequential in every real producer; a hostile file may use any 32-bit id, which
// goes to a hash map instead of growing the dense vector. The hash is mixed so that chosen ids
// cannot pile up in one bucket.
struct MixedIdHash {
  size_t operator()(uint32_t id) const {
    uint64_t x = (uint64_t{id} + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
    return static_cast<size_t>(x ^ (x >> 31));
  }
};

std::string OpcodeLabel(uint8_t op) {
  return fmt::format("{} (0x{:02x})", PickleOpcodeInfo(op).name, op);
}

class PickleMachine {
 public:
  PickleMachine(std::string_view input, const PickleLimits& limits, Scratch& scratch)
      : begin_(reinterpret_cast<const uint8_t*>(input.data())),
        end_(begin_ + input.size()),
        max_depth_(std::min<uint32_t>(limits.max_depth, kMaxHeight)),
        builder_(scratch.builder),
        stack_(scratch.stack),
        marks_(scratch.marks),
        memo_(scratch.memo) {
    stack_.clear();
    stack_.reserve(64);
    marks_.clear();
    memo_.clear();
    for (int i = 0; i < 256; ++i) memo_.push_back(kNoValue);
  }

  // Runs to STOP; returns the root.
  absl::StatusOr<ValueId> Run();

 private:
  uint32_t Offset(const uint8_t* at) const { return static_cast<uint32_t>(at - begin_); }
  size_t Left(const uint8_t* at) const { return static_cast<size_t>(end_ - at); }

  // Makes room for at least one more value above `top`, the stack's end; returns the new end.
  [[gnu::noinline]] ValueId* GrowStack(ValueId* top) {
    size_t size = static_cast<size_t>(top - stack_.data());
    stack_.shrink_to(size);
    stack_.reserve(size * 2);
    return stack_.data() + size;
  }

  // Adds `count` values from `children` to `container`: checks dict keys, seals the children and
  // updates the height.
  inline bool AddChildren(ValueId container, const ValueId* children, size_t count, bool dict,
                          const uint8_t* op);

  // These return false after storing the error in error_: a bool keeps the hot loop free of
  // absl::Status construction, checks and destruction.
  // The value-returning ones return kNoValue instead (never a real id: ids are below the input
  // size), so that results stay in registers.
  void MemoPut(uint32_t id, ValueId value);
  [[gnu::noinline]] ValueId MemoGet(uint32_t id, const uint8_t* op);
  [[gnu::noinline]] ValueId AddString(const uint8_t* op, const uint8_t* text, uint64_t length);
  [[gnu::noinline]] ValueId AddLong(const uint8_t* op, const uint8_t* bytes, size_t length);
  bool Fail(absl::Status status) {
    error_ = std::move(status);
    return false;
  }
  ValueId FailValue(absl::Status status) {
    error_ = std::move(status);
    return kNoValue;
  }

  // Errors. Kept out of line: the loop should not carry their code.
  [[gnu::cold, gnu::noinline]] absl::Status Invalid(const uint8_t* at, std::string what) const {
    return absl::InvalidArgumentError(fmt::format("byte {}: {}", Offset(at), what));
  }
  // `needed` bytes were to start at `at`.
  [[gnu::cold, gnu::noinline]] absl::Status Truncated(const uint8_t* op, const uint8_t* at,
                                                      uint64_t needed) const {
    return absl::DataLossError(fmt::format("byte {}: truncated: {} needs {} bytes, {} left",
                                           Offset(op), PickleOpcodeInfo(*op).name, needed,
                                           Left(at)));
  }
  // `available`: values above the innermost open MARK.
  [[gnu::cold, gnu::noinline]] absl::Status Underflow(const uint8_t* op, size_t needed,
                                                      size_t available) const {
    return Invalid(
        op, fmt::format("stack underflow: {} needs {} value{} above the last MARK, {} "
                        "there",
                        PickleOpcodeInfo(*op).name, needed, needed == 1 ? "" : "s", available));
  }
  [[gnu::cold, gnu::noinline]] absl::Status TooDeep(const uint8_t* op) const {
    return Invalid(op, fmt::format("nesting deeper than {} levels", max_depth_));
  }
  [[gnu::cold, gnu::noinline]] absl::Status NoMark(const uint8_t* op) const {
    return Invalid(op, fmt::format("{} without a MARK", PickleOpcodeInfo(*op).name));
  }
  [[gnu::cold, gnu::noinline]] absl::Status WrongTarget(const uint8_t* op, ValueId target,
                                                        bool dict) const {
    return Invalid(op, fmt::format("{} on a {}, not a {}", PickleOpcodeInfo(*op).name,
                                   ValueKindName(builder_.kind(target)), dict ? "dict" : "list"));
  }
  enum class BadChildReason { kSealedContainer, kUnhashableKey, kItself };
  [[gnu::cold, gnu::noinline]] bool BadChild(const uint8_t* op, ValueId container, ValueId child,
                                             BadChildReason reason);
  [[gnu::cold, gnu::noinline]] absl::Status Refused(const uint8_t* op) const;

  const uint8_t* const begin_;
  const uint8_t* const end_;
  const uint32_t max_depth_;
  DocumentBuilder& builder_;
  document_internal::PodArray<ValueId>& stack_;
  document_internal::PodArray<uint32_t>& marks_;
  document_internal::PodArray<ValueId>& memo_;
  std::unordered_map<uint32_t, ValueId, MixedIdHash> sparse_memo_;
  uint32_t memo_count_ = 0;  // distinct ids put, as CPython counts them for MEMOIZE
  absl::Status error_;
};

absl::Status PickleMachine::Refused(const uint8_t* op) const {
  const PickleOpcodeDescription& info = PickleOpcodeInfo(*op);
  std::string_view why;
  switch (info.policy) {
    case PickleOpcodePolicy::kUnknown:
      return Invalid(op, fmt::format("unknown opcode 0x{:02x}", *op));
    case PickleOpcodePolicy::kRefusedCode:
      why = "it imports or calls Python code, and flight-recorder dumps hold only plain data";
      break;
    case PickleOpcodePolicy::kRefusedType:
      why = "flight-recorder dumps hold no bytes, sets or buffers";
      break;
    case PickleOpcodePolicy::kRefusedText:
    case PickleOpcodePolicy::kAllowed:
      why = "it is a protocol 0/1 form that neither PyTorch nor CPython (protocol 2+) writes";
      break;
  }
  return Invalid(op, fmt::format("opcode {} is not allowed: {}", OpcodeLabel(*op), why));
}

// The errors of AddChildren.
bool PickleMachine::BadChild(const uint8_t* op, ValueId container, ValueId child,
                             BadChildReason reason) {
  if (reason == BadChildReason::kSealedContainer) {
    return Fail(Invalid(
        op, fmt::format("{} on a {} that is already inside another container (only "
                        "acyclic data filled before use is supported)",
                        PickleOpcodeInfo(*op).name, ValueKindName(builder_.kind(container)))));
  }
  if (reason == BadChildReason::kItself) {
    return Fail(
        Invalid(op, fmt::format("{} would put a {} inside itself", PickleOpcodeInfo(*op).name,
                                ValueKindName(builder_.kind(container)))));
  }
  return Fail(Invalid(
      op, fmt::format("unhashable dict key of type {}", ValueKindName(builder_.kind(child)))));
}

// `children` are stack slots: ids tagged with kContainerBit. Copies them to the container
// untagged, checking and sealing the container children on the way, in one pass.
[[gnu::always_inline]] inline bool PickleMachine::AddChildren(ValueId container,
                                                              const ValueId* children, size_t count,
                                                              bool dict, const uint8_t* op) {
  uint32_t container_flags = builder_.flags(container);
  if (container_flags & kSealed) [[unlikely]] {
    return BadChild(op, container, kNoValue, BadChildReason::kSealedContainer);
  }
  if (count == 0) return true;
  // Only tuples take on the unhashability of their items.
  const uint32_t inherited = builder_.kind(container) == ValueKind::kTuple ? kUnhashable : 0;
  uint32_t height = container_flags >> kHeightShift;
  ValueId* out = builder_.AppendSpace(container, count);
  for (size_t i = 0; i < count; ++i) {
    ValueId child = children[i];
    if (child & kContainerBit) {
      child &= ~kContainerBit;
      uint32_t child_flags = builder_.flags(child);
      if (dict && (i & 1) == 0 && (child_flags & kUnhashable)) [[unlikely]] {
        return BadChild(op, container, child, BadChildReason::kUnhashableKey);
      }
      if (child == container) [[unlikely]] {
        return BadChild(op, container, child, BadChildReason::kItself);
      }
      height = std::max(height, (child_flags >> kHeightShift) + 1);
      container_flags |= child_flags & inherited;
      builder_.set_flags(child, child_flags | kSealed);
    }
    out[i] = child;
  }
  if (height > max_depth_) [[unlikely]] {
    return Fail(TooDeep(op));
  }
  builder_.set_flags(container, (container_flags & ((uint32_t{1} << kHeightShift) - 1)) |
                                    (height << kHeightShift));
  return true;
}

void PickleMachine::MemoPut(uint32_t id, ValueId value) {
  // Every put takes at least two input bytes, so denser ids than the input size are impossible:
  // ids below it may use the vector without letting a file choose its size. torch and CPython
  // both number memo entries 0, 1, 2...
  if (id < memo_.size() || id < static_cast<size_t>(end_ - begin_)) [[likely]] {
    while (id >= memo_.size()) memo_.push_back(kNoValue);
    if (memo_[id] == kNoValue) ++memo_count_;
    memo_[id] = value;
    return;
  }
  auto [it, inserted] = sparse_memo_.insert_or_assign(id, value);
  if (inserted) ++memo_count_;
}

ValueId PickleMachine::MemoGet(uint32_t id, const uint8_t* op) {
  if (id < memo_.size() && memo_[id] != kNoValue) return memo_[id];
  if (auto it = sparse_memo_.find(id); it != sparse_memo_.end()) return it->second;
  Fail(Invalid(
      op, fmt::format("{} of memo id {}, which was never put", PickleOpcodeInfo(*op).name, id)));
  return kNoValue;
}

ValueId PickleMachine::AddString(const uint8_t* op, const uint8_t* text, uint64_t length) {
  if (length > Left(text)) [[unlikely]] {
    if (length > kMaxPickleInputSize) {
      return FailValue(Invalid(op, fmt::format("{} length {} is absurd (the input has {} bytes)",
                                               PickleOpcodeInfo(*op).name, length, end_ - begin_)));
    }
    return FailValue(Truncated(op, text, length));
  }
  if (!IsStrictUtf8(text, length)) [[unlikely]] {
    return FailValue(Invalid(op, fmt::format("{} string at byte {} is not valid UTF-8",
                                             PickleOpcodeInfo(*op).name, Offset(text))));
  }
  return builder_.AddInputString(Offset(text), static_cast<uint32_t>(length), Offset(op));
}

// Python ints are unbounded; dumps only hold int64 (torch writes every LONG1 with 8 bytes,
// CPython the fewest two's-complement bytes).
ValueId PickleMachine::AddLong(const uint8_t* op, const uint8_t* bytes, size_t length) {
  uint64_t value;
  if (length == 8) {
    value = LoadLe64(bytes);
  } else if (length < 8) {
    value = 0;
    for (size_t i = 0; i < length; ++i) value |= uint64_t{bytes[i]} << (8 * i);
    if (length > 0 && (bytes[length - 1] & 0x80)) value |= ~uint64_t{0} << (8 * length);
  } else {
    value = LoadLe64(bytes);
    // Longer encodings fit when the extra bytes only repeat the sign.
    uint8_t fill = (bytes[7] & 0x80) ? 0xff : 0x00;
    for (size_t i = 8; i < length; ++i) {
      if (bytes[i] != fill) return FailValue(Invalid(op, "integer does not fit in 64 bits"));
    }
  }
  return builder_.AddInt(static_cast<int64_t>(value), Offset(op));
}

#define FR_PICKLE_TRY(expr)     \
  do {                          \
    if (!(expr)) [[unlikely]] { \
      return std::move(error_); \
    }                           \
  } while (false)

// Requires `n` argument bytes after the opcode at `op`.
#define FR_PICKLE_NEED(n)           \
  do {                              \
    if (Left(p) < (n)) [[unlikely]] \
      return Truncated(op, p, (n)); \
  } while (false)

// The value stack lives in locals while the loop runs: `top` is its end, `stack` its start and
// `stack_end` its capacity, reloaded whenever it grows.
#define FR_PICKLE_PUSH(value)                \
  do {                                       \
    ValueId pushed_ = (value);               \
    if (top == stack_end) [[unlikely]] {     \
      top = GrowStack(top);                  \
      stack = stack_.data();                 \
      stack_end = stack + stack_.capacity(); \
    }                                        \
    *top++ = pushed_;                        \
  } while (false)

// Pops the innermost MARK into `mark` (the stack size when it was pushed).
#define FR_PICKLE_CLOSE_MARK(mark)              \
  do {                                          \
    if (marks_.empty()) [[unlikely]] {          \
      return NoMark(op);                        \
    }                                           \
    mark = marks_.back();                       \
    marks_.pop_back();                          \
    floor = marks_.empty() ? 0 : marks_.back(); \
  } while (false)

// Values above the innermost open MARK; only those may be consumed.
#define FR_PICKLE_AVAILABLE() (static_cast<size_t>(top - stack) - floor)

// Replaces the values from stack[first] up by one tuple of them.
#define FR_PICKLE_MAKE_TUPLE(first)                                                              \
  do {                                                                                           \
    size_t first_ = (first);                                                                     \
    ValueId tuple_ =                                                                             \
        builder_.AddContainer(ValueKind::kTuple, Offset(op), uint32_t{1} << kHeightShift);       \
    if (max_depth_ < 1) [[unlikely]] {                                                           \
      return TooDeep(op);                                                                        \
    }                                                                                            \
    FR_PICKLE_TRY(AddChildren(tuple_, stack + first_, static_cast<size_t>(top - stack) - first_, \
                              /*dict=*/false, op));                                              \
    top = stack + first_;                                                                        \
    FR_PICKLE_PUSH(tuple_ | kContainerBit);                                                      \
  } while (false)

// Sets `var` to `expr`, a value-returning helper, or returns its error.
#define FR_PICKLE_TRY_VALUE(var, expr)  \
  do {                                  \
    var = (expr);                       \
    if (var == kNoValue) [[unlikely]] { \
      return std::move(error_);         \
    }                                   \
  } while (false)

// The rarer outcomes of a memo get, both tagged kContainerBit in `value` (kNoValue has the bit
// too, so the common case, a string, costs one test): an id that was not found in the dense memo
// (looked up in full by MemoGet), and a container, which the get gives a second parent. That is
// marked for consumers to expand it once (Document::shared); memo puts alone do not mark, as
// CPython memoizes every container, and PyTorch some that it holds only once.
#define FR_PICKLE_GOT_RARE(value, id)                \
  do {                                               \
    if ((value) == kNoValue) {                       \
      FR_PICKLE_TRY_VALUE(value, MemoGet((id), op)); \
      if (!((value)&kContainerBit)) break;           \
    }                                                \
    builder_.mark_shared((value) & ~kContainerBit);  \
  } while (false)

// Dispatches the next opcode, or leaves the loop at the end of the input.
#define FR_PICKLE_NEXT()          \
  do {                            \
    if (p == end_) [[unlikely]] { \
      goto out_of_input;          \
    }                             \
    op = p++;                     \
    goto* dispatch[*op];          \
  } while (false)

absl::StatusOr<ValueId> PickleMachine::Run() {
  const uint8_t* p = begin_;
  ValueId* stack = stack_.data();
  ValueId* top = stack;
  ValueId* stack_end = stack + stack_.capacity();
  // The stack size at the innermost open MARK (0 when none): only values above it may be used.
  size_t floor = 0;
  // Memo slots: at least 256 (kNoValue where never put), so one-byte ids need no bounds check;
  // reloaded after each put.
  const ValueId* memo = memo_.data();
  // Threaded dispatch: each handler jumps straight to the next one through this table, which lets
  // the branch predictor learn the opcode sequences that dumps repeat entry after entry.
  const void* dispatch[256];
  for (const void*& target : dispatch) target = &&refused;
  dispatch[static_cast<uint8_t>(PickleOpcode::kProto)] = &&op_kProto;
  dispatch[static_cast<uint8_t>(PickleOpcode::kFrame)] = &&op_kFrame;
  dispatch[static_cast<uint8_t>(PickleOpcode::kMark)] = &&op_kMark;
  dispatch[static_cast<uint8_t>(PickleOpcode::kEmptyDict)] = &&op_kEmptyDict;
  dispatch[static_cast<uint8_t>(PickleOpcode::kEmptyList)] = &&op_kEmptyList;
  dispatch[static_cast<uint8_t>(PickleOpcode::kEmptyTuple)] = &&op_kEmptyTuple;
  dispatch[static_cast<uint8_t>(PickleOpcode::kSetItems)] = &&op_kSetItems;
  dispatch[static_cast<uint8_t>(PickleOpcode::kAppends)] = &&op_kAppends;
  dispatch[static_cast<uint8_t>(PickleOpcode::kSetItem)] = &&op_kSetItem;
  dispatch[static_cast<uint8_t>(PickleOpcode::kAppend)] = &&op_kAppend;
  dispatch[static_cast<uint8_t>(PickleOpcode::kTuple)] = &&op_kTuple;
  dispatch[static_cast<uint8_t>(PickleOpcode::kTuple1)] = &&op_kTuple1;
  dispatch[static_cast<uint8_t>(PickleOpcode::kTuple2)] = &&op_kTuple2;
  dispatch[static_cast<uint8_t>(PickleOpcode::kTuple3)] = &&op_kTuple3;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinUnicode)] = &&op_kBinUnicode;
  dispatch[static_cast<uint8_t>(PickleOpcode::kShortBinUnicode)] = &&op_kShortBinUnicode;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinUnicode8)] = &&op_kBinUnicode8;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinPut)] = &&op_kBinPut;
  dispatch[static_cast<uint8_t>(PickleOpcode::kLongBinPut)] = &&op_kLongBinPut;
  dispatch[static_cast<uint8_t>(PickleOpcode::kMemoize)] = &&op_kMemoize;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinGet)] = &&op_kBinGet;
  dispatch[static_cast<uint8_t>(PickleOpcode::kLongBinGet)] = &&op_kLongBinGet;
  dispatch[static_cast<uint8_t>(PickleOpcode::kPut)] = &&op_kPut;
  dispatch[static_cast<uint8_t>(PickleOpcode::kGet)] = &&op_kGet;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinInt1)] = &&op_kBinInt1;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinInt2)] = &&op_kBinInt2;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinInt)] = &&op_kBinInt;
  dispatch[static_cast<uint8_t>(PickleOpcode::kLong1)] = &&op_kLong1;
  dispatch[static_cast<uint8_t>(PickleOpcode::kLong4)] = &&op_kLong4;
  dispatch[static_cast<uint8_t>(PickleOpcode::kBinFloat)] = &&op_kBinFloat;
  dispatch[static_cast<uint8_t>(PickleOpcode::kNewTrue)] = &&op_kNewTrue;
  dispatch[static_cast<uint8_t>(PickleOpcode::kNewFalse)] = &&op_kNewFalse;
  dispatch[static_cast<uint8_t>(PickleOpcode::kNone)] = &&op_kNone;
  dispatch[static_cast<uint8_t>(PickleOpcode::kStop)] = &&op_kStop;
  const uint8_t* op;
  FR_PICKLE_NEXT();
op_kProto : {
  FR_PICKLE_NEED(1);
  if (*p > 5) return Invalid(op, fmt::format("unsupported pickle protocol {}", *p));
  ++p;
  FR_PICKLE_NEXT();
}
op_kFrame : {
  // Frames only tell a streaming reader how much to prefetch; the whole input is here.
  FR_PICKLE_NEED(8);
  uint64_t length = LoadLe64(p);
  p += 8;
  if (length > Left(p)) return Truncated(op, p, length);
  FR_PICKLE_NEXT();
}
op_kMark:
  if (marks_.size() >= max_depth_) [[unlikely]] {
    return TooDeep(op);
  }
  floor = static_cast<size_t>(top - stack);
  marks_.push_back(static_cast<uint32_t>(floor));
  FR_PICKLE_NEXT();
op_kEmptyDict:
op_kEmptyList:
op_kEmptyTuple : {
  if (max_depth_ < 1) [[unlikely]] {
    return TooDeep(op);
  }
  ValueId id;
  if (*op == static_cast<uint8_t>(PickleOpcode::kEmptyDict)) {
    id = builder_.AddContainer(ValueKind::kDict, Offset(op),
                               kUnhashable | (uint32_t{1} << kHeightShift));
  } else if (*op == static_cast<uint8_t>(PickleOpcode::kEmptyList)) {
    id = builder_.AddContainer(ValueKind::kList, Offset(op),
                               kUnhashable | (uint32_t{1} << kHeightShift));
  } else {
    id = builder_.AddContainer(ValueKind::kTuple, Offset(op), uint32_t{1} << kHeightShift);
  }
  FR_PICKLE_PUSH(id | kContainerBit);
  FR_PICKLE_NEXT();
}
op_kSetItems:
op_kAppends : {
  size_t mark;
  FR_PICKLE_CLOSE_MARK(mark);
  bool dict = *op == static_cast<uint8_t>(PickleOpcode::kSetItems);
  // The container sits just below the MARK and must itself be above the enclosing one.
  if (mark <= floor) [[unlikely]] {
    return Invalid(op, fmt::format("stack underflow: {} has no {} below its MARK",
                                   PickleOpcodeInfo(*op).name, dict ? "dict" : "list"));
  }
  ValueId target = stack[mark - 1] & ~kContainerBit;
  if (builder_.kind(target) != (dict ? ValueKind::kDict : ValueKind::kList)) [[unlikely]] {
    return WrongTarget(op, target, dict);
  }
  size_t count = static_cast<size_t>(top - stack) - mark;
  if (dict && (count & 1)) [[unlikely]] {
    return Invalid(op, fmt::format("SETITEMS with an odd number of items ({})", count));
  }
  FR_PICKLE_TRY(AddChildren(target, stack + mark, count, dict, op));
  top = stack + mark;
  FR_PICKLE_NEXT();
}
op_kSetItem:
op_kAppend : {
  bool dict = *op == static_cast<uint8_t>(PickleOpcode::kSetItem);
  size_t count = dict ? 2 : 1;
  if (FR_PICKLE_AVAILABLE() < count + 1) [[unlikely]] {
    return Underflow(op, count + 1, FR_PICKLE_AVAILABLE());
  }
  ValueId* first = top - count;
  ValueId target = first[-1] & ~kContainerBit;
  if (builder_.kind(target) != (dict ? ValueKind::kDict : ValueKind::kList)) [[unlikely]] {
    return WrongTarget(op, target, dict);
  }
  FR_PICKLE_TRY(AddChildren(target, first, count, dict, op));
  top = first;
  FR_PICKLE_NEXT();
}
op_kTuple : {
  size_t mark;
  FR_PICKLE_CLOSE_MARK(mark);
  FR_PICKLE_MAKE_TUPLE(mark);
  FR_PICKLE_NEXT();
}
op_kTuple1:
op_kTuple2:
op_kTuple3 : {
  size_t count = *op - static_cast<uint8_t>(PickleOpcode::kTuple1) + 1;
  if (FR_PICKLE_AVAILABLE() < count) [[unlikely]] {
    return Underflow(op, count, FR_PICKLE_AVAILABLE());
  }
  FR_PICKLE_MAKE_TUPLE(static_cast<size_t>(top - stack) - count);
  FR_PICKLE_NEXT();
}
op_kBinUnicode:
op_kShortBinUnicode:
op_kBinUnicode8 : {
  // The length comes first, in 1, 4 or 8 little-endian bytes.
  size_t width = *op == static_cast<uint8_t>(PickleOpcode::kShortBinUnicode) ? 1
                 : *op == static_cast<uint8_t>(PickleOpcode::kBinUnicode)    ? 4
                                                                             : 8;
  FR_PICKLE_NEED(width);
  uint64_t length = width == 1 ? *p : width == 4 ? LoadLe32(p) : LoadLe64(p);
  p += width;
  ValueId id;
  FR_PICKLE_TRY_VALUE(id, AddString(op, p, length));
  FR_PICKLE_PUSH(id);
  p += length;
  FR_PICKLE_NEXT();
}
op_kBinPut:
op_kLongBinPut:
op_kMemoize : {
  uint32_t id;
  if (*op == static_cast<uint8_t>(PickleOpcode::kBinPut)) {
    FR_PICKLE_NEED(1);
    id = *p;
  } else if (*op == static_cast<uint8_t>(PickleOpcode::kLongBinPut)) {
    FR_PICKLE_NEED(4);
    id = LoadLe32(p);
  } else {
    id = memo_count_;
  }
  if (FR_PICKLE_AVAILABLE() == 0) [[unlikely]] {
    return Underflow(op, 1, 0);
  }
  MemoPut(id, top[-1]);
  memo = memo_.data();
  if (*op == static_cast<uint8_t>(PickleOpcode::kBinPut)) {
    p += 1;
  } else if (*op == static_cast<uint8_t>(PickleOpcode::kLongBinPut)) {
    p += 4;
  }
  FR_PICKLE_NEXT();
}
op_kBinGet : {
  FR_PICKLE_NEED(1);
  // Nearly every string in a torch dump is a memo hit, and one-byte ids are all in range.
  ValueId value = memo[*p++];
  if (value & kContainerBit) [[unlikely]] {
    FR_PICKLE_GOT_RARE(value, p[-1]);
  }
  FR_PICKLE_PUSH(value);
  FR_PICKLE_NEXT();
}
op_kLongBinGet : {
  FR_PICKLE_NEED(4);
  uint32_t id = LoadLe32(p);
  p += 4;
  ValueId value = id < memo_.size() ? memo[id] : kNoValue;
  if (value & kContainerBit) [[unlikely]] {
    FR_PICKLE_GOT_RARE(value, id);
  }
  FR_PICKLE_PUSH(value);
  FR_PICKLE_NEXT();
}
op_kPut:
op_kGet : {
  // Text forms: a decimal id and a newline.
  const uint8_t* newline =
      static_cast<const uint8_t*>(std::memchr(p, '\n', static_cast<size_t>(end_ - p)));
  if (newline == nullptr) {
    return absl::DataLossError(fmt::format("byte {}: truncated: {} has no newline", Offset(op),
                                           PickleOpcodeInfo(*op).name));
  }
  uint64_t id = 0;
  bool ok = newline > p && newline - p <= 10;
  for (const uint8_t* d = p; ok && d < newline; ++d) {
    ok = *d >= '0' && *d <= '9';
    id = id * 10 + (*d - '0');
  }
  if (!ok || id > UINT32_MAX) {
    return Invalid(
        op, fmt::format("{} needs a memo id from 0 to {}", PickleOpcodeInfo(*op).name, UINT32_MAX));
  }
  p = newline + 1;
  if (*op == static_cast<uint8_t>(PickleOpcode::kPut)) {
    if (FR_PICKLE_AVAILABLE() == 0) [[unlikely]] {
      return Underflow(op, 1, 0);
    }
    MemoPut(static_cast<uint32_t>(id), top[-1]);
    memo = memo_.data();
  } else {
    ValueId value = kNoValue;
    FR_PICKLE_GOT_RARE(value, static_cast<uint32_t>(id));
    FR_PICKLE_PUSH(value);
  }
  FR_PICKLE_NEXT();
}
op_kBinInt1:
  FR_PICKLE_NEED(1);
  FR_PICKLE_PUSH(builder_.AddInt(*p, Offset(op)));
  p += 1;
  FR_PICKLE_NEXT();
op_kBinInt2:
  FR_PICKLE_NEED(2);
  FR_PICKLE_PUSH(builder_.AddInt(p[0] | (p[1] << 8), Offset(op)));
  p += 2;
  FR_PICKLE_NEXT();
op_kBinInt:
  FR_PICKLE_NEED(4);
  FR_PICKLE_PUSH(builder_.AddInt(static_cast<int32_t>(LoadLe32(p)), Offset(op)));
  p += 4;
  FR_PICKLE_NEXT();
op_kLong1 : {
  FR_PICKLE_NEED(1);
  size_t length = *p++;
  if (Left(p) < length) return Truncated(op, p, length);
  ValueId id;
  if (length == 8) [[likely]] {  // torch's form
    id = builder_.AddInt(static_cast<int64_t>(LoadLe64(p)), Offset(op));
  } else {
    FR_PICKLE_TRY_VALUE(id, AddLong(op, p, length));
  }
  FR_PICKLE_PUSH(id);
  p += length;
  FR_PICKLE_NEXT();
}
op_kLong4 : {
  FR_PICKLE_NEED(4);
  int32_t length = static_cast<int32_t>(LoadLe32(p));
  p += 4;
  if (length < 0) return Invalid(op, fmt::format("LONG4 with negative length {}", length));
  if (Left(p) < static_cast<size_t>(length)) return Truncated(op, p, length);
  ValueId id;
  FR_PICKLE_TRY_VALUE(id, AddLong(op, p, static_cast<size_t>(length)));
  FR_PICKLE_PUSH(id);
  p += length;
  FR_PICKLE_NEXT();
}
op_kBinFloat:
  FR_PICKLE_NEED(8);
  FR_PICKLE_PUSH(builder_.AddFloat(std::bit_cast<double>(LoadBe64(p)), Offset(op)));
  p += 8;
  FR_PICKLE_NEXT();
op_kNewTrue:
op_kNewFalse:
  FR_PICKLE_PUSH(builder_.AddBool(*op == static_cast<uint8_t>(PickleOpcode::kNewTrue), Offset(op)));
  FR_PICKLE_NEXT();
op_kNone:
  FR_PICKLE_PUSH(builder_.AddNone(Offset(op)));
  FR_PICKLE_NEXT();
op_kStop : {
  if (!marks_.empty()) {
    return Invalid(op, fmt::format("STOP with {} MARK{} still open", marks_.size(),
                                   marks_.size() == 1 ? "" : "s"));
  }
  size_t depth = static_cast<size_t>(top - stack);
  if (depth == 0) return Underflow(op, 1, 0);
  // CPython ignores values left below the result; no producer leaves any, so they are
  // treated as the corruption they are.
  if (depth > 1) {
    return Invalid(op, fmt::format("STOP leaves {} values on the stack, expected 1", depth));
  }
  if (p != end_) {
    return Invalid(p,
                   fmt::format("{} trailing byte{} after STOP", Left(p), Left(p) == 1 ? "" : "s"));
  }
  return stack[0] & ~kContainerBit;
}
refused:
  return Refused(op);
out_of_input:
  if (begin_ == end_) return absl::DataLossError("byte 0: truncated: the input is empty");
  return absl::DataLossError(
      fmt::format("byte {}: truncated: the stream ends without STOP", Offset(end_)));
}

#undef FR_PICKLE_NEXT
#undef FR_PICKLE_GOT_RARE
#undef FR_PICKLE_PUSH
#undef FR_PICKLE_AVAILABLE
#undef FR_PICKLE_MAKE_TUPLE
#undef FR_PICKLE_TRY_VALUE
#undef FR_PICKLE_CLOSE_MARK
#undef FR_PICKLE_NEED
#undef FR_PICKLE_TRY

// Drops scratch capacity that one unusually large input left behind.
template <typename T>
void TrimScratch(document_internal::PodArray<T>& v) {
  constexpr size_t kKeepBytes = size_t{16} << 20;
  if (v.capacity() * sizeof(T) > kKeepBytes) v = document_internal::PodArray<T>();
}

}  // namespace

absl::StatusOr<Document> DecodePickle(std::shared_ptr<const Buffer> input,
                                      const PickleLimits& limits) {
  if (input == nullptr) return absl::InvalidArgumentError("byte 0: no input buffer");
  std::string_view bytes = input->bytes();
  if (bytes.size() > kMaxPickleInputSize) {
    return absl::InvalidArgumentError(
        fmt::format("byte 0: input of {} bytes is larger than the {} bytes a dump may have",
                    bytes.size(), kMaxPickleInputSize));
  }
  thread_local Scratch scratch;
  absl::StatusOr<Document> result = absl::UnknownError("");
  // Memory is bounded by the input size (see DocumentBuilder), but a large input may still not
  // fit: that is this file's error, not the end of a run over many files.
  try {
    scratch.builder.Reset(input);
    // Torch dumps hold about one value per 6 input bytes and one child reference per 3 (most
    // strings are 2-byte BINGETs): sizing for that up front avoids regrowing when no recycled
    // storage is at hand. Untouched reserved pages cost nothing; the cap keeps a huge input from
    // reserving more than it will use (beyond it, arrays grow by remapping).
    constexpr size_t kMaxReservedValues = size_t{1} << 22;
    scratch.builder.Reserve(std::min(bytes.size() / 4, kMaxReservedValues),
                            std::min(bytes.size() / 2, 2 * kMaxReservedValues));
    absl::StatusOr<ValueId> root = PickleMachine(bytes, limits, scratch).Run();
    result = root.ok() ? absl::StatusOr<Document>(scratch.builder.Finish(*root))
                       : absl::StatusOr<Document>(root.status());
  } catch (const std::bad_alloc&) {
    result = absl::ResourceExhaustedError(
        fmt::format("byte 0: out of memory decoding a pickle of {} bytes (a decoded value takes "
                    "up to 28 bytes per input byte)",
                    bytes.size()));
    scratch.stack = {};
    scratch.marks = {};
    scratch.memo = {};
  }
  // The builder must not keep the input alive, nor (like a success, which moves them into the
  // document) the arrays of a failed input, which may be large.
  if (result.ok()) {
    scratch.builder.Reset(nullptr);
  } else {
    scratch.builder = DocumentBuilder();
  }
  TrimScratch(scratch.stack);
  TrimScratch(scratch.marks);
  TrimScratch(scratch.memo);
  return result;
}

}  // namespace fr
