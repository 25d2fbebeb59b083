#include "fr/model/string_table.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace fr {
namespace {
// Blocks start small (a dump has a few hundred distinct strings; thousands of dumps are held at
// once) and double up to the largest size.
constexpr size_t kFirstBlockSize = 2 * 1024;
constexpr size_t kLargestBlockSize = 64 * 1024;
}  // namespace

StringTable::StringTable() { Intern(""); }

StringId StringTable::Intern(std::string_view text) {
  if (!offsets_.empty()) Reopen();
  if (index_.size() != views_.size()) RebuildIndex();
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  // Strings are appended to fixed-capacity blocks so earlier views stay valid.
  if (blocks_.empty() || last_block_capacity_ - last_block_used_ < text.size()) {
    size_t size = blocks_.empty()
                      ? kFirstBlockSize
                      : std::clamp(2 * last_block_capacity_, kFirstBlockSize, kLargestBlockSize);
    last_block_capacity_ = std::max(size, text.size());
    last_block_used_ = 0;
    block_bytes_ += last_block_capacity_;
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(last_block_capacity_));
  }
  char* stored_at = blocks_.back().get() + last_block_used_;
  if (!text.empty()) std::memcpy(stored_at, text.data(), text.size());
  last_block_used_ += text.size();
  std::string_view stored(stored_at, text.size());
  StringId id = static_cast<StringId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

StringId StringTable::Find(std::string_view text) const {
  if (index_.size() != size()) RebuildIndex();
  auto it = index_.find(text);
  return it == index_.end() ? kNoString : it->second;
}

void StringTable::RebuildIndex() const {
  index_.clear();
  index_.reserve(size());
  for (size_t id = 0; id < size(); ++id) {
    index_.emplace(view(static_cast<StringId>(id)), static_cast<StringId>(id));
  }
}

void StringTable::Compact() {
  if (!offsets_.empty()) return;
  size_t total = 0;
  for (std::string_view text : views_) total += text.size();
  // Offsets are 4 bytes: a table of more text (no real dump has one) stays as it is.
  if (total > std::numeric_limits<uint32_t>::max()) return;
  auto text = std::make_unique_for_overwrite<char[]>(std::max<size_t>(total, 1));
  std::vector<uint32_t> offsets;
  offsets.reserve(views_.size() + 1);
  size_t offset = 0;
  for (std::string_view view : views_) {
    offsets.push_back(static_cast<uint32_t>(offset));
    if (!view.empty()) std::memcpy(text.get() + offset, view.data(), view.size());
    offset += view.size();
  }
  offsets.push_back(static_cast<uint32_t>(offset));
  text_ = std::move(text);
  offsets_ = std::move(offsets);
  std::vector<std::string_view>().swap(views_);
  std::vector<std::unique_ptr<char[]>>().swap(blocks_);
  last_block_used_ = last_block_capacity_ = block_bytes_ = 0;
  index_ = {};
}

void StringTable::Reopen() {
  views_.reserve(offsets_.size() - 1);
  for (size_t id = 0; id + 1 < offsets_.size(); ++id)
    views_.push_back(view(static_cast<StringId>(id)));
  // The compacted text becomes a full block: new strings go to a fresh one.
  last_block_capacity_ = last_block_used_ = block_bytes_ = offsets_.back();
  blocks_.push_back(std::move(text_));
  offsets_.clear();
  index_.clear();
}

size_t StringTable::MemoryBytes() const {
  size_t bytes = views_.capacity() * sizeof(std::string_view) +
                 offsets_.capacity() * sizeof(uint32_t) +
                 index_.capacity() * (sizeof(std::pair<std::string_view, StringId>) + 1);
  if (!offsets_.empty()) bytes += offsets_.back();
  return bytes + block_bytes_;
}

}  // namespace fr
