#include "fr/model/prefaulted_allocator.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

// Both paths (operator new below the threshold, a populated mapping above it) hold what was
// written, survive growth by reallocation, and free without complaint (ASan checks the small path).
TEST(PrefaultedAllocatorTest, SmallAndMappedArraysHoldTheirValuesThroughGrowth) {
  for (size_t count : {size_t{10}, PrefaultedAllocator<int64_t>::kMappedBytes / 8 * 3}) {
    std::vector<int64_t, PrefaultedAllocator<int64_t>> values;
    for (size_t i = 0; i < count; ++i) values.push_back(static_cast<int64_t>(i * 7));
    ASSERT_EQ(values.size(), count);
    for (size_t i = 0; i < count; i += 97) EXPECT_EQ(values[i], static_cast<int64_t>(i * 7));
    EXPECT_EQ(values.back(), static_cast<int64_t>((count - 1) * 7));
    std::vector<int64_t, PrefaultedAllocator<int64_t>> copy = values;
    EXPECT_EQ(copy, values);
  }
}

TEST(PrefaultedAllocatorTest, MappedArraysArePageAligned) {
  PrefaultedAllocator<int64_t> allocator;
  size_t count = PrefaultedAllocator<int64_t>::kMappedBytes / 8 + 1;
  int64_t* values = allocator.allocate(count);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values) % 4096, 0u);
  values[count - 1] = 42;
  EXPECT_EQ(values[count - 1], 42);
  allocator.deallocate(values, count);
}

}  // namespace
}  // namespace fr
