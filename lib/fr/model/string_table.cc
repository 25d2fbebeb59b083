#include "fr/model/string_table.h"

namespace fr {
namespace {
// Blocks start small (a dump has a few hundred distinct strings; thousands of dumps are held at
// once) and double up to the largest size.
constexpr size_t kFirstBlockSize = 2 * 1024;
constexpr size_t kLargestBlockSize = 64 * 1024;
}  // namespace

StringTable::StringTable() { Intern(""); }

StringId StringTable::Intern(std::string_view text) {
  if (index_.size() != views_.size()) RebuildIndex();
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  // Strings are appended to fixed-capacity blocks so earlier views stay valid.
  if (blocks_.empty() || blocks_.back().capacity() - blocks_.back().size() < text.size()) {
    size_t size = blocks_.empty() ? kFirstBlockSize
                                  : std::min(kLargestBlockSize, 2 * blocks_.back().capacity());
    blocks_.emplace_back();
    blocks_.back().reserve(std::max(size, text.size()));
  }
  std::string& block = blocks_.back();
  size_t offset = block.size();
  block.append(text);
  std::string_view stored(block.data() + offset, text.size());
  StringId id = static_cast<StringId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

StringId StringTable::Find(std::string_view text) const {
  if (index_.size() != views_.size()) RebuildIndex();
  auto it = index_.find(text);
  return it == index_.end() ? kNoString : it->second;
}

void StringTable::RebuildIndex() const {
  index_.clear();
  index_.reserve(views_.size());
  for (size_t id = 0; id < views_.size(); ++id) {
    index_.emplace(views_[id], static_cast<StringId>(id));
  }
}

void StringTable::Compact() {
  size_t total = 0;
  for (std::string_view text : views_) total += text.size();
  std::string block;
  block.reserve(total);
  for (std::string_view text : views_) block.append(text);
  std::deque<std::string> blocks;
  blocks.push_back(std::move(block));
  size_t offset = 0;
  for (std::string_view& text : views_) {
    size_t size = text.size();
    text = std::string_view(blocks.back().data() + offset, size);
    offset += size;
  }
  blocks_ = std::move(blocks);
  views_.shrink_to_fit();
  index_ = {};
}

size_t StringTable::MemoryBytes() const {
  size_t bytes = views_.capacity() * sizeof(std::string_view) +
                 index_.capacity() * (sizeof(std::pair<std::string_view, StringId>) + 1);
  for (const std::string& block : blocks_) bytes += block.capacity();
  return bytes;
}

}  // namespace fr
