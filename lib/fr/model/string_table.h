// Interned strings: each distinct string of a dump stored once and named by a small id, so that
// entries are compact and comparing ops, dtypes or frame names is an integer compare.
//
//   StringTable strings;
//   StringId op = strings.Intern("all_reduce");
//   std::string_view text = strings.view(op);
#ifndef FR_MODEL_STRING_TABLE_H_
#define FR_MODEL_STRING_TABLE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace fr {

using StringId = uint32_t;
inline constexpr StringId kNoString = std::numeric_limits<StringId>::max();

class StringTable {
 public:
  StringTable();
  // Moves keep every view valid (the blocks do not move); copies would not, so there are none.
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // The id of `text`, adding it on first sight. Id 0 is always the empty string.
  StringId Intern(std::string_view text);
  // The id of `text` if it is present, else kNoString.
  StringId Find(std::string_view text) const;

  std::string_view view(StringId id) const {
    if (offsets_.empty()) return views_[id];
    return std::string_view(text_.get() + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  size_t size() const { return offsets_.empty() ? views_.size() : offsets_.size() - 1; }

  // For a table that is done growing (a dump once read, of which a job holds thousands): moves
  // the strings into one block of their exact size, found by 4-byte offsets instead of views,
  // and drops the lookup index. Ids stay; views taken before are invalid. Intern and Find still
  // work after it, rebuilding the index on first use.
  void Compact();
  // Bytes held, for memory accounting.
  size_t MemoryBytes() const;

 private:
  // Growing: strings are appended to blocks that never move (views_ and index_ point into
  // them); the last one has room left.
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t last_block_used_ = 0;
  size_t last_block_capacity_ = 0;
  size_t block_bytes_ = 0;  // all blocks' capacity
  std::vector<std::string_view> views_;
  // Compacted: string i is text_[offsets_[i], offsets_[i + 1]); views_ and blocks_ are empty.
  std::unique_ptr<char[]> text_;
  std::vector<uint32_t> offsets_;
  // Empty after Compact() until the next Intern or Find.
  mutable absl::flat_hash_map<std::string_view, StringId> index_;
  void RebuildIndex() const;
  // Back from compacted to growing, keeping ids and text where they are.
  void Reopen();
};

}  // namespace fr

#endif  // FR_MODEL_STRING_TABLE_H_
