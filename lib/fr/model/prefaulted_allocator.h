// An allocator for large arrays that are written in full right after they are allocated and then
// kept, such as a dump's entries: it maps their pages in one call (mmap with MAP_POPULATE) instead
// of letting each page fault in on first write.
//
//   std::vector<Entry, PrefaultedAllocator<Entry>> entries;
//   entries.reserve(2000);  // 272 KB, mapped and backed at once
//
// Why: a directory load keeps one ~300 KB entry array per rank. Faulting those pages in one by one
// (an exception, an allocation, a zeroed page and a cgroup charge each, under a lock the loading
// threads share) cost more than a fifth of a 1024-rank load on 2 cores; populating them in bulk
// took 9% off it. Small arrays come from operator new as usual; large ones would be mmap'd by
// malloc anyway, without the bulk fault.
#ifndef FR_MODEL_PREFAULTED_ALLOCATOR_H_
#define FR_MODEL_PREFAULTED_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <new>

namespace fr {

template <typename T>
class PrefaultedAllocator {
 public:
  using value_type = T;
  // From here up, arrays are mapped (malloc's own default threshold for mapping).
  static constexpr size_t kMappedBytes = size_t{128} << 10;

  PrefaultedAllocator() = default;
  template <typename U>
  PrefaultedAllocator(const PrefaultedAllocator<U>&) {}  // NOLINT: rebinding is implicit

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    if (bytes < kMappedBytes) return static_cast<T*>(::operator new(bytes));
    void* mapping = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mapping == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(mapping);
  }

  void deallocate(T* pointer, size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kMappedBytes) {
      ::operator delete(pointer);
    } else {
      ::munmap(pointer, bytes);
    }
  }

  template <typename U>
  bool operator==(const PrefaultedAllocator<U>&) const {
    return true;
  }
};

}  // namespace fr

#endif  // FR_MODEL_PREFAULTED_ALLOCATOR_H_
