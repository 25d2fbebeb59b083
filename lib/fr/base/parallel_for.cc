#include "fr/base/parallel_for.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace fr {

void ParallelFor(size_t count, int jobs, const std::function<void(size_t)>& work,
                 const std::atomic<bool>* cancel, size_t min_items_per_thread) {
  size_t threads = jobs > 0 ? static_cast<size_t>(jobs)
                            : std::max<size_t>(1, std::thread::hardware_concurrency());
  threads =
      std::min(threads, std::max<size_t>(count / std::max<size_t>(min_items_per_thread, 1), 1));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return;
      work(i);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();
}

}  // namespace fr
