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
  auto it = index_.find(text);
  return it == index_.end() ? kNoString : it->second;
}

}  // namespace fr
