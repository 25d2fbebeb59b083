// The decoded logical content of one dump file: the values Python's pickle.load (or json.load)
// would return, stored compactly and without ever building Python-like objects.
//
//   Document doc = ...;  // from DecodePickle or DecodeJson
//   ValueId entries = doc.Find(doc.root(), "entries");
//   if (entries != kNoValue && doc.kind(entries) == ValueKind::kList) {
//     for (ValueId entry : doc.items(entries)) { ... }
//   }
//
// Values live in one array and are named by ValueId. Containers list their children's ids, so a
// value referenced twice (a pickle memo hit: frame dicts shared by many entries) is stored once and
// the document is a DAG, as in Python. Strings are zero-copy views into the input Buffer when the
// input holds them verbatim (pickle), or into the document's own arena (unescaped JSON).
#ifndef FR_DECODE_DOCUMENT_H_
#define FR_DECODE_DOCUMENT_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fr/base/buffer.h"

namespace fr {

enum class ValueKind : uint8_t { kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict };

// "none", "bool", "int", "float", "str", "list", "tuple", "dict": Python's type names, for errors.
std::string_view ValueKindName(ValueKind kind);

using ValueId = uint32_t;
inline constexpr ValueId kNoValue = std::numeric_limits<ValueId>::max();

class Document {
 public:
  Document() = default;
  Document(Document&&) = default;
  Document& operator=(Document&&) = default;

  // kNoValue for a default-constructed document.
  ValueId root() const { return root_; }
  size_t value_count() const { return nodes_.size(); }

  ValueKind kind(ValueId id) const { return nodes_[id].kind; }
  // Byte offset in the decoded input where the value began (its opcode or JSON token).
  uint64_t source_offset(ValueId id) const { return nodes_[id].source_offset; }

  // Accessors check nothing: call them only for a value of the matching kind.
  bool bool_value(ValueId id) const { return nodes_[id].payload != 0; }
  int64_t int_value(ValueId id) const { return static_cast<int64_t>(nodes_[id].payload); }
  double float_value(ValueId id) const;
  std::string_view string_value(ValueId id) const;

  // For a list or tuple: its items. For a dict: keys and values alternating (k0, v0, k1, v1...),
  // in insertion order; a key set twice appears twice, the later value wins (see Find).
  std::span<const ValueId> items(ValueId id) const {
    const Node& node = nodes_[id];
    return {children_.data() + node.payload, node.count};
  }
  // Number of items of a list or tuple, number of pairs of a dict.
  size_t size(ValueId id) const {
    const Node& node = nodes_[id];
    return node.kind == ValueKind::kDict ? node.count / 2 : node.count;
  }

  // The value stored under the string key `key` of `dict` (the last one when set twice), or
  // kNoValue when absent or when `dict` is not a dict.
  ValueId Find(ValueId dict, std::string_view key) const;

  // The bytes the document was decoded from (kept alive by the document).
  std::string_view input() const { return input_ ? input_->bytes() : std::string_view(); }

 private:
  friend class DocumentBuilder;

  struct Node {
    uint64_t payload;  // int/bool/double bits; string: offset (kArenaBit: in arena_); container:
                       // first index in children_
    uint32_t count;    // string length; container: number of child ids
    uint32_t source_offset;
    ValueKind kind;
  };
  static constexpr uint64_t kArenaBit = uint64_t{1} << 63;

  std::shared_ptr<const Buffer> input_;
  std::vector<Node> nodes_;
  std::vector<ValueId> children_;
  std::string arena_;
  ValueId root_ = kNoValue;
};

// Builds a Document. Decoders create values in any order and may append children to a container
// several times (pickle's APPENDS/SETITEMS come in batches, interleaved with other containers);
// Finish lays every container's children out contiguously. Memory stays proportional to the
// number of values and child references created, hence to the input size.
//
// One builder may be reused for many inputs.
class DocumentBuilder {
 public:
  // Inputs larger than this are refused by decoders, so offsets and lengths fit in 32 bits.
  static constexpr uint64_t kMaxInputSize = std::numeric_limits<uint32_t>::max();

  DocumentBuilder() = default;

  // Starts a new document over `input` (strings may point into it).
  void Reset(std::shared_ptr<const Buffer> input);

  // Pre-sizes storage for about `values` values and `children` child references, so that
  // decoders that can estimate them from the input size avoid regrowing (and copying) vectors.
  void Reserve(size_t values, size_t children);

  ValueId AddNone(uint32_t source_offset);
  ValueId AddBool(bool value, uint32_t source_offset);
  ValueId AddInt(int64_t value, uint32_t source_offset);
  ValueId AddFloat(double value, uint32_t source_offset);
  // A string stored verbatim in the input at [offset, offset + length): no copy.
  ValueId AddInputString(uint32_t offset, uint32_t length, uint32_t source_offset);
  // A string copied into the document (escaped JSON strings, decoded text).
  ValueId AddOwnedString(std::string_view value, uint32_t source_offset);
  // An empty list, tuple or dict.
  ValueId AddContainer(ValueKind kind, uint32_t source_offset);
  // Appends `children` to `container` (for a dict: keys and values alternating). Appending to a
  // container after Finish is not allowed.
  void Append(ValueId container, std::span<const ValueId> children);

  size_t value_count() const { return nodes_.size(); }
  ValueKind kind(ValueId id) const { return nodes_[id].kind; }
  uint32_t child_count(ValueId id) const { return nodes_[id].count; }

  // Returns the finished document rooted at `root` and leaves the builder empty.
  Document Finish(ValueId root);

 private:
  using Node = Document::Node;
  // A run of one container's children in pending_; chained when the container gets several
  // non-adjacent batches.
  struct Chunk {
    uint32_t begin;
    uint32_t count;
    uint32_t next;  // index into chunks_, or kNoChunk
  };
  static constexpr uint32_t kNoChunk = std::numeric_limits<uint32_t>::max();

  ValueId AddNode(ValueKind kind, uint64_t payload, uint32_t count, uint32_t source_offset);

  std::shared_ptr<const Buffer> input_;
  std::vector<Node> nodes_;
  // While building, a container's payload holds its first chunk (low 32 bits) and last chunk
  // (high 32 bits), or kNoChunk in both when it has no children yet.
  std::vector<Chunk> chunks_;
  std::vector<ValueId> pending_;
  std::string arena_;
};

}  // namespace fr

#endif  // FR_DECODE_DOCUMENT_H_
