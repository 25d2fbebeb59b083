// Interned strings: each distinct string of a dump stored once and named by a small id, so that
// entries are compact and comparing ops, dtypes or frame names is an integer compare.
//
//   StringTable strings;
//   StringId op = strings.Intern("all_reduce");
//   std::string_view text = strings.view(op);
#ifndef FR_MODEL_STRING_TABLE_H_
#define FR_MODEL_STRING_TABLE_H_

#include <cstdint>
#include <deque>
#include <limits>
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

  std::string_view view(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }

  // For a table that is done growing (a dump once read, of which a job holds thousands): moves
  // the strings into one block of their exact size and drops the lookup index, about a fifth of
  // what a loaded dump keeps. Ids stay; views taken before are invalid. Intern and Find still
  // work after it, rebuilding the index on first use.
  void Compact();
  // Bytes held, for memory accounting.
  size_t MemoryBytes() const;

 private:
  // Stable storage: views_ and index_ point into these blocks, which never move.
  std::deque<std::string> blocks_;
  std::vector<std::string_view> views_;
  // Empty after Compact() until the next Intern or Find.
  mutable absl::flat_hash_map<std::string_view, StringId> index_;
  void RebuildIndex() const;
};

}  // namespace fr

#endif  // FR_MODEL_STRING_TABLE_H_
