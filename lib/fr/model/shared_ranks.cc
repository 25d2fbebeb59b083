#include "fr/model/shared_ranks.h"

#include <algorithm>

#include "absl/hash/hash.h"

namespace fr {

bool SharedRanks::operator==(const SharedRanks& other) const {
  if (ranks_ == other.ranks_) return true;
  return std::ranges::equal(view(), other.view());
}

bool SharedRanks::operator==(const std::vector<int64_t>& other) const {
  return std::ranges::equal(view(), other);
}

void RankListPool::Intern(SharedRanks* ranks) {
  // Small lists cost less than their pool entry; only long ones are copied per dump at scale.
  constexpr size_t kPooledFrom = 16;
  if (ranks->size() < kPooledFrom) return;
  // A sample (size, first, middle, last): hashing whole world-size lists once per dump would cost
  // as much as comparing them, which a hit does anyway.
  size_t n = ranks->size();
  size_t hash = absl::HashOf(n, (*ranks)[0], (*ranks)[n / 2], (*ranks)[n - 1]);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SharedRanks>& same_hash = lists_[hash];
  for (const SharedRanks& pooled : same_hash) {
    if (pooled.SharesStorageWith(*ranks)) return;
  }
  for (const SharedRanks& pooled : same_hash) {
    if (pooled == *ranks) {
      *ranks = pooled;
      return;
    }
  }
  same_hash.push_back(*ranks);
}

size_t RankListPool::distinct_lists() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t count = 0;
  for (const auto& [hash, lists] : lists_) count += lists.size();
  return count;
}

}  // namespace fr
