#include "fr/model/shared_ranks.h"

#include <algorithm>

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
  std::lock_guard<std::mutex> lock(mutex_);
  auto [pooled, inserted] = lists_.insert(*ranks);
  if (!inserted) *ranks = *pooled;
}

size_t RankListPool::distinct_lists() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lists_.size();
}

}  // namespace fr
