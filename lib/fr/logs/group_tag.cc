#include "fr/logs/group_tag.h"

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {
namespace {

bool ParsePgForm(std::string_view text, GroupTag* tag) {
  size_t at = text.find("[PG ");
  if (at == std::string_view::npos) return false;
  std::string_view t = text.substr(at + 4);
  size_t close = t.find(']');
  if (close == std::string_view::npos) return false;
  t = t.substr(0, close);
  std::string_view id = WordAfter(t, "ID ", " ");
  std::string_view name = WordAfter(t, "GUID ", " ");
  if (name.empty()) {
    size_t end = t.find_first_of(" (");
    name = t.substr(0, end);
    if (id.empty()) id = name;
  }
  size_t paren = name.find('(');
  if (paren != std::string_view::npos) name = name.substr(0, paren);
  tag->name = name;
  tag->is_default = id == "0" || Contains(t, "default_pg");
  tag->rank = IntAfter(t, "Rank ");
  return !name.empty();
}

// "[Rank 3]": the digits and the closing bracket right after them.
bool ParseRankForm(std::string_view text, GroupTag* tag) {
  for (size_t at = text.find("[Rank "); at != std::string_view::npos;
       at = text.find("[Rank ", at + 1)) {
    std::string_view rest = text.substr(at + 6);
    int64_t rank;
    if (ConsumeInt(&rest, &rank) && rank >= 0 && StartsWith(rest, "]")) {
      *tag = GroupTag{.name = {}, .is_default = false, .rank = rank};
      return true;
    }
  }
  return false;
}

}  // namespace

bool ParseGroupTag(std::string_view text, GroupTag* tag) {
  return ParsePgForm(text, tag) || ParseRankForm(text, tag);
}

}  // namespace fr::logs_internal
