// Runs independent work items on a few threads, for the stages that walk every rank or every
// group of a large job: loading files, indexing each dump's entries, matching each group.
//
//   ParallelFor(dumps.size(), /*jobs=*/0, [&](size_t d) { IndexDump(d); });
//
// Items are claimed one at a time, so a few large ones do not leave threads idle. Work that
// writes only to its own item's slots gives the same result on any number of threads.
#ifndef FR_BASE_PARALLEL_FOR_H_
#define FR_BASE_PARALLEL_FOR_H_

#include <atomic>
#include <cstddef>
#include <functional>

namespace fr {

// Runs `work(i)` for every i in [0, count) on up to `jobs` threads (0: one per core), the
// calling thread included. Stops claiming items once `cancel` (if given) is set. Fewer than
// `min_items_per_thread` items per thread run on fewer threads: starting one costs tens of
// microseconds.
void ParallelFor(size_t count, int jobs, const std::function<void(size_t)>& work,
                 const std::atomic<bool>* cancel = nullptr, size_t min_items_per_thread = 1);

}  // namespace fr

#endif  // FR_BASE_PARALLEL_FOR_H_
