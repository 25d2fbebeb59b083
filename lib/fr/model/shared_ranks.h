// A process group's global ranks, immutable and shared between the dumps that list them.
//
//   SharedRanks ranks(std::vector<int64_t>{0, 1, 2, 3});
//   for (int64_t rank : ranks) { ... }
//   SharedRanks same = pool.Intern(other_dumps_ranks);  // one copy for every equal list
//
// Why shared: PyTorch writes every group's whole rank list into the dump of every member, so a
// job of N ranks holds N copies of the default group's N ranks. That is quadratic: 800 KB per dump
// and 80 GB in all at 100k ranks, where everything else a dump keeps is about 30 KB. Lists never
// change once built, so equal lists of different dumps can be one list (RankListPool), and
// comparing two groups' ranks is a pointer compare when they share it.
#ifndef FR_MODEL_SHARED_RANKS_H_
#define FR_MODEL_SHARED_RANKS_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace fr {

class SharedRanks {
 public:
  SharedRanks() = default;
  SharedRanks(std::vector<int64_t> ranks)  // NOLINT: a list of ranks is a SharedRanks
      : ranks_(ranks.empty() ? nullptr
                             : std::make_shared<const std::vector<int64_t>>(std::move(ranks))) {}
  SharedRanks(std::initializer_list<int64_t> ranks) : SharedRanks(std::vector<int64_t>(ranks)) {}

  std::span<const int64_t> view() const {
    return ranks_ == nullptr ? std::span<const int64_t>() : std::span<const int64_t>(*ranks_);
  }
  const int64_t* begin() const { return view().data(); }
  const int64_t* end() const { return view().data() + size(); }
  size_t size() const { return ranks_ == nullptr ? 0 : ranks_->size(); }
  bool empty() const { return size() == 0; }
  int64_t operator[](size_t i) const { return (*ranks_)[i]; }
  int64_t front() const { return ranks_->front(); }
  int64_t back() const { return ranks_->back(); }
  std::vector<int64_t> ToVector() const { return {begin(), end()}; }

  // Equal contents (a pointer compare when both share one list).
  bool operator==(const SharedRanks& other) const;
  bool operator==(const std::vector<int64_t>& other) const;
  bool SharesStorageWith(const SharedRanks& other) const {
    return ranks_ != nullptr && ranks_ == other.ranks_;
  }
  // The list's storage: equal for lists that share it, nullptr when empty.
  const void* storage() const { return ranks_.get(); }

  // Hashed by a sample (size, first, middle, last): hashing whole world-size lists once per dump
  // would cost as much as comparing them, which a hit does anyway (a pointer compare when shared).
  template <typename H>
  friend H AbslHashValue(H state, const SharedRanks& list) {
    size_t n = list.size();
    if (n == 0) return H::combine(std::move(state), n);
    return H::combine(std::move(state), n, list[0], list[n / 2], list[n - 1]);
  }

 private:
  std::shared_ptr<const std::vector<int64_t>> ranks_;
};

// Makes equal rank lists one list. Safe to call from several threads: loading threads intern
// each dump's groups as the dump arrives, so at no point does the job hold a copy per rank.
class RankListPool {
 public:
  // `ranks`, or the pooled list equal to it (which `ranks` then shares).
  void Intern(SharedRanks* ranks);
  size_t distinct_lists() const;

 private:
  mutable std::mutex mutex_;
  absl::flat_hash_set<SharedRanks> lists_;
};

}  // namespace fr

#endif  // FR_MODEL_SHARED_RANKS_H_
