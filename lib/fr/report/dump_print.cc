#include "fr/report/dump_print.h"

#include <algorithm>
#include <new>
#include <span>
#include <vector>

#include "fmt/format.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "simdjson.h"

namespace fr {
namespace {

constexpr uint64_t kSaturated = uint64_t{1} << 62;

uint64_t Add(uint64_t a, uint64_t b) { return std::min(a + b, kSaturated); }

// Python's json.dumps of a float: repr digits ("-2.2250738585072014e-308" is the longest),
// "NaN" or "-Infinity".
constexpr uint64_t kMaxFloatBytes = 24;

uint64_t IntBytes(int64_t value) {
  uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  uint64_t digits = 1;
  while (magnitude >= 10) {
    magnitude /= 10;
    ++digits;
  }
  return digits + (value < 0 ? 1 : 0);
}

// The quoted, escaped string as the writer prints it: two bytes for the escapes \" \\ \b \f \n \r
// \t, six for other control characters (\u00XX), and at most six per byte of invalid UTF-8
// (\ufffd, or \udXXX for the three bytes of an encoded surrogate).
uint64_t StringBytes(std::string_view text) {
  uint64_t size = 2;
  bool non_ascii = false;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      non_ascii = true;
      size += 1;
    } else if (byte == '"' || byte == '\\' || byte == '\b' || byte == '\f' || byte == '\n' ||
               byte == '\r' || byte == '\t') {
      size += 2;
    } else if (byte < 0x20) {
      size += 6;
    } else {
      size += 1;
    }
  }
  if (non_ascii && !simdjson::validate_utf8(text.data(), text.size())) {
    for (char c : text) size += static_cast<unsigned char>(c) >= 0x80 ? 5 : 0;
  }
  return size;
}

// Computes printed sizes bottom-up, each value once: a shared value's size is remembered by id
// and added at each reference, so the work is one visit per value and per child reference.
class PrintedSizer {
 public:
  explicit PrintedSizer(const Document& doc) : doc_(doc), sizes_(doc.value_count(), kUnknown) {}

  // The printed size of `root`, or of the first container found larger than `limit` (then
  // *over is set to it and the walk stops).
  uint64_t Size(ValueId root, uint64_t limit, ValueId* over) {
    *over = kNoValue;
    if (root == kNoValue) return 4;  // "null"
    if (!IsContainer(root)) return ScalarBytes(root);
    Open(root);
    while (!stack_.empty()) {
      Frame& frame = stack_.back();
      std::span<const ValueId> items = doc_.items(frame.id);
      bool dict = doc_.kind(frame.id) == ValueKind::kDict;
      if (frame.next == items.size()) {
        // Brackets, and ", " between items (pairs for a dict).
        size_t count = dict ? items.size() / 2 : items.size();
        uint64_t size = Add(frame.total, 2 + (count > 0 ? 2 * (count - 1) : 0));
        sizes_[frame.id] = size;
        ValueId id = frame.id;
        stack_.pop_back();
        if (size > limit) {
          *over = id;
          return size;
        }
        if (!stack_.empty()) stack_.back().total = Add(stack_.back().total, size);
        continue;
      }
      ValueId item = items[frame.next++];
      if (dict && frame.next % 2 == 1) {
        // A key and ": ". Container keys print as "<list>" and the like, never expanded.
        frame.total = Add(frame.total, KeyBytes(item) + 2);
        continue;
      }
      if (!IsContainer(item)) {
        frame.total = Add(frame.total, ScalarBytes(item));
      } else if (sizes_[item] == kInProgress) {
        frame.total = Add(frame.total, 4);  // a cycle: the writer prints null
      } else if (sizes_[item] != kUnknown) {
        frame.total = Add(frame.total, sizes_[item]);
      } else {
        Open(item);
      }
    }
    return sizes_[root];
  }

 private:
  static constexpr uint64_t kUnknown = UINT64_MAX;
  static constexpr uint64_t kInProgress = UINT64_MAX - 1;

  struct Frame {
    ValueId id;
    size_t next;
    uint64_t total;
  };

  bool IsContainer(ValueId id) const {
    ValueKind kind = doc_.kind(id);
    return kind == ValueKind::kList || kind == ValueKind::kTuple || kind == ValueKind::kDict;
  }

  void Open(ValueId id) {
    sizes_[id] = kInProgress;
    stack_.push_back(Frame{id, 0, 0});
  }

  uint64_t ScalarBytes(ValueId id) {
    switch (doc_.kind(id)) {
      case ValueKind::kNone:
        return 4;
      case ValueKind::kBool:
        return doc_.bool_value(id) ? 4 : 5;
      case ValueKind::kInt:
        return IntBytes(doc_.int_value(id));
      case ValueKind::kFloat:
        return kMaxFloatBytes;
      case ValueKind::kString:
        // Strings are memo hits too: each is scanned once.
        if (sizes_[id] == kUnknown) sizes_[id] = StringBytes(doc_.string_value(id));
        return sizes_[id];
      default:
        return 0;
    }
  }

  uint64_t KeyBytes(ValueId key) {
    switch (doc_.kind(key)) {
      case ValueKind::kString:
        return ScalarBytes(key);
      case ValueKind::kNone:
        return 6;  // "null"
      case ValueKind::kBool:
      case ValueKind::kInt:
      case ValueKind::kFloat:
        return ScalarBytes(key) + 2;
      default:
        return 9;  // "<tuple>", "<list>", "<dict>"
    }
  }

  const Document& doc_;
  std::vector<uint64_t> sizes_;  // per value: printed size, kUnknown or kInProgress
  std::vector<Frame> stack_;
};

}  // namespace

uint64_t PrintedSizeLimit(uint64_t input_size) {
  uint64_t scaled;
  if (__builtin_mul_overflow(input_size, kPrintedBytesPerInputByte, &scaled)) return UINT64_MAX;
  return std::max(scaled, kMinPrintedBytes);
}

uint64_t PrintedJsonSizeBound(const Document& document) {
  ValueId over;
  return PrintedSizer(document).Size(document.root(), UINT64_MAX, &over);
}

absl::Status CheckPrintedSize(const Document& document, uint64_t limit) {
  ValueId over;
  uint64_t size = PrintedSizer(document).Size(document.root(), limit, &over);
  if (over == kNoValue) return absl::OkStatus();
  return absl::ResourceExhaustedError(fmt::format(
      "byte {}: this value prints as {} bytes of JSON, over the limit of {} bytes ({} per "
      "input byte, at least {}): shared references (memo hits) are printed in full at every use, "
      "as pickle.load returns them",
      document.source_offset(over),
      size >= kSaturated ? fmt::format("more than {}", kSaturated) : fmt::format("up to {}", size),
      limit, kPrintedBytesPerInputByte, kMinPrintedBytes));
}

absl::StatusOr<Document> DecodeForPrinting(const InputFile& input) {
  try {
    absl::StatusOr<Document> document =
        input.encoding == Encoding::kJson ? DecodeJson(input.bytes) : DecodePickle(input.bytes);
    if (!document.ok()) return document.status();
    absl::Status printable = CheckPrintedSize(*document, PrintedSizeLimit(input.bytes->size()));
    if (!printable.ok()) return printable;
    return document;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        fmt::format("out of memory reading a dump of {} bytes for printing", input.bytes->size()));
  }
}

}  // namespace fr
