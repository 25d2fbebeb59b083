#include "fr/base/rank_set.h"

#include <algorithm>

#include "fmt/format.h"

namespace fr {
namespace {

std::vector<int64_t> SortedUnique(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

}  // namespace

std::string FormatRankSet(std::vector<int64_t> ranks) {
  ranks = SortedUnique(std::move(ranks));
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j > i) {
      out += fmt::format("{}-{}", ranks[i], ranks[j]);
      i = j + 1;
      continue;
    }
    // A run of one stride, as a mesh's DP or PP groups are: "0-504 step 8". Three members at
    // least, and not the start of a consecutive run (0,8,9,10 is "0,8-10").
    if (i + 2 < ranks.size()) {
      const int64_t step = ranks[i + 1] - ranks[i];
      size_t end = i + 1;
      while (end + 1 < ranks.size() && ranks[end + 1] - ranks[end] == step) ++end;
      if (end + 1 < ranks.size() && ranks[end + 1] == ranks[end] + 1) --end;
      if (end >= i + 2) {
        out += fmt::format("{}-{} step {}", ranks[i], ranks[end], step);
        i = end + 1;
        continue;
      }
    }
    out += fmt::format("{}", ranks[i]);
    i = j + 1;
  }
  return out;
}

std::string FormatRankSetWithin(std::vector<int64_t> ranks, std::vector<int64_t> universe) {
  ranks = SortedUnique(std::move(ranks));
  universe = SortedUnique(std::move(universe));
  std::string plain = FormatRankSet(ranks);
  if (ranks.size() < 2 || ranks.size() >= universe.size()) return plain;
  std::vector<int64_t> absent;
  std::set_difference(universe.begin(), universe.end(), ranks.begin(), ranks.end(),
                      std::back_inserter(absent));
  if (!std::includes(universe.begin(), universe.end(), ranks.begin(), ranks.end())) return plain;
  std::string relative =
      fmt::format("{} except {}", FormatRankSet(universe), FormatRankSet(absent));
  return relative.size() < plain.size() ? relative : plain;
}

}  // namespace fr
