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

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "fr/base/buffer.h"

namespace fr {

enum class ValueKind : uint8_t { kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict };

// "none", "bool", "int", "float", "str", "list", "tuple", "dict": Python's type names, for errors.
std::string_view ValueKindName(ValueKind kind);

using ValueId = uint32_t;
inline constexpr ValueId kNoValue = std::numeric_limits<ValueId>::max();

namespace document_internal {

// A growable array of trivially copyable values in malloc'd memory, the storage of documents and
// builders. Unlike std::vector it grows with realloc (large arrays are remapped, not copied), its
// push is small enough to inline in a decoder's loop, and its pointers (not sizes) are the members,
// so stores of the 32- and 64-bit values it holds cannot alias them.
template <typename T>
class PodArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodArray() = default;
  PodArray(PodArray&& other) noexcept
      : begin_(std::exchange(other.begin_, nullptr)),
        end_(std::exchange(other.end_, nullptr)),
        capacity_end_(std::exchange(other.capacity_end_, nullptr)) {}
  PodArray& operator=(PodArray&& other) noexcept {
    if (this != &other) {
      std::free(begin_);
      begin_ = std::exchange(other.begin_, nullptr);
      end_ = std::exchange(other.end_, nullptr);
      capacity_end_ = std::exchange(other.capacity_end_, nullptr);
    }
    return *this;
  }
  ~PodArray() { std::free(begin_); }

  T* data() { return begin_; }
  const T* data() const { return begin_; }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  size_t capacity() const { return static_cast<size_t>(capacity_end_ - begin_); }
  bool empty() const { return end_ == begin_; }
  T& operator[](size_t i) { return begin_[i]; }
  const T& operator[](size_t i) const { return begin_[i]; }
  T& back() { return end_[-1]; }

  void clear() { end_ = begin_; }
  void pop_back() { --end_; }
  void shrink_to(size_t size) { end_ = begin_ + size; }
  void reserve(size_t capacity) {
    if (capacity > this->capacity()) Reallocate(capacity);
  }
  void push_back(const T& value) {
    if (end_ == capacity_end_) [[unlikely]] {
      Grow(1);
    }
    *end_++ = value;
  }
  // Appends `n` uninitialized values; returns the first.
  T* grow_by(size_t n) {
    if (static_cast<size_t>(capacity_end_ - end_) < n) [[unlikely]] {
      Grow(n);
    }
    T* out = end_;
    end_ += n;
    return out;
  }
  // Appends `n` values; `values` must not point into this array.
  void append(const T* values, size_t n) {
    if (static_cast<size_t>(capacity_end_ - end_) < n) [[unlikely]] {
      Grow(n);
    }
    // A plain loop: batches are short (a dict's pairs, a list's items), and an inlined memcpy of
    // unknown size becomes `rep movs`, whose startup costs more than such a copy.
    T* out = end_;
    for (size_t i = 0; i < n; ++i) out[i] = values[i];
    end_ += n;
  }

 private:
  [[gnu::noinline]] void Grow(size_t extra) {
    Reallocate(std::max({size() + extra, capacity() * 2, size_t{64}}));
  }
  void Reallocate(size_t capacity) {
    size_t size = this->size();
    void* grown = std::realloc(begin_, capacity * sizeof(T));
    if (grown == nullptr) throw std::bad_alloc();
    begin_ = static_cast<T*>(grown);
    end_ = begin_ + size;
    capacity_end_ = begin_ + capacity;
  }

  T* begin_ = nullptr;
  T* end_ = nullptr;
  T* capacity_end_ = nullptr;
};

// The arrays of one value, shared by Document and DocumentBuilder.
struct Node {
  uint64_t payload;  // int/bool/double bits; string: offset (Document::kArenaBit: in the arena);
                     // container: first index in the children array
  uint32_t count;    // string length; container: number of child ids
  uint32_t source_offset;
};
static_assert(sizeof(Node) == 16);

// A value's kind in the low bits of its tag, then the shared bit; the bits above are free for the
// decoder that builds the document (the pickle decoder keeps its per-value checks there). Kinds
// sit beside, not in, the nodes so that type checks touch one byte-dense array.
inline constexpr uint32_t kKindBits = 3;
inline constexpr uint32_t kKindMask = (uint32_t{1} << kKindBits) - 1;
inline constexpr uint32_t kSharedBit = uint32_t{1} << kKindBits;
inline constexpr uint32_t kFlagShift = kKindBits + 1;

// Storage of a finished document. A document's arrays are handed to a small per-thread pool when
// it is destroyed and the next builder on that thread starts from them, so that decoding file
// after file (decode, normalize, drop) reuses warm memory instead of fresh pages from the kernel.
struct Storage {
  PodArray<Node> nodes;
  PodArray<uint32_t> tags;
  PodArray<ValueId> children;
};
// Moves `storage`'s arrays into this thread's pool where it has room (capacity is kept, sizes are
// not); what the pool does not take is freed.
void Recycle(Storage& storage);
// Gives `storage` the pool's arrays for those of its arrays that have no capacity.
void Reuse(Storage& storage);

}  // namespace document_internal

class Document {
 public:
  Document() = default;
  Document(Document&&) = default;
  Document& operator=(Document&& other) noexcept {
    if (this != &other) {
      document_internal::Recycle(storage_);
      input_ = std::move(other.input_);
      storage_ = std::move(other.storage_);
      arena_ = std::move(other.arena_);
      root_ = std::exchange(other.root_, kNoValue);
    }
    return *this;
  }
  ~Document() { document_internal::Recycle(storage_); }

  // kNoValue for a default-constructed document.
  ValueId root() const { return root_; }
  size_t value_count() const { return storage_.nodes.size(); }

  ValueKind kind(ValueId id) const {
    return static_cast<ValueKind>(storage_.tags[id] & document_internal::kKindMask);
  }
  // Whether a container has more than one parent: a pickle memo hit put it in a second container,
  // as PyTorch writes frame dicts shared by entries. A consumer that memoizes its work by value
  // id need only do so for shared containers and for what it reads inside them (reached along as
  // many paths, though not marked). Never set for scalars (whose repetition costs nothing to
  // expand) nor in JSON documents.
  bool shared(ValueId id) const { return storage_.tags[id] & document_internal::kSharedBit; }
  // kind(id) == kind && !shared(id), in one compare: the common case of consumers that memoize
  // shared values.
  bool IsUnshared(ValueId id, ValueKind kind) const {
    constexpr uint32_t kMask = document_internal::kKindMask | document_internal::kSharedBit;
    return (storage_.tags[id] & kMask) == static_cast<uint32_t>(kind);
  }
  // Byte offset in the decoded input where the value began (its opcode or JSON token).
  uint64_t source_offset(ValueId id) const { return storage_.nodes[id].source_offset; }

  // Accessors check nothing: call them only for a value of the matching kind.
  bool bool_value(ValueId id) const { return storage_.nodes[id].payload != 0; }
  int64_t int_value(ValueId id) const { return static_cast<int64_t>(storage_.nodes[id].payload); }
  double float_value(ValueId id) const;
  std::string_view string_value(ValueId id) const;

  // For a list or tuple: its items. For a dict: keys and values alternating (k0, v0, k1, v1...),
  // in insertion order; a key set twice appears twice, the later value wins (see Find).
  std::span<const ValueId> items(ValueId id) const {
    const Node& node = storage_.nodes[id];
    return {storage_.children.data() + node.payload, node.count};
  }
  // Number of items of a list or tuple, number of pairs of a dict.
  size_t size(ValueId id) const {
    const Node& node = storage_.nodes[id];
    return kind(id) == ValueKind::kDict ? node.count / 2 : node.count;
  }

  // The value stored under the string key `key` of `dict` (the last one when set twice), or
  // kNoValue when absent or when `dict` is not a dict.
  ValueId Find(ValueId dict, std::string_view key) const;

  // The bytes the document was decoded from (kept alive by the document).
  std::string_view input() const { return input_ ? input_->bytes() : std::string_view(); }

 private:
  friend class DocumentBuilder;
  using Node = document_internal::Node;

  static constexpr uint64_t kArenaBit = uint64_t{1} << 63;

  std::shared_ptr<const Buffer> input_;
  document_internal::Storage storage_;
  std::string arena_;
  ValueId root_ = kNoValue;
};

// Builds a Document. Decoders create values in any order and may append children to a container
// several times (pickle's APPENDS/SETITEMS come in batches, interleaved with other containers);
// Finish lays every container's children out contiguously. Memory stays proportional to the
// number of values and child references created, hence to the input size: both decoders consume
// at least one input byte per value and per child reference they add, so a document of an N-byte
// input holds at most N values (20 bytes each) and N child references (4 bytes each, twice while
// Finish joins batches). That is the decoders' memory budget; expanding shared values is left to
// consumers, which bound it themselves (NormalizeLimits, the `dump` printer).
//
// One builder may be reused for many inputs. The Add functions are inline: decoders call them
// once per value.
class DocumentBuilder {
 public:
  // Inputs larger than this are refused by decoders, so offsets and lengths fit in 32 bits.
  static constexpr uint64_t kMaxInputSize = std::numeric_limits<uint32_t>::max();
  // Bits of a value's tag that the building decoder may use (see flags()).
  static constexpr uint32_t kFlagBits = 32 - document_internal::kFlagShift;

  DocumentBuilder() = default;

  // Starts a new document over `input` (strings may point into it).
  void Reset(std::shared_ptr<const Buffer> input);

  // Pre-sizes storage for about `values` values and `children` child references, so that
  // decoders that can estimate them from the input size avoid regrowing (and copying) arrays.
  void Reserve(size_t values, size_t children);

  ValueId AddNone(uint32_t source_offset) { return AddNode(ValueKind::kNone, 0, 0, source_offset); }
  ValueId AddBool(bool value, uint32_t source_offset) {
    return AddNode(ValueKind::kBool, value ? 1 : 0, 0, source_offset);
  }
  ValueId AddInt(int64_t value, uint32_t source_offset) {
    return AddNode(ValueKind::kInt, static_cast<uint64_t>(value), 0, source_offset);
  }
  ValueId AddFloat(double value, uint32_t source_offset) {
    return AddNode(ValueKind::kFloat, std::bit_cast<uint64_t>(value), 0, source_offset);
  }
  // A string stored verbatim in the input at [offset, offset + length): no copy.
  ValueId AddInputString(uint32_t offset, uint32_t length, uint32_t source_offset) {
    return AddNode(ValueKind::kString, offset, length, source_offset);
  }
  // A string copied into the document (escaped JSON strings, decoded text).
  ValueId AddOwnedString(std::string_view value, uint32_t source_offset);
  // An empty list, tuple or dict; `flags` as in set_flags.
  ValueId AddContainer(ValueKind kind, uint32_t source_offset, uint32_t flags = 0) {
    return AddNode(kind, 0, 0, source_offset, flags);
  }
  // Appends `children` to `container` (for a dict: keys and values alternating). Appending to a
  // container after Finish is not allowed.
  void Append(ValueId container, std::span<const ValueId> children) {
    if (children.empty()) return;
    ValueId* out = AppendSpace(container, children.size());
    for (size_t i = 0; i < children.size(); ++i) out[i] = children[i];
  }
  // Like Append, but the caller writes the `count` (> 0) child ids to the returned space, which
  // stays valid until the next Add or Append: lets a decoder copy and check children in one pass.
  ValueId* AppendSpace(ValueId container, size_t count) {
    Node& node = storage_.nodes[container];
    size_t end = storage_.children.size();
    // One batch per container, or consecutive batches for it (the common cases), stay in place.
    if (node.count == 0) {
      node.payload = end;
    } else if (node.payload + node.count != end || (node.payload & kChunkedBit)) {
      AddChunk(node, count);
    }
    node.count += static_cast<uint32_t>(count);
    return storage_.children.grow_by(count);
  }

  size_t value_count() const { return storage_.nodes.size(); }
  ValueKind kind(ValueId id) const {
    return static_cast<ValueKind>(storage_.tags[id] & document_internal::kKindMask);
  }
  uint32_t child_count(ValueId id) const { return storage_.nodes[id].count; }
  // kFlagBits bits of the decoder's own per-value facts, 0 when the value was added; the finished
  // document ignores them.
  uint32_t flags(ValueId id) const { return storage_.tags[id] >> document_internal::kFlagShift; }
  void set_flags(ValueId id, uint32_t flags) {
    constexpr uint32_t kKept = document_internal::kKindMask | document_internal::kSharedBit;
    storage_.tags[id] = (storage_.tags[id] & kKept) | (flags << document_internal::kFlagShift);
  }
  // Marks a container as having more than one parent (see Document::shared).
  void mark_shared(ValueId id) { storage_.tags[id] |= document_internal::kSharedBit; }

  // Returns the finished document rooted at `root` and leaves the builder empty.
  Document Finish(ValueId root);

 private:
  using Node = document_internal::Node;
  // A run of one container's children in the children array; chained when the container gets
  // several non-adjacent batches.
  struct Chunk {
    uint32_t begin;
    uint32_t count;
    uint32_t next;  // index into chunks_, or kNoChunk
  };
  // A container whose children are in several chunks until Finish copies them together.
  struct Chunked {
    ValueId container;
    uint32_t first_chunk;
    uint32_t last_chunk;
  };
  static constexpr uint32_t kNoChunk = std::numeric_limits<uint32_t>::max();
  // Set in a container's payload while building when the low bits index chunked_.
  static constexpr uint64_t kChunkedBit = uint64_t{1} << 62;

  ValueId AddNode(ValueKind kind, uint64_t payload, uint32_t count, uint32_t source_offset,
                  uint32_t flags = 0) {
    ValueId id = static_cast<ValueId>(storage_.nodes.size());
    storage_.nodes.push_back(Node{payload, count, source_offset});
    storage_.tags.push_back(static_cast<uint32_t>(kind) | (flags << document_internal::kFlagShift));
    return id;
  }
  // Records that `node`'s next `count` children start at the children array's end, in a chunk of
  // their own.
  void AddChunk(Node& node, size_t count);

  std::shared_ptr<const Buffer> input_;
  document_internal::Storage storage_;
  std::vector<Chunk> chunks_;
  std::vector<Chunked> chunked_;
  std::string arena_;
};

}  // namespace fr

#endif  // FR_DECODE_DOCUMENT_H_
