#include "fr/decode/document.h"

#include <bit>
#include <cassert>

namespace fr {

std::string_view ValueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kNone:
      return "none";
    case ValueKind::kBool:
      return "bool";
    case ValueKind::kInt:
      return "int";
    case ValueKind::kFloat:
      return "float";
    case ValueKind::kString:
      return "str";
    case ValueKind::kList:
      return "list";
    case ValueKind::kTuple:
      return "tuple";
    case ValueKind::kDict:
      return "dict";
  }
  return "unknown";
}

namespace document_internal {
namespace {

// Arrays larger than this are freed rather than pooled, so that one unusually large input does not
// pin its memory for the life of the thread.
constexpr size_t kMaxPooledBytes = size_t{32} << 20;

// The pool lives on the heap behind a trivially destructible pointer, so that documents destroyed
// during thread or program exit (after the pool itself) simply free their memory.
thread_local Storage* pool = nullptr;
thread_local bool pool_closed = false;

struct PoolOwner {
  ~PoolOwner() {
    delete pool;
    pool = nullptr;
    pool_closed = true;
  }
};

Storage* ThreadPool() {
  if (pool == nullptr && !pool_closed) {
    thread_local PoolOwner owner;
    pool = new Storage;
  }
  return pool;
}

template <typename T>
void Give(PodArray<T>& from, PodArray<T>& to) {
  if (from.capacity() == 0) return;
  if (to.capacity() < from.capacity() && from.capacity() * sizeof(T) <= kMaxPooledBytes) {
    to = std::move(from);
    to.clear();
  } else {
    from = PodArray<T>();
  }
}

template <typename T>
void Take(PodArray<T>& from, PodArray<T>& to) {
  if (to.capacity() == 0 && from.capacity() != 0) to = std::move(from);
}

}  // namespace

void Recycle(Storage& storage) {
  if (storage.nodes.capacity() == 0 && storage.tags.capacity() == 0 &&
      storage.children.capacity() == 0) {
    return;
  }
  Storage* pooled = ThreadPool();
  if (pooled == nullptr) {
    storage = Storage();
    return;
  }
  Give(storage.nodes, pooled->nodes);
  Give(storage.tags, pooled->tags);
  Give(storage.children, pooled->children);
}

void Reuse(Storage& storage) {
  if (pool == nullptr) return;
  Take(pool->nodes, storage.nodes);
  Take(pool->tags, storage.tags);
  Take(pool->children, storage.children);
}

}  // namespace document_internal

double Document::float_value(ValueId id) const {
  return std::bit_cast<double>(storage_.nodes[id].payload);
}

std::string_view Document::string_value(ValueId id) const {
  const Node& node = storage_.nodes[id];
  if (node.payload & kArenaBit) {
    return std::string_view(arena_).substr(node.payload & ~kArenaBit, node.count);
  }
  return input().substr(node.payload, node.count);
}

ValueId Document::Find(ValueId dict, std::string_view key) const {
  if (dict == kNoValue || kind(dict) != ValueKind::kDict) return kNoValue;
  std::span<const ValueId> pairs = items(dict);
  ValueId found = kNoValue;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    if (kind(pairs[i]) == ValueKind::kString && string_value(pairs[i]) == key) {
      found = pairs[i + 1];
    }
  }
  return found;
}

void DocumentBuilder::Reset(std::shared_ptr<const Buffer> input) {
  input_ = std::move(input);
  document_internal::Reuse(storage_);
  storage_.nodes.clear();
  storage_.tags.clear();
  storage_.children.clear();
  chunks_.clear();
  chunked_.clear();
  arena_.clear();
}

void DocumentBuilder::Reserve(size_t values, size_t children) {
  storage_.nodes.reserve(values);
  storage_.tags.reserve(values);
  storage_.children.reserve(children);
}

ValueId DocumentBuilder::AddOwnedString(std::string_view value, uint32_t source_offset) {
  uint64_t offset = arena_.size();
  arena_.append(value);
  return AddNode(ValueKind::kString, offset | Document::kArenaBit,
                 static_cast<uint32_t>(value.size()), source_offset);
}

void DocumentBuilder::AddChunk(Node& node, size_t count) {
  uint32_t begin = static_cast<uint32_t>(storage_.children.size());
  uint32_t chunk = static_cast<uint32_t>(chunks_.size());
  if (node.payload & kChunkedBit) {
    Chunked& chunked = chunked_[node.payload & ~kChunkedBit];
    chunks_[chunked.last_chunk].next = chunk;
    chunked.last_chunk = chunk;
  } else {
    // The container's children so far become its first chunk, where they are.
    chunks_.push_back(Chunk{static_cast<uint32_t>(node.payload), node.count, chunk + 1});
    chunked_.push_back(
        Chunked{static_cast<ValueId>(&node - storage_.nodes.data()), chunk, chunk + 1});
    node.payload = kChunkedBit | (chunked_.size() - 1);
    ++chunk;
  }
  chunks_.push_back(Chunk{begin, static_cast<uint32_t>(count), kNoChunk});
}

Document DocumentBuilder::Finish(ValueId root) {
  // Containers with one chunk already own a contiguous range of the children; the rest are copied
  // to its end, which at most doubles it.
  size_t copied = 0;
  for (const Chunked& chunked : chunked_) copied += storage_.nodes[chunked.container].count;
  // Reserved once, so that the copies below never move their source.
  storage_.children.reserve(storage_.children.size() + copied);
  for (const Chunked& chunked : chunked_) {
    Node& node = storage_.nodes[chunked.container];
    uint64_t begin = storage_.children.size();
    for (uint32_t c = chunked.first_chunk; c != kNoChunk; c = chunks_[c].next) {
      storage_.children.append(storage_.children.data() + chunks_[c].begin, chunks_[c].count);
    }
    node.payload = begin;
  }
  Document document;
  document.input_ = std::move(input_);
  document.storage_ = std::move(storage_);
  document.arena_ = std::move(arena_);
  document.root_ = root;
  input_ = nullptr;
  chunks_.clear();
  chunked_.clear();
  arena_.clear();
  return document;
}

}  // namespace fr
