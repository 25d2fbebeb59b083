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

double Document::float_value(ValueId id) const { return std::bit_cast<double>(nodes_[id].payload); }

std::string_view Document::string_value(ValueId id) const {
  const Node& node = nodes_[id];
  if (node.payload & kArenaBit) {
    return std::string_view(arena_).substr(node.payload & ~kArenaBit, node.count);
  }
  return input().substr(node.payload, node.count);
}

ValueId Document::Find(ValueId dict, std::string_view key) const {
  if (dict == kNoValue || nodes_[dict].kind != ValueKind::kDict) return kNoValue;
  std::span<const ValueId> pairs = items(dict);
  ValueId found = kNoValue;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    if (nodes_[pairs[i]].kind == ValueKind::kString && string_value(pairs[i]) == key) {
      found = pairs[i + 1];
    }
  }
  return found;
}

void DocumentBuilder::Reset(std::shared_ptr<const Buffer> input) {
  input_ = std::move(input);
  nodes_.clear();
  chunks_.clear();
  pending_.clear();
  arena_.clear();
}

void DocumentBuilder::Reserve(size_t values, size_t children) {
  nodes_.reserve(values);
  pending_.reserve(children);
}

ValueId DocumentBuilder::AddNode(ValueKind kind, uint64_t payload, uint32_t count,
                                 uint32_t source_offset) {
  nodes_.push_back(Node{payload, count, source_offset, kind});
  return static_cast<ValueId>(nodes_.size() - 1);
}

ValueId DocumentBuilder::AddNone(uint32_t source_offset) {
  return AddNode(ValueKind::kNone, 0, 0, source_offset);
}

ValueId DocumentBuilder::AddBool(bool value, uint32_t source_offset) {
  return AddNode(ValueKind::kBool, value ? 1 : 0, 0, source_offset);
}

ValueId DocumentBuilder::AddInt(int64_t value, uint32_t source_offset) {
  return AddNode(ValueKind::kInt, static_cast<uint64_t>(value), 0, source_offset);
}

ValueId DocumentBuilder::AddFloat(double value, uint32_t source_offset) {
  return AddNode(ValueKind::kFloat, std::bit_cast<uint64_t>(value), 0, source_offset);
}

ValueId DocumentBuilder::AddInputString(uint32_t offset, uint32_t length, uint32_t source_offset) {
  return AddNode(ValueKind::kString, offset, length, source_offset);
}

ValueId DocumentBuilder::AddOwnedString(std::string_view value, uint32_t source_offset) {
  uint64_t offset = arena_.size();
  arena_.append(value);
  return AddNode(ValueKind::kString, offset | Document::kArenaBit,
                 static_cast<uint32_t>(value.size()), source_offset);
}

ValueId DocumentBuilder::AddContainer(ValueKind kind, uint32_t source_offset) {
  uint64_t no_chunks = (uint64_t{kNoChunk} << 32) | kNoChunk;
  return AddNode(kind, no_chunks, 0, source_offset);
}

void DocumentBuilder::Append(ValueId container, std::span<const ValueId> children) {
  if (children.empty()) return;
  Node& node = nodes_[container];
  uint32_t first = static_cast<uint32_t>(node.payload);
  uint32_t last = static_cast<uint32_t>(node.payload >> 32);
  // Consecutive batches for the same container (the common case) extend its last chunk.
  if (last != kNoChunk && chunks_[last].begin + chunks_[last].count == pending_.size()) {
    pending_.insert(pending_.end(), children.begin(), children.end());
    chunks_[last].count += static_cast<uint32_t>(children.size());
  } else {
    uint32_t chunk = static_cast<uint32_t>(chunks_.size());
    chunks_.push_back(Chunk{static_cast<uint32_t>(pending_.size()),
                            static_cast<uint32_t>(children.size()), kNoChunk});
    pending_.insert(pending_.end(), children.begin(), children.end());
    if (last == kNoChunk) {
      first = chunk;
    } else {
      chunks_[last].next = chunk;
    }
    last = chunk;
  }
  node.count += static_cast<uint32_t>(children.size());
  node.payload = (uint64_t{last} << 32) | first;
}

Document DocumentBuilder::Finish(ValueId root) {
  // Containers with one chunk already own a contiguous range of pending_; the rest are copied to
  // its end, which at most doubles it.
  for (Node& node : nodes_) {
    if (node.kind != ValueKind::kList && node.kind != ValueKind::kTuple &&
        node.kind != ValueKind::kDict) {
      continue;
    }
    uint32_t first = static_cast<uint32_t>(node.payload);
    if (first == kNoChunk) {
      node.payload = 0;
      continue;
    }
    if (chunks_[first].next == kNoChunk) {
      node.payload = chunks_[first].begin;
      continue;
    }
    uint64_t begin = pending_.size();
    for (uint32_t c = first; c != kNoChunk; c = chunks_[c].next) {
      // Copy by index: insert may reallocate pending_.
      for (uint32_t i = 0; i < chunks_[c].count; ++i) {
        pending_.push_back(pending_[chunks_[c].begin + i]);
      }
    }
    node.payload = begin;
  }
  Document document;
  document.input_ = std::move(input_);
  document.nodes_ = std::move(nodes_);
  document.children_ = std::move(pending_);
  document.arena_ = std::move(arena_);
  document.root_ = root;
  Reset(nullptr);
  return document;
}

}  // namespace fr
